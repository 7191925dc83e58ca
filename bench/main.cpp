// triptych_bench: every op on every variant, timed with Google Benchmark.
//
//   triptych_bench [--quick] [--include-simulator] [Google Benchmark flags]
//
// Usually run through `triptych bench` or `triptych report`, which add repetitions and JSON
// output; the report reads the JSON, including the "triptych" context written here (build, CPU
// threads, GPU or "no GPU"), so a table never lacks the machine it was measured on.
#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "bench/suites.hpp"
#include "check/description.hpp"
#include "common/kernels.hpp"
#include "common/machine.hpp"
#include "common/registry.hpp"
#include "triptych_config.hpp"

#if !TRIPTYCH_GPU_OFF
#include "gpu/runtime/device.hpp"
#endif

namespace triptych::bench {
namespace {

void print_help() {
    std::cout << "triptych_bench: every op of every description (check/description.hpp: GEMM\n"
                 "and its versions, activations, bias, softmax, losses, sum, the dense layer,\n"
                 "convolution, pooling, optimizers), training steps and copies, on every\n"
                 "triptych variant.\n"
                 "  --quick              small sizes only (seconds, for tests and CI)\n"
                 "  --include-simulator  also time simulator variants, as <variant>_on_simulator\n"
                 "                       (CPU timings of the simulator, never GPU timings)\n"
                 "Google Benchmark's own flags follow.\n\n";
    benchmark::PrintDefaultHelp();
}

// Takes triptych's own flags out of argv (Google Benchmark rejects flags it does not know).
Options take_options(int& argc, char** argv) {
    Options options;
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0)
            options.quick = true;
        else if (std::strcmp(argv[i], "--include-simulator") == 0)
            options.include_simulator = true;
        else
            argv[kept++] = argv[i];
    }
    argc = kept;
    return options;
}

// The console shows each row's median only, the figure the report uses; the JSON output keeps
// mean, stddev and cv as well. Single runs (no repetitions) are shown as they are.
class MedianConsoleReporter : public benchmark::ConsoleReporter {
public:
    MedianConsoleReporter()
        : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}
    void ReportRuns(const std::vector<Run>& runs) override {
        std::vector<Run> shown;
        for (const Run& run : runs)
            if (run.run_type != Run::RT_Aggregate || run.aggregate_name == "median")
                shown.push_back(run);
        if (!shown.empty()) ConsoleReporter::ReportRuns(shown);
    }
};

// Whether the user chose an output format other than the console table.
bool other_format_asked(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0 &&
            std::strcmp(argv[i], "--benchmark_format=console") != 0)
            return true;
    return false;
}

std::string kind_name(DeviceKind kind) {
    switch (kind) {
        case DeviceKind::Cpu:
            return "cpu";
        case DeviceKind::Simulator:
            return "simulator";
        case DeviceKind::Gpu:
            return "gpu";
    }
    return "unknown";
}

// "cpu_naive=cpu,cpu_eigen_omp=cpu,gpu_naive=simulator,...": the report files each variant's
// rows under CPU, GPU or simulator by this list, never by guessing from the name.
std::string variant_kinds() {
    std::string out;
    for (const std::string& name : backend_names())
        out += (out.empty() ? "" : ",") + name + "=" + kind_name(backend(name).device_kind());
    return out;
}

// The versions of every op that some variant has more than one of, as JSON:
//   {"gemm": {"gpu_naive": [[1, "uncoalesced", false, "fp32"], [2, "coalesced", true, "fp32"]],
//   ...}}
// (number, name, whether it is the default, the precision its multiplies see: KernelVersion's
// inputs). The report's ladder tables read it: the default's rows carry the plain variant name,
// the others "<variant>@<N>"; a tensor-core version is compared with cuBLAS at its precision.
std::string version_ladders() {
    std::string ops_json;
    for (Op op : all_ops()) {
        std::string variants_json;
        bool several = false;
        for (const std::string& name : backend_names()) {
            const std::vector<KernelVersion> versions = kernel_versions(name, op);
            if (versions.empty()) continue;
            several = several || versions.size() > 1;
            std::string list;
            for (const KernelVersion& v : versions)
                list += (list.empty() ? "" : ", ") + std::string("[") + std::to_string(v.number) +
                        ", \"" + v.name + "\", " + (v.is_default ? "true" : "false") + ", \"" +
                        to_string(v.inputs) + "\"]";
            variants_json +=
                (variants_json.empty() ? "" : ", ") + ("\"" + name + "\": [") + list + "]";
        }
        if (several)
            ops_json += (ops_json.empty() ? "" : ", ") +
                        ("\"" + std::string(op_name(op)) + "\": {") + variants_json + "}";
    }
    return "{" + ops_json + "}";
}

// The GPU this build runs kernels on, or why there is none.
void add_gpu_context() {
#if TRIPTYCH_GPU_OFF
    benchmark::AddCustomContext("triptych_gpu", "no GPU (CPU-only build)");
#else
    if (!gpu::available()) {
        benchmark::AddCustomContext("triptych_gpu", "no GPU (none visible)");
        return;
    }
    const gpu::DeviceInfo info = gpu::info();
    if (info.simulated) {
        benchmark::AddCustomContext("triptych_gpu", "no GPU (simulator build)");
        return;
    }
    benchmark::AddCustomContext("triptych_gpu", info.name);
    benchmark::AddCustomContext("triptych_gpu_sms", std::to_string(info.multiprocessors));
    std::ostringstream memory, bandwidth;
    memory << std::fixed << std::setprecision(1)
           << double(info.memory_bytes) / (1024.0 * 1024.0 * 1024.0);
    bandwidth << std::fixed << std::setprecision(0) << info.memory_bandwidth_gbs;
    benchmark::AddCustomContext("triptych_gpu_memory_gib", memory.str());
    benchmark::AddCustomContext("triptych_gpu_compute_capability",
                                std::to_string(info.major) + "." + std::to_string(info.minor));
    benchmark::AddCustomContext("triptych_gpu_bandwidth_gbs", bandwidth.str());
#endif
}

void add_context(const Options& options) {
    benchmark::AddCustomContext("triptych_build", TRIPTYCH_GPU_FLAVOR);
    benchmark::AddCustomContext("triptych_build_type", TRIPTYCH_BUILD_TYPE);
    benchmark::AddCustomContext("triptych_compiler", TRIPTYCH_CXX_COMPILER);
    benchmark::AddCustomContext("triptych_cpu", cpu_description());
    // Whether two of the CPUs shared a cache as the run started (common/machine.hpp): on a virtual
    // machine the host may move them, and a parallel op's time with them.
    benchmark::AddCustomContext("triptych_cpu_round_trip", describe(cache_line_round_trip()));
    benchmark::AddCustomContext("triptych_omp_threads", std::to_string(omp_get_max_threads()));
    benchmark::AddCustomContext("triptych_openblas_threads",
                                std::to_string(openblas_get_num_threads()));
#ifdef EIGEN_USE_BLAS
    benchmark::AddCustomContext("triptych_eigen_blas", "on");
#else
    benchmark::AddCustomContext("triptych_eigen_blas", "off");
#endif
    benchmark::AddCustomContext("triptych_variants", variant_kinds());
    benchmark::AddCustomContext("triptych_versions", version_ladders());
    benchmark::AddCustomContext("triptych_quick", options.quick ? "yes" : "no");
    benchmark::AddCustomContext("triptych_conv_shapes",
                                check::named_conv_shapes_json(options.quick));
    add_gpu_context();
}

}  // namespace
}  // namespace triptych::bench

int main(int argc, char** argv) {
    using namespace triptych::bench;
    const Options options = take_options(argc, argv);
    const bool median_console = !other_format_asked(argc, argv);
    benchmark::Initialize(&argc, argv, print_help);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    try {
        add_context(options);
        register_descriptions(options);
        register_gemm(options);
        register_train(options);
        register_copy(options);
        // What each row's op is, for the report: its counter, work formula and table.
        benchmark::AddCustomContext("triptych_ops", described_rows_json());
    } catch (const std::exception& e) {
        std::cerr << "triptych_bench: " << e.what() << "\n";
        return 1;
    }
    if (median_console) {
        MedianConsoleReporter console;
        benchmark::RunSpecifiedBenchmarks(&console);
    } else {
        benchmark::RunSpecifiedBenchmarks();
    }
    benchmark::Shutdown();
    return 0;
}
