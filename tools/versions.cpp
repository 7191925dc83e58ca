// `triptych versions`: every kernel of every op and variant, version by version (the ladders of
// common/kernels.hpp), with what each step changed and where it is written.
#include <cstdio>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/kernels.hpp"
#include "common/registry.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"

namespace triptych::tools {
namespace {

void print_help() {
    std::puts(
        "usage: triptych versions [--op NAME] [--backend VARIANT]\n"
        "\n"
        "Lists, for every op and variant, each version of its kernel: its number, a short name,\n"
        "the file it is written in and what it changed from the version before. Versions are\n"
        "numbered along a ladder: the GPU ladder runs through gpu_naive, then gpu_tiled (GEMM:\n"
        "1-2 in gpu_naive, 3 and up in gpu_tiled), the CPU ladder through cpu_naive, then\n"
        "cpu_eigen_omp. A variant runs its default version (marked *, its best); any version\n"
        "runs by name: triptych check --op gemm --backend gpu_tiled@5, and the same spelling in\n"
        "the benchmarks' rows, the report and the lessons.\n"
        "\n"
        "  --op NAME         only this op (gemm, relu_forward, conv2d_forward, ...), or the\n"
        "                    kernels an op of triptych check runs (conv2d: its forward and\n"
        "                    both backward kernels)\n"
        "  --backend NAME    only this variant, or one version of it (gpu_tiled@9)");
}

}  // namespace

// The kernel op `name`, or the kernels of the check op `name` (conv2d: conv2d_forward,
// conv2d_backward_data, conv2d_backward_weights), so that `triptych check --op X` and
// `triptych versions --op X` take the same names. InvalidArgument, listing the kernel ops, if
// neither.
std::vector<Op> ops_named(const std::string& name) {
    try {
        return {op_named(name)};
    } catch (const InvalidArgument&) {
        for (const check::OpDescription& described : check::ops())
            if (described.name == name && !described.kernels.empty()) return described.kernels;
        throw;
    }
}

int versions_main(const Args& args) {
    Options options("versions", args, {"--op", "--backend"}, {"--help"});
    if (options.has("--help")) {
        print_help();
        return 0;
    }
    std::vector<Op> ops(all_ops().begin(), all_ops().end());
    if (options.has("--op")) ops = ops_named(options.get("--op"));
    std::vector<std::string> variants = built_backend_names();
    int only_version = 0;  // with --backend gpu_tiled@5: only version 5's rows
    if (options.has("--backend")) {
        const std::string wanted = options.get("--backend");
        bool known = false;
        for (const std::string& v : variants) known = known || v == wanted;
        if (known) {
            variants = {wanted};
        } else {
            const Backend& b = backend(wanted);  // throws, naming the available backends
            variants = {b.variant()};
            only_version = b.pinned_version();
        }
    }

    std::printf("%-24s %-14s %-9s %-20s %-34s %s\n", "op", "variant", "version", "name", "file",
                "what changed");
    int rows = 0;
    for (Op op : ops) {
        for (const std::string& variant : variants) {
            for (const KernelVersion& v : kernel_versions(variant, op)) {
                if (only_version != 0 && v.number != only_version) continue;
                const std::string number =
                    std::to_string(v.number) + (v.is_default ? " *" : "") +
                    (v.additions == AdditionOrder::arrival ? " ~" : "") +
                    (v.inputs == InputPrecision::fp32 ? "" : " " + to_string(v.inputs));
                std::printf("%-24s %-14s %-9s %-20s %-34s %s\n", std::string(op_name(op)).c_str(),
                            variant.c_str(), number.c_str(), v.name.c_str(), v.file.c_str(),
                            v.change.c_str());
                ++rows;
            }
        }
    }
    if (rows == 0 && only_version != 0)  // refused, as check and profile refuse it
        throw InvalidArgument(variants.front() + " has no version " + std::to_string(only_version) +
                              " of " + (options.has("--op") ? options.get("--op") : "any op") +
                              " (triptych versions --backend " + variants.front() + " lists them)");
    if (rows == 0) std::puts("(no kernels: this op has none in the variants of this build)");
    std::puts(
        "\n* the variant's default, its best: what --backend <variant> runs. --backend "
        "<variant>@<N>\n  runs version N of the ops that have one (the others at their default; "
        "check and\n"
        "  profile of one op without a version N refuse it).\n"
        "~ adds with float atomics in the order threads arrive (for a sum, in its fast mode): the\n"
        "  last bits of its output may change from run to run.\n"
        "tf32, bf16: multiplies its inputs rounded to that precision, on tensor cores (products\n"
        "  added in float); the checks allow for the rounding.");
    return 0;
}

}  // namespace triptych::tools
