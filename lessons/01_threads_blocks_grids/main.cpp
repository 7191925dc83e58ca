// Lesson 01: threads, blocks and grids, on ReLU (see README.md next to this file).
//
// Prints the launch geometry gpu_naive uses for the lesson's tensor, then runs relu_forward and
// relu_backward on every variant of this build, each checked against the float64 reference,
// side by side. Exits 1 if any variant is wrong.
//
//   lesson_01_threads_blocks_grids [SEED]
#include <cstdio>
#include <exception>

#include "common/errors.hpp"
#include "common/math.hpp"
#include "common/registry.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

// 999 x 1001 = 999,999 floats: a multiple of neither the block size (256) nor 4 (one float4), so
// gpu_naive's bounds check and gpu_tiled's scalar tail both have work to do.
const Shape shape{999, 1001};

// The launch of gpu/naive/activations.cu: blocks of elementwise_threads = 256
// (gpu/naive/elementwise.hpp), one thread per element.
void print_naive_launch(std::int64_t n) {
    constexpr std::int64_t block = 256;
    const std::int64_t grid = ceil_div(n, block);
    std::printf(
        "gpu_naive launches one thread per element (gpu/naive/activations.cu):\n"
        "  block = %lld threads, grid = ceil(%lld / %lld) = %lld blocks\n"
        "  %lld x %lld = %lld threads; thread i = blockIdx.x * blockDim.x + threadIdx.x\n"
        "  handles element i, and the last %lld threads (i >= %lld) fail `if (i < n)`.\n\n",
        (long long)block, (long long)n, (long long)block, (long long)grid, (long long)grid,
        (long long)block, (long long)(grid * block), (long long)(grid * block - n), (long long)n);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        std::printf("ReLU on a %s tensor (%lld floats)\n\n", shape.str().c_str(),
                    (long long)shape.elements());
        print_naive_launch(shape.elements());

        std::printf("%-14s %-14s %-28s %11s  %s\n", "op", "variant", "device", "time",
                    "vs float64 reference");
        bool all_passed = true, any_simulated = false;
        for (const bool forward : {true, false}) {
            const char* op = forward ? "relu_forward" : "relu_backward";
            for (const std::string& name : backend_names()) {
                const Backend& b = backend(name);
                try {
                    const check::CaseResult r = lessons::run_check(b, [&] {
                        return forward
                                   ? check::check_activation_forward(b, Activation::relu, shape,
                                                                     check::Output::separate, seed)
                                   : check::check_activation_backward(
                                         b, Activation::relu, shape, check::Output::separate, seed);
                    });
                    std::printf("%-14s %-14s %-28s %11s  %s\n", op, name.c_str(), r.device.c_str(),
                                lessons::time_text(r.seconds, b.device_kind()).c_str(),
                                lessons::verdict(r).c_str());
                    all_passed = all_passed && r.comparison.passed;
                    any_simulated = any_simulated || b.device_kind() == DeviceKind::Simulator;
                } catch (const Unsupported& e) {  // gpu_vendor (cuBLAS) has no ReLU
                    std::printf("%-14s %-14s %-28s %11s  n/a: %s\n", op, name.c_str(),
                                b.device().c_str(), "", e.what());
                }
            }
        }
        if (any_simulated) lessons::simulator_footnote();
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 01: %s\n", error.what());
        return 1;
    }
}
