// Lesson 07: kernel fusion, on the dense forward pass Y = act(X W^T + b) (see README.md next to
// this file).
//
// Prints the bytes the unfused path (gemm, then bias_add, then the activation, each a pass over
// Y) moves beyond the fused one for the lesson's layer, then runs dense_forward (fused where the
// variant can) and dense_forward_unfused on every variant, each checked against the float64
// reference, with the median time of three calls (one in the simulator). Exits 1 if any variant is
// wrong.
//
//   lesson_07_kernel_fusion [SEED]
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

// A wide layer on a small input: the GEMM does little work per element of Y (2 * 64 flops), so
// the passes over Y are a large part of the unfused cost.
const DenseShape layer_shape{.batch = 1024, .in = 64, .out = 1024, .activation = Activation::relu};

double megabytes(double floats) { return floats * 4.0 / 1e6; }

// The least each path must move: every tensor a step touches, read or written once by that step.
void print_bytes(const DenseShape& s) {
    const double X = double(s.batch * s.in), W = double(s.out * s.in), b = double(s.out),
                 Y = double(s.batch * s.out);
    const double fused = X + W + b + Y, unfused = X + W + Y + (Y + b + Y) + (Y + Y);
    const std::string act = to_string(s.activation);
    std::printf(
        "Bytes moved at least, Dense %s (X %.2f MB, W %.2f MB, b %.3f MB, Y %.2f MB):\n"
        "  fused    %-20s read X, W, b   write Y   %7.2f MB\n"
        "  unfused  gemm                 read X, W      write Y\n"
        "           bias_add             read Y, b      write Y\n"
        "           %-20s read Y         write Y   %7.2f MB\n"
        "  fusion saves 4 passes over Y, 16 * batch * out bytes: %.2f MB (unfused moves %.1fx "
        "more)\n\n",
        s.str().c_str(), megabytes(X), megabytes(W), megabytes(b), megabytes(Y),
        ("gemm + bias + " + act).c_str(), megabytes(fused), act.c_str(), megabytes(unfused),
        megabytes(unfused - fused), unfused / fused);
}

// The median time of `calls` checked calls (the first after a warm-up, see lessons::run_check);
// a failing result is returned as it is.
template <typename Check>
check::CaseResult median_time(const Backend& b, int calls, Check check) {
    std::vector<check::CaseResult> runs{lessons::run_check(b, check)};
    while (int(runs.size()) < calls && runs.back().comparison.passed) runs.push_back(check());
    if (!runs.back().comparison.passed) return runs.back();
    std::sort(runs.begin(), runs.end(),
              [](const auto& x, const auto& y) { return x.seconds < y.seconds; });
    return runs[runs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        const DenseShape& s = layer_shape;
        std::puts("");
        print_bytes(s);

        const bool any_simulated = lessons::warn_if_simulated(
            "!!! They do not show what fusion saves on a GPU. GPU figures come from\n"
            "!!! `triptych report` on a GPU.\n\n");

        std::printf("%-14s %-28s %-8s %11s %14s  %s\n", "variant", "device", "path", "time",
                    "unfused/fused", "vs float64 reference");
        bool all_passed = true;
        for (const std::string& name : backend_names()) {
            const Backend& b = backend(name);
            // One call in the simulator, whose times say nothing about fusion on a GPU anyway.
            const int calls = b.device_kind() == DeviceKind::Simulator ? 1 : 3;
            double fused_seconds = 0;
            for (const check::DensePath path :
                 {check::DensePath::fused, check::DensePath::unfused}) {
                const bool fused = path == check::DensePath::fused;
                try {
                    const check::CaseResult r = median_time(
                        b, calls, [&] { return check::check_dense_forward(b, s, path, seed); });
                    std::string ratio;
                    if (fused)
                        fused_seconds = r.seconds;
                    else if (fused_seconds > 0 && r.seconds > 0)
                        ratio = lessons::measured_number("%.2f", r.seconds / fused_seconds);
                    std::printf("%-14s %-28s %-8s %11s %14s  %s\n", fused ? name.c_str() : "",
                                fused ? b.device().c_str() : "", fused ? "fused" : "unfused",
                                lessons::time_text(r.seconds, b.device_kind()).c_str(),
                                ratio.c_str(), lessons::verdict(r).c_str());
                    all_passed = all_passed && r.comparison.passed;
                } catch (const Unsupported& e) {  // an op the variant does not have yet
                    std::printf("%-14s %-28s %-8s %11s %14s  not implemented: %s\n", name.c_str(),
                                b.device().c_str(), fused ? "fused" : "unfused", "", "", e.what());
                }
            }
        }
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "time: the median of three calls (one in the simulator). gpu_naive has no fused\n"
            "kernel and cpu_naive does not fuse: both paths run the same three steps there.");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 07: %s\n", error.what());
        return 1;
    }
}
