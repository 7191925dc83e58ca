// `triptych bench` and `triptych report`: run the Google Benchmark suites (bench/, executable
// triptych_bench) and turn their JSON into a Markdown report with charts (bench/report.py).
//
// Both run every benchmark three times and keep the medians, so one noisy repetition does not move
// a figure. Output files are written to a temporary name and renamed into place: an interrupted
// or failed run never leaves a half-written file where a good one was.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "check/description.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/json.hpp"
#include "common/kernels.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"
#include "tools/process.hpp"
#include "triptych_config.hpp"

namespace triptych::tools {
namespace {

namespace fs = std::filesystem;

constexpr int repetitions = 3;
// Google Benchmark runs each repetition for at least this long. A full run's ~180 rows then take
// several minutes (run_benchmarks prints its estimate before it starts); --quick rows (~120) are
// timed just long enough to test the pipeline, not to measure anything.
constexpr double min_seconds = 0.25;
constexpr double quick_min_seconds = 0.01;

// triptych_bench sits next to this executable when installed together, or in the build tree's
// bench/ folder next to tools/.
fs::path find_bench() {
    const fs::path here = fs::read_symlink("/proc/self/exe").parent_path();
    for (const fs::path& candidate :
         {here / "triptych_bench", here / ".." / "bench" / "triptych_bench"})
        if (access(candidate.c_str(), X_OK) == 0) return fs::weakly_canonical(candidate);
    throw DataError("cannot find triptych_bench next to " + here.string() + " or in " +
                    (here / ".." / "bench").lexically_normal().string() +
                    "; build it with: cmake --build <build dir> --target triptych_bench");
}

// --- the benchmarks ---------------------------------------------------------------------------

struct BenchRun {
    std::string filter;  // a regular expression over the row names; empty: every row
    bool quick = false;
    bool include_simulator = false;
};

BenchRun bench_run(const Options& options) {
    const std::string filter = options.get("--filter");
    try {
        std::regex(filter,
                   std::regex::extended);  // as Google Benchmark compiles --benchmark_filter
    } catch (const std::regex_error& error) {
        throw InvalidArgument("--filter '" + filter + "' is not a regular expression (" +
                              error.what() + ")");
    }
    return {filter, options.has("--quick"), options.has("--include-simulator")};
}

std::vector<std::string> bench_command(const fs::path& bench, const BenchRun& run) {
    std::vector<std::string> command{bench.string()};
    if (!run.filter.empty()) command.push_back("--benchmark_filter=" + run.filter);
    if (run.quick) command.push_back("--quick");
    if (run.include_simulator) command.push_back("--include-simulator");
    return command;
}

// Lists the selected rows without running them, to say how many there are and how long they take.
int count_rows(const fs::path& bench, const BenchRun& run) {
    std::vector<std::string> command = bench_command(bench, run);
    command.push_back("--benchmark_list_tests=true");
    std::string listing;  // one name a line; a filter matching nothing is our error to report
    if (run_program(command, STDOUT_FILENO, &listing, /*quiet=*/true) != 0)
        throw DataError("triptych_bench could not list its benchmarks");
    int rows = 0;
    std::istringstream lines(listing);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) ++rows;
    return rows;
}

// "a few seconds", "about 40 s", "about 2 min".
std::string duration_text(double seconds) {
    if (seconds < 10) return "a few seconds";
    if (seconds < 90) return "about " + std::to_string(int(seconds)) + " s";
    return "about " + std::to_string(int(seconds / 60 + 0.5)) + " min";
}

// Runs the selected rows, printing each as Google Benchmark finishes it; writes the JSON to
// `json` if given.
void run_benchmarks(const BenchRun& run, const fs::path* json) {
    const fs::path bench = find_bench();
    const int rows = count_rows(bench, run);
    if (rows == 0)
        throw InvalidArgument("--filter '" + run.filter + "' matches no benchmark (" +
                              bench.string() + " --benchmark_list_tests lists them)");
    const double seconds = rows * repetitions * (run.quick ? quick_min_seconds : min_seconds) *
                           2.5;  // measured: Google Benchmark's iteration search, then the runs
    std::printf(
        "triptych: %d benchmarks x %d repetitions, %s; each row's median appears when it "
        "finishes\n",
        rows, repetitions, duration_text(seconds).c_str());

    std::vector<std::string> command = bench_command(bench, run);
    std::ostringstream min_time;
    min_time << (run.quick ? quick_min_seconds : min_seconds);
    command.insert(command.end(), {"--benchmark_repetitions=" + std::to_string(repetitions),
                                   "--benchmark_report_aggregates_only=true",
                                   "--benchmark_min_time=" + min_time.str()});
    if (json != nullptr)
        command.insert(command.end(),
                       {"--benchmark_out=" + json->string(), "--benchmark_out_format=json"});
    const int status = run_program(command);
    if (status == 128 + SIGINT || status == 128 + SIGTERM)
        throw Error("interrupted; nothing was written");
    if (status != 0)
        throw Error("triptych_bench failed (exit status " + std::to_string(status) + ")");
}

// --- the report -------------------------------------------------------------------------------

void print_bench_help() {
    std::printf(
        "usage: triptych bench [--filter REGEX] [--out FILE.json] [--quick] [--include-simulator]\n"
        "\n"
        "Runs the Google Benchmark suites (GEMM, activations, bias, softmax, losses, sum, the\n"
        "fused dense layer, conv2d, pooling, optimizer steps, training steps, copies) on every\n"
        "variant that can run here, %d repetitions each;\n"
        "each row is printed as it finishes. A variant without an op has no rows for it.\n",
        repetitions);
    std::puts(
        "Rows are named <op>/<variant>/<size>, e.g. gemm/cpu_eigen_omp/1024x1024x1024,\n"
        "softmax_forward/cpu_naive/4096x1000, dense_forward/cpu_eigen_omp/64x784->256_relu.\n"
        "\n"
        "  --filter REGEX       only rows whose name matches, e.g. "
        "'gemm/(cpu_eigen_omp|openblas)'\n"
        "  --out FILE.json      also write the results as JSON (input of triptych report --from)\n"
        "  --quick              small sizes and short timing: seconds, for tests and CI\n"
        "  --include-simulator  also time the simulator variants, as <variant>_on_simulator\n"
        "                       (CPU timings of the simulator, never shown as GPU timings)\n"
        "\n"
        "For Google Benchmark's own flags, run triptych_bench directly (triptych_bench --help).");
}

#if TRIPTYCH_GPU_SIM
// Every GPU kernel counted by the simulator's access recorder: `triptych profile --json` on each op
// of the check, on gpu_naive and gpu_tiled and each of their other versions (the GEMM and sum
// ladders), at the middle one of the op's check shapes (GEMM: 64 or 128 cubed), gathered into
// `counts` for bench/report.py --counts. Returns false (and says why) when they cannot be counted,
// e.g. in a build without the recorder.
bool count_gpu_kernels(bool quick, const fs::path& counts) {
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    std::string ops;
    for (const check::OpDescription& op : check::ops()) {
        // The middle of the check's shapes: the first ones are tiny (a single element).
        const std::string shape = op.name == "gemm"
                                      ? (quick ? "64,64,64" : "128,128,128")
                                      : op.default_shapes[op.default_shapes.size() / 2];
        std::string versions;
        for (const std::string variant : {"gpu_naive", "gpu_tiled"}) {
            // The other versions first, then the default (the top of the variant's ladder).
            std::vector<std::string> names = check::versions_to_check(op, variant);
            std::rotate(names.begin(), names.begin() + 1, names.end());
            for (const std::string& run_as : names) {
                TemporaryFile json(fs::temp_directory_path(), "triptych-counts", ".json");
                std::string printed;
                const int status =
                    run_program({self, "profile", "--op", op.name, "--backend", run_as, "--shape",
                                 shape, "--seed", "1", "--json", json.path().string()},
                                1, &printed);
                if (status != 0) {
                    std::printf(
                        "no simulator counts in the report: triptych profile failed on "
                        "%s of %s:\n%s",
                        run_as.c_str(), op.name.c_str(), printed.c_str());
                    return false;
                }
                std::ifstream in(json.path());
                const std::string kernels((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
                // {"cases": ..., "kernels": [...]} becomes {"run_as": "...", "cases": ...}.
                versions += (versions.empty() ? "" : ", ") + std::string("{\"run_as\": ") +
                            json_string(run_as) + ", " + kernels.substr(kernels.find('{') + 1);
            }
        }
        ops += (ops.empty() ? "" : ",\n") + std::string("{\"op\": ") + json_string(op.name) +
               ", \"shape\": " + json_string(shape) + ", \"versions\": [" + versions + "]}";
    }
    std::ofstream out(counts);
    out << "{\"ops\": [" << ops << "]}\n";
    return bool(out.flush());
}
#endif

void print_report_help() {
    std::puts(
        "usage: triptych report [--from FILE.json] [--out DIR] [--filter REGEX] [--quick]\n"
        "                       [--include-simulator] [--peer FILE]\n"
        "\n"
        "Runs the benchmarks (as triptych bench does), or reads a saved run, and writes DIR:\n"
        "report.md (the machine, GEMM GFLOP/s and speedups over cpu_naive and cpu_eigen_omp,\n"
        "GPU kernels as % of cuBLAS, cpu_eigen_omp as % of OpenBLAS, ReLU GB/s against copy\n"
        "bandwidth, the GB/s of every memory-bound op and its % of the copy bandwidth, sum's\n"
        "deterministic and fast modes, what fusing GEMM + bias + activation buys,\n"
        "host<->device transfer cost, conv2d per algorithm and its filter-size sweep, pooling,\n"
        "training steps of both models in images/s), PNG charts and the raw JSON. Without a GPU\n"
        "every GPU column says \"no GPU\"; a sim build adds every GPU kernel as the simulator\n"
        "counts it (triptych profile on each op and version). DIR is replaced only once the new "
        "report is complete.\n"
        "\n"
        "  --from FILE.json     report this saved run (triptych bench --out) instead of running\n"
        "  --out DIR            the report directory (default: report)\n"
        "  --filter REGEX       only rows whose name matches\n"
        "  --quick              small sizes and short timing: seconds, for tests and CI\n"
        "  --include-simulator  also time the simulator variants (reported apart, never as GPU)\n"
        "  --peer FILE          PyTorch's figures from this machine, the JSON of\n"
        "                       /usr/bin/python3 bench/pytorch_peer.py conv pool --out FILE\n"
        "                       (tools/install-deps.sh --peer installs PyTorch): shown beside\n"
        "                       ours, with the speed ratios");
}

}  // namespace

int bench_main(const Args& args) {
    Options options("bench", args, {"--filter", "--out"},
                    {"--help", "--quick", "--include-simulator"});
    if (options.has("--help")) {
        print_bench_help();
        return 0;
    }
    if (!options.has("--out")) {
        run_benchmarks(bench_run(options), nullptr);
        return 0;
    }
    const fs::path out = options.get("--out");
    const fs::path target = output_file("--out", out);
    TemporaryFile json(target.parent_path(), target.filename().string(), ".json");
    run_benchmarks(bench_run(options), &json.path());
    json.keep_as(target);
    std::printf("results written to %s\n", out.c_str());
    return 0;
}

int report_main(const Args& args) {
    Options options("report", args, {"--from", "--out", "--filter", "--peer"},
                    {"--help", "--quick", "--include-simulator"});
    if (options.has("--help")) {
        print_report_help();
        return 0;
    }
    const bool running = !options.has("--from");
    if (!running &&
        (options.has("--filter") || options.has("--quick") || options.has("--include-simulator")))
        throw InvalidArgument(
            "--filter, --quick and --include-simulator choose what to run; "
            "they cannot be combined with --from");
    const std::string out = options.get("--out", "report");
    std::vector<std::string> peer;
    if (options.has("--peer")) {
        const std::string path = options.get("--peer");
        require_regular_file(path);
        peer = {"--peer", path};
    }
    // Refuse a bad --out or --peer (one that is not the peer's JSON) before spending minutes on
    // benchmarks.
    std::vector<std::string> check = {"--check-out", out};
    check.insert(check.end(), peer.begin(), peer.end());
    run_python_script("bench/report.py", check);
    auto write_report = [&](const std::string& json_path, const std::string& counts = "") {
        std::vector<std::string> arguments = {"--json", json_path, "--out", out};
        arguments.insert(arguments.end(), peer.begin(), peer.end());
        if (!counts.empty()) arguments.insert(arguments.end(), {"--counts", counts});
        run_python_script("bench/report.py", arguments);
    };
    if (!running) {
        const std::string from = options.get("--from");
        require_regular_file(from);
        write_report(from);
        return 0;
    }
    TemporaryFile json(fs::temp_directory_path(), "triptych-bench", ".json");
    run_benchmarks(bench_run(options), &json.path());
#if TRIPTYCH_GPU_SIM
    // Without a GPU the ladder's times are missing; what the simulator counts is not.
    TemporaryFile counts(fs::temp_directory_path(), "triptych-ladder-counts", ".json");
    if (count_gpu_kernels(options.has("--quick"), counts.path())) {
        write_report(json.path().string(), counts.path().string());
        return 0;
    }
#endif
    write_report(json.path().string());
    return 0;
}

}  // namespace triptych::tools
