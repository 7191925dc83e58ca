// An out-of-bounds write in a kernel, for the AddressSanitizer build (-DTRIPTYCH_SANITIZE=ON):
// one thread writes one float past a device_allocate buffer. ASan must stop the program with a
// heap-buffer-overflow report naming the CUDA thread and block; CTest passes the run only if both
// appear.
//
//   oob_write no_barrier      the kernel writes at once
//   oob_write after_barrier   the kernel writes after a __syncthreads(), once every thread of the
//                             block has been suspended and resumed
#include <cstdio>
#include <string>

#include "tests/sim/kernels.hpp"

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "no_barrier";
    if (mode != "no_barrier" && mode != "after_barrier") {
        std::fprintf(stderr, "usage: oob_write [no_barrier|after_barrier]\n");
        return 2;
    }
    // 101 floats (404 bytes): an allocator that rounded the size up to 8 or more bytes would
    // hide the overflow from ASan.
    triptych::sim_tests::write_one_past_the_end(101, mode == "after_barrier");
    std::fprintf(stderr, "no AddressSanitizer report: the write one past the end went unnoticed\n");
    return 1;
}
