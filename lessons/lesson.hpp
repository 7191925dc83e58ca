// What the lesson programs share: the seed of their random inputs, how one row is run (a warm-up,
// then the timed check), and how a row of their side-by-side tables shows a time and a verdict.
// The comparison itself is check/crosscheck.hpp's; the timer is common/timer.hpp's (crosscheck
// times each op with it).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/backend.hpp"
#include "common/errors.hpp"
#include "common/output_marks.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "triptych_config.hpp"
#if TRIPTYCH_GPU_SIM
#include "gpu/runtime/sim/sim.hpp"
#endif

namespace triptych::lessons {

// The inputs' seed: argv[1] if given, else a fresh one. Printed, so that any run can be replayed.
// InvalidArgument unless argv[1] is an integer from 0 to 2^64 - 1 (common/random.hpp) and the
// only argument; --help (or -h) prints the usage and exits.
inline std::uint64_t seed_from_args(int argc, char** argv) {
    if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
        std::printf(
            "usage: %s [SEED]\n\n"
            "Runs this lesson's ops on every variant built here, on random inputs drawn from\n"
            "SEED (0 to 2^64 - 1; a fresh one if omitted, printed first so that any run can be\n"
            "replayed), and prints what the lesson's README quotes. Exit status 1 if a result\n"
            "is wrong.\n",
            argv[0]);
        std::exit(0);
    }
#if TRIPTYCH_GPU_SIM
    // The simulator's settings (TRIPTYCH_SIM_*), refused here by name: a bad one would otherwise
    // fail every GPU row as if the kernels were wrong, or end the program from inside a launch.
    sim::check_environment();
#endif
    if (argc > 2)
        throw InvalidArgument("the only argument is the inputs' seed; got " +
                              std::to_string(argc - 1) + " arguments");
    const std::uint64_t seed =
        argc > 1 ? parse_seed("the argument, the inputs' seed,", argv[1]) : fresh_seed();
    std::printf("seed %llu (replay: %s %llu)\n", (unsigned long long)seed, argv[0],
                (unsigned long long)seed);
    return seed;
}

// Runs `check` (a call of check::check_gemm or the like on `b`) twice and returns the second
// result: the first call pays one-time costs that are not the op's (a GPU loading the kernel,
// OpenMP starting its threads). A failure of the first run is returned instead, never hidden.
// An error other than Unsupported (a rejected launch, a divergent __syncthreads()) becomes a
// failed result carrying its message, so the table goes on; Unsupported (the variant lacks the
// op) is the caller's to report.
template <typename Check>
check::CaseResult run_check(const Backend& b, Check check) {
    try {
        check::CaseResult first = check();
        if (!first.comparison.passed) return first;
        return check();
    } catch (const Unsupported&) {
        throw;
    } catch (const std::exception& error) {
        check::CaseResult failed;
        failed.variant = b.name();
        failed.device = b.device();
        failed.comparison.problem = error.what();
        return failed;
    }
}

// run_check for a check that returns several results from one call (conv2d_backward_weights: dw
// and db; max_pool2d_forward: y and argmax): every result of the timed call, or the one failed
// result run_check made of an error. Unsupported propagates.
template <typename Checks>
std::vector<check::CaseResult> run_checks(const Backend& b, Checks checks) {
    std::vector<check::CaseResult> results;
    const check::CaseResult first = run_check(b, [&] {
        results.clear();  // so that an error leaves none behind
        results = checks();
        for (const check::CaseResult& r : results)
            if (!r.comparison.passed) return r;  // keeps the first call's results if one failed
        return results.front();
    });
    if (results.empty()) return {first};
    return results;
}

// What varies from run to run (measured) or from machine to machine (machine_figure) is printed
// through common/output_marks.hpp, so that tools/lesson_outputs.py can tell it apart.
using ::triptych::machine_figure;
using ::triptych::marked_output;
using ::triptych::measured;
using ::triptych::measured_number;

// "812 us", "3.07 ms", "1.25 s"; a trailing '*' marks a simulator time (see simulator_footnote).
inline std::string time_text(double seconds, DeviceKind kind) {
    char text[32];
    if (seconds <= 0) return "-";  // the op did not finish
    if (seconds < 1e-3)
        std::snprintf(text, sizeof text, "%.0f us", seconds * 1e6);
    else if (seconds < 1.0)
        std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
    else
        std::snprintf(text, sizeof text, "%.2f s", seconds);
    return measured(text) + (kind == DeviceKind::Simulator ? " *" : "");
}

// "12.3 GFLOP/s" for `flops` operations in `seconds`; '*' marks a simulator rate, as above.
inline std::string rate_text(double flops, double seconds, DeviceKind kind) {
    if (seconds <= 0) return "-";
    return measured_number("%.2f", flops / seconds * 1e-9) +
           (kind == DeviceKind::Simulator ? " *" : "");
}

// Whether an output's last bits can change from one run to the next: an op whose threads add
// into the same element with atomics, in whatever order they arrive (a "fast" sum, gpu_naive's
// pooling backward), on a GPU and in the simulator alike.
enum class Rounding { fixed, run_dependent };

// The rounding of `b`'s outputs of `ops`: run_dependent when the kernel it runs for any of them
// adds in arrival order (AdditionOrder::arrival, declared where the kernel is registered).
inline Rounding rounding_of(const Backend& b, std::initializer_list<Op> ops) {
    for (Op op : ops) {
        const KernelVersion* version = b.version_of(op);
        if (version && version->additions == AdditionOrder::arrival) return Rounding::run_dependent;
    }
    return Rounding::fixed;
}

// How far an output is from the float64 reference: "max abs 4.76e-07, rel 7.99e-08", or what
// went wrong (Comparison::describe). Its figures are machine_figure()s, or measured() ones when
// the rounding is run_dependent.
inline std::string comparison_text(const Comparison& c, Rounding rounding = Rounding::fixed) {
    return c.describe(rounding == Rounding::fixed ? machine_figure : measured);
}

// "PASS" or "FAIL", then how far the output is from the float64 reference.
inline std::string verdict(const check::CaseResult& r, Rounding rounding = Rounding::fixed) {
    return std::string(r.comparison.passed ? "PASS  " : "FAIL  ") +
           comparison_text(r.comparison, rounding);
}

// Whether any registered variant runs on the CUDA simulator. If one does, prints the warning that
// its times are CPU times, followed by `more` (the lesson's own lines, each starting "!!! ").
inline bool warn_if_simulated(const char* more = "") {
    bool any_simulated = false;
    for (const std::string& name : backend_names())
        any_simulated = any_simulated || backend(name).device_kind() == DeviceKind::Simulator;
    if (any_simulated)
        std::printf(
            "\n!!! The GPU variants run on the CUDA simulator, i.e. on the CPU. Their\n"
            "!!! times below are CPU SIMULATOR TIMES, NOT GPU TIMES.\n%s",
            more);
    return any_simulated;
}

// Prints whether every variant matched the reference; returns the lesson's exit status (1 if one
// did not).
inline int final_verdict(bool all_passed) {
    std::puts(all_passed ? "\nall variants match the reference"
                         : "\nFAILED: some variant does not match the reference");
    return all_passed ? 0 : 1;
}

inline void simulator_footnote() {
    std::puts(
        "* simulator: the CPU running every CUDA thread as a fiber. This is NOT a GPU time and\n"
        "  says nothing about how fast the kernel is on a GPU.");
}

}  // namespace triptych::lessons
