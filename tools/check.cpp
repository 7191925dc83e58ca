// `triptych check`: every op of every variant against the float64 reference, as a table.
// Exits 1 if any case fails, so scripts and CI can rely on it.
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/output_marks.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"
#include "triptych_config.hpp"

#if TRIPTYCH_GPU_SIM
#include "gpu/runtime/sim/recorder.hpp"
#endif

namespace triptych::tools {
namespace {

void print_help() {
    std::puts(
        "usage: triptych check [--op NAME] [--backend NAME [--every-version]] [--shape SIZES]\n"
        "                      [--seed S] [--racecheck]\n"
        "\n"
        "Runs each op on each variant with fresh random inputs, compares the result with the\n"
        "float64 cpu_naive reference and prints one row per case. Exit status 1 if any fails.\n"
        "\n"
        "  --op NAME       only this op");
    std::string ops;
    for (const check::OpDescription& op : check::ops())
        ops += "                    " + op.name + ": --shape " + op.shape_syntax + "\n";
    std::printf("%s", ops.c_str());
    std::puts(
        "  --backend NAME  only this variant (see `triptych info`), or one version of it:\n"
        "                  gpu_tiled@5 (see `triptych versions`); without --backend, every\n"
        "                  variant and each of its versions\n"
        "  --every-version with --backend VARIANT: each of its versions, not only the default\n"
        "  --shape SIZES   only this shape (needs --op), e.g. --op gemm --shape 67,45,91\n"
        "  --seed S        the inputs' seed; every run prints the one it used, so any case can\n"
        "                  be replayed exactly\n"
        "  --racecheck     run the GPU kernels under the simulator's race checker (as\n"
        "                  TRIPTYCH_SIM_RACECHECK=1 does): a race between threads, a read of\n"
        "                  shared memory nobody wrote, or an access past a buffer fails the case");
}

// The errors are the machine's (common/output_marks.hpp): their last digits depend on the
// instruction set the CPU code is compiled for, so a README quoting this table compares them only
// on a machine of the kind it was recorded on (tools/lesson_outputs.py).
void print_row(const check::CaseResult& r, const std::string& verdict) {
    std::printf("%-23s %-14s %-26s %-50s %s %s  %-24s %s\n", r.op.c_str(), r.variant.c_str(),
                r.device.c_str(), r.shape.c_str(),
                machine_number("%10.3g", r.comparison.max_abs_error).c_str(),
                machine_number("%10.3g", r.comparison.relative_error).c_str(), r.tolerance.c_str(),
                verdict.c_str());
}

// A case the variant does not run (Unsupported), and why.
void print_not_run(const std::string& op, const std::string& variant, const std::string& device,
                   const std::string& shape, const std::string& why) {
    std::printf("%-23s %-14s %-26s %-50s n/a: %s\n", op.c_str(), variant.c_str(), device.c_str(),
                shape.c_str(), why.c_str());
}

// The backends an op is checked on: every variant and each of its versions of the op's kernels
// (check::versions_to_check); with --backend, that one, unless it names a version the op lacks,
// or with every_version each version of that variant.
std::vector<std::string> backends_to_check(const check::OpDescription& op, const std::string& only,
                                           bool every_version) {
    if (every_version) return check::versions_to_check(op, only);
    if (only.empty()) {
        std::vector<std::string> names;
        for (const std::string& variant : backend_names())
            for (std::string& name : check::versions_to_check(op, variant))
                names.push_back(std::move(name));
        return names;
    }
    if (check::runs_version_of(op, backend(only))) return {only};
    return {};
}

}  // namespace

int check_main(const Args& args) {
    Options options("check", args, {"--op", "--backend", "--shape", "--seed"},
                    {"--help", "--racecheck", "--every-version"});
    if (options.has("--help")) {
        print_help();
        return 0;
    }
    if (options.has("--racecheck")) {
#if TRIPTYCH_GPU_SIM
        sim::RecordMode mode = sim::record_mode();
        mode.racecheck = true;
        sim::ensure_recorder(mode);  // in a plain program: runs its instrumented copy instead
#else
        throw InvalidArgument(
            "--racecheck needs a sim build (the simulator's race checker); on a "
            "GPU, run compute-sanitizer --tool racecheck on triptych check");
#endif
    }
    if (options.has("--shape") && !options.has("--op"))
        throw InvalidArgument("--shape needs --op (shapes differ between ops)");

    const std::string only_backend = options.get("--backend");
    if (!only_backend.empty()) backend(only_backend);  // throws for an unknown name or version
    const bool every_version = options.has("--every-version");
    if (every_version && (only_backend.empty() || backend(only_backend).pinned_version() != 0))
        throw InvalidArgument(
            "--every-version needs --backend VARIANT, a variant without a version (gpu_tiled, "
            "not gpu_tiled@5); without --backend every variant's versions are checked anyway");
    std::vector<const check::OpDescription*> ops;
    if (options.has("--op")) {
        ops.push_back(&check::op(options.get("--op")));
        if (!only_backend.empty()) check::require_version_of(*ops.front(), backend(only_backend));
    } else {
        for (const check::OpDescription& op : check::ops()) ops.push_back(&op);
    }
    const std::uint64_t seed =
        options.has("--seed") ? parse_seed("--seed", options.get("--seed")) : fresh_seed();

    // The seed and the table's header, printed with the first row: a --shape that the first case
    // refuses then prints its error alone.
    bool started = false;
    const auto start_table = [&] {
        if (started) return;
        started = true;
        std::printf("seed %llu (replay with --seed %llu)\n\n", (unsigned long long)seed,
                    (unsigned long long)seed);
        std::printf("%-23s %-14s %-26s %-50s %10s %10s  %-24s %s\n", "op", "variant", "device",
                    "shape", "max abs", "rel error", "tolerance", "result");
    };
    int passed = 0, failed = 0, unsupported = 0;
    for (const check::OpDescription* op : ops) {
        const std::vector<std::string> shapes =
            options.has("--shape") ? std::vector{options.get("--shape")} : op->default_shapes;
        for (const std::string& variant : backends_to_check(*op, only_backend, every_version)) {
            const Backend& b = backend(variant);
            for (const std::string& shape : shapes) {
                try {
                    for (const check::CaseResult& r : op->run(b, shape, seed)) {
                        start_table();
                        if (!r.not_run.empty()) {
                            print_not_run(r.op, r.variant, r.device, r.shape, r.not_run);
                            ++unsupported;
                            continue;
                        }
                        const bool ok = r.comparison.passed;
                        print_row(r, ok ? "PASS" : "FAIL: " + r.comparison.failure(machine_figure));
                        (ok ? passed : failed)++;
                    }
                } catch (const Unsupported& e) {
                    start_table();
                    print_not_run(op->name, variant, b.device(), shape, e.what());
                    ++unsupported;
                } catch (const InvalidArgument& e) {
                    // A bad --shape: one error line naming the op, not a table of failures.
                    const std::string what = e.what();
                    if (what.rfind(op->name + ":", 0) == 0) throw;
                    throw InvalidArgument(op->name + ": --shape '" + shape + "': " + what);
                } catch (const std::exception& e) {
                    // A shape too large for this machine's memory fails as a case, plainly.
                    std::string why = e.what();
                    if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr ||
                        dynamic_cast<const std::length_error*>(&e) != nullptr)
                        why =
                            "out of memory: this shape's inputs, outputs and float64 "
                            "reference do not fit (" +
                            why + ")";
                    start_table();
                    std::printf("%-23s %-14s %-26s %-50s FAIL: %s\n", op->name.c_str(),
                                variant.c_str(), b.device().c_str(), shape.c_str(), why.c_str());
                    ++failed;
                }
                std::fflush(stdout);
            }
        }
    }
    start_table();
    std::printf("\n%d passed, %d failed", passed, failed);
    if (unsupported > 0) std::printf(", %d not implemented by their variant", unsupported);
    std::printf(" (seed %llu)\n", (unsigned long long)seed);
    return failed == 0 ? 0 : 1;
}

}  // namespace triptych::tools
