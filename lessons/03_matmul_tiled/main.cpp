// Lesson 03: tiled matrix multiplication (see README.md next to this file).
//
// Runs the three GEMM kernels of lessons 02 and 03 side by side, each checked against the float64
// reference: version 1 gemm_naive_kernel (gpu_naive), version 2 gemm_shared_tiles_kernel (shared
// memory tiles), version 3 gemm_tiled_kernel (gpu_tiled: shared tiles + 8x8 register blocks), and
// cuBLAS where the build has it. Exits 1 if any is wrong.
//
//   lesson_03_matmul_tiled [SEED]
#include <cstdio>
#include <exception>
#include <vector>

#include "common/registry.hpp"
#include "lessons/lesson.hpp"
#include "triptych_config.hpp"

#if !TRIPTYCH_GPU_OFF
#include "gpu/runtime/gpu_backend.hpp"
#include "gpu/tiled/ops.hpp"
#endif

using namespace triptych;

namespace {

#if !TRIPTYCH_GPU_OFF
// Version 2 is not a variant of its own, so it is wrapped here as a Backend (gpu_tiled's device
// memory, its launcher for gemm) for check::check_gemm to run and compare like any other.
class SharedTilesVersion final : public gpu::GpuBackend {
public:
    std::string name() const override { return "gemm_shared_tiles"; }

protected:
    void gemm_impl(const GemmShape& s, const float* A, const float* B, float* C) const override {
        gpu_tiled::gemm_shared_tiles(s, A, B, C);
    }
};
#endif

struct Version {
    const char* label;
    const Backend* backend;
};

// The versions this build can run, in lesson order; empty without a GPU or the simulator.
std::vector<Version> versions() {
    std::vector<Version> list;
#if !TRIPTYCH_GPU_OFF
    if (!gpu::available()) return list;
    static const SharedTilesVersion shared_tiles;
    list = {{"1 naive       gemm_naive_kernel", &backend("gpu_naive")},
            {"2 smem tiles  gemm_shared_tiles_kernel", &shared_tiles},
            {"3 2D blocking gemm_tiled_kernel", &backend("gpu_tiled")}};
    for (const std::string& name : backend_names())
        if (name == "gpu_vendor") list.push_back({"  cuBLAS      gpu_vendor", &backend(name)});
#endif
    return list;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::vector<Version> list = versions();
        if (list.empty()) {
            std::puts(
                "no GPU to run on: this build has neither a visible GPU nor the simulator\n"
                "(configure with -DTRIPTYCH_GPU=sim to run the kernels on the CPU)");
            return 0;
        }
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        const Backend& device = *list.front().backend;
        std::printf("device: %s\n", device.device().c_str());
        const bool simulated = device.device_kind() == DeviceKind::Simulator;
        if (simulated)
            std::puts(
                "\n!!! The kernels run on the CUDA simulator, i.e. on the CPU. The times below\n"
                "!!! are CPU SIMULATOR TIMES, NOT GPU TIMES: they show what simulating each\n"
                "!!! kernel costs, not what tiling gains on a GPU. Only the errors carry over.");

        // A square size large enough for the versions to differ on a GPU (smaller in the
        // simulator, which pays for every thread switch), and 257x129x511, a multiple of no tile
        // (32, 64, 128) and no float4 width, so every edge path of the tiled kernels runs.
        const std::int64_t n = simulated ? 256 : 512;
        const GemmShape shapes[] = {{.M = n, .N = n, .K = n}, {.M = 257, .N = 129, .K = 511}};
        std::printf("\n%-16s %-42s %11s %10s  %s\n", "M x N x K", "version  kernel", "time",
                    "GFLOP/s", "vs float64 reference");
        bool all_passed = true;
        for (const GemmShape& shape : shapes) {
            for (const Version& v : list) {
                const Backend& b = *v.backend;
                const check::CaseResult r =
                    lessons::run_check(b, [&] { return check::check_gemm(b, shape, seed); });
                std::printf("%-16s %-42s %11s %10s  %s\n", shape.str().c_str(), v.label,
                            lessons::time_text(r.seconds, b.device_kind()).c_str(),
                            lessons::rate_text(shape.flops(), r.seconds, b.device_kind()).c_str(),
                            lessons::verdict(r).c_str());
                all_passed = all_passed && r.comparison.passed;
            }
        }
        if (simulated) lessons::simulator_footnote();
        std::puts(all_passed ? "\nall versions match the reference"
                             : "\nFAILED: some version does not match the reference");
        return all_passed ? 0 : 1;
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 03: %s\n", error.what());
        return 1;
    }
}
