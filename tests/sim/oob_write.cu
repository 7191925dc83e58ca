// Test kernel for AddressSanitizer in the simulator: one thread writes one float past the end of a
// device_allocate buffer. Run only by tests/sim/oob_write.cpp in a -DTRIPTYCH_SANITIZE=ON build.
#include "gpu/runtime/cuda.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

__global__ void write_past_end_kernel(float* out, int count) {
    if (int(threadIdx.x) == count) out[count] = 1.0f;  // out holds `count` floats
}

__global__ void write_past_end_after_barrier_kernel(float* out, int count) {
    __syncthreads();  // every thread has been suspended and resumed once
    if (int(threadIdx.x) == count) out[count] = 1.0f;
}

}  // namespace

void write_one_past_the_end(int count, bool after_barrier) {
    DeviceArray<float> out(count);
    if (after_barrier)
        gpu::launch(write_past_end_after_barrier_kernel, dim3(1), dim3(128), 0, out.get(), count);
    else
        gpu::launch(write_past_end_kernel, dim3(1), dim3(128), 0, out.get(), count);
}

}  // namespace triptych::sim_tests
