// Lesson 02: matrix multiplication, the direct way (see README.md next to this file).
//
// Runs C = A * B on every variant of this build, for a square size and an odd one that no tile
// or vector width divides, each checked against the float64 reference, side by side with its
// time and GFLOP/s. Exits 1 if any variant is wrong.
//
//   lesson_02_matmul_naive [SEED]
#include <cstdio>
#include <exception>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        // M x N x K: C is M x N, each element a dot product of length K.
        const GemmShape shapes[] = {{.M = 256, .N = 256, .K = 256}, {.M = 257, .N = 129, .K = 511}};

        std::printf("\n%-16s %-14s %-28s %11s %10s  %s\n", "M x N x K", "variant", "device", "time",
                    "GFLOP/s", "vs float64 reference");
        bool all_passed = true, any_simulated = false;
        for (const GemmShape& shape : shapes) {
            for (const std::string& name : backend_names()) {
                const Backend& b = backend(name);
                try {
                    const check::CaseResult r =
                        lessons::run_check(b, [&] { return check::check_gemm(b, shape, seed); });
                    std::printf(
                        "%-16s %-14s %-28s %11s %10s  %s\n", shape.str().c_str(), name.c_str(),
                        r.device.c_str(), lessons::time_text(r.seconds, b.device_kind()).c_str(),
                        lessons::rate_text(shape.flops(), r.seconds, b.device_kind()).c_str(),
                        lessons::verdict(r).c_str());
                    all_passed = all_passed && r.comparison.passed;
                    any_simulated = any_simulated || b.device_kind() == DeviceKind::Simulator;
                } catch (const Unsupported& e) {  // a variant without gemm: said, not failed
                    std::printf("%-16s %-14s %-28s %11s %10s  n/a: %s\n", shape.str().c_str(),
                                name.c_str(), b.device().c_str(), "", "", e.what());
                }
            }
        }
        if (any_simulated) lessons::simulator_footnote();
        std::puts("GFLOP/s = 2*M*N*K / time, of one call: bench/ has the real measurements.");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 02: %s\n", error.what());
        return 1;
    }
}
