// Lesson 03: tiled matrix multiplication (see README.md next to this file).
//
// Runs every version of the GEMM ladder of lessons 02 and 03 side by side (`triptych versions --op
// gemm` lists them), each checked against the float64 reference, and cuBLAS where the build has
// it. Exits 1 if any is wrong.
//
//   lesson_03_matmul_tiled [SEED]
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "common/registry.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

struct Version {
    std::string label;  // "gpu_tiled@5  2d_blocktile"
    const Backend* backend;
};

// Every GEMM version of the GPU panels, in ladder order (gpu_naive's, then gpu_tiled's), and
// cuBLAS where the build has it; empty without a GPU or the simulator.
std::vector<Version> versions() {
    std::vector<Version> list;
    for (const std::string& variant : backend_names()) {
        if (backend(variant).device_kind() == DeviceKind::Cpu) continue;
        for (const KernelVersion& v : kernel_versions(variant, Op::gemm)) {
            const std::string name = variant + "@" + std::to_string(v.number);
            list.push_back({name + std::string(16 - std::min<std::size_t>(15, name.size()), ' ') +
                                v.name + (v.is_default ? " (default)" : ""),
                            &backend(name)});
        }
    }
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
        std::printf("\n%-16s %-42s %11s %10s  %s\n", "M x N x K", "version         kernel", "time",
                    "GFLOP/s", "vs float64 reference");
        bool all_passed = true;
        for (const GemmShape& shape : shapes) {
            for (const Version& v : list) {
                const Backend& b = *v.backend;
                const check::CaseResult r =
                    lessons::run_check(b, [&] { return check::check_gemm(b, shape, seed); });
                std::printf("%-16s %-42s %11s %10s  %s\n", shape.str().c_str(), v.label.c_str(),
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
