// triptych_sim_cost: what the simulator's access recorder costs, timed with Google Benchmark.
//
//   triptych_sim_cost [--backend NAME] [--op NAME] [--seed S] [Google Benchmark flags]
//
// Times one `triptych check` (by default every op on gpu_tiled) three ways, each run in a process
// of its own, as a user runs it:
//
//   plain      `triptych check`, the plain program;
//   profile    the same under TRIPTYCH_SIM_PROFILE=1, counting every access as `triptych profile`
//              does;
//   racecheck  the same under TRIPTYCH_SIM_RACECHECK=1, as `triptych check --racecheck`.
//
// The two recording modes run the instrumented copy of triptych (build/tools/instrumented/), so
// their times include what instrumenting every load and store costs, and plain's does not. All
// three check the same inputs (one seed, printed), so they do the same work. Unless told
// otherwise, each mode runs 3 times, interleaved at random; the table shows each run and each
// mode's median (among Google Benchmark's aggregates), and the last lines divide each recording
// mode's median by plain's. `--benchmark_out=FILE` keeps the runs as JSON. Exit status 1 when a
// check failed in some mode (the table names the run).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/random.hpp"
#include "tools/process.hpp"

namespace triptych::bench {
namespace {

struct Mode {
    const char* name;
    const char* variable;  // the environment variable that turns it on; nullptr for plain
};
constexpr Mode modes[] = {{"plain", nullptr},
                          {"profile", "TRIPTYCH_SIM_PROFILE"},
                          {"racecheck", "TRIPTYCH_SIM_RACECHECK"}};

void print_help() {
    std::printf(
        "triptych_sim_cost: how much slower `triptych check` runs with the simulator's access\n"
        "recorder on: plain, counting (TRIPTYCH_SIM_PROFILE=1) and race checking\n"
        "(TRIPTYCH_SIM_RACECHECK=1), each a benchmark, then each recording mode's median over\n"
        "plain's.\n"
        "  --backend NAME  the variant to check (default gpu_tiled)\n"
        "  --op NAME       one op only (default every op)\n"
        "  --seed S        the inputs' seed (default a fresh one, printed)\n"
        "Defaults: --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true.\n"
        "Google Benchmark's own flags follow.\n\n");
    benchmark::PrintDefaultHelp();
}

// The `triptych check` command every mode runs: triptych's own flags taken out of argv (Google
// Benchmark rejects flags it does not know).
std::vector<std::string> take_check_command(int& argc, char** argv) {
    std::string backend = "gpu_tiled", op, seed;
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        std::string* value = std::strcmp(argv[i], "--backend") == 0 ? &backend
                             : std::strcmp(argv[i], "--op") == 0    ? &op
                             : std::strcmp(argv[i], "--seed") == 0  ? &seed
                                                                    : nullptr;
        if (value == nullptr) {
            argv[kept++] = argv[i];
            continue;
        }
        if (i + 1 == argc) throw InvalidArgument(std::string(argv[i]) + " needs a value");
        *value = argv[++i];
    }
    argc = kept;
    const std::uint64_t fixed = seed.empty() ? fresh_seed() : parse_seed("--seed", seed);
    std::vector<std::string> command{TRIPTYCH_CLI, "check", "--backend", backend};
    command.insert(command.end(), {"--seed", std::to_string(fixed)});
    if (!op.empty()) command.insert(command.end(), {"--op", op});
    return command;
}

// Runs `command` with `mode`'s variable set to 1 and the other's unset; its standard output (the
// check's table) is dropped. Returns its exit status.
int run_in_mode(const std::vector<std::string>& command, const Mode& mode) {
    for (const Mode& m : modes)
        if (m.variable != nullptr) unsetenv(m.variable);
    if (mode.variable != nullptr) setenv(mode.variable, "1", 1);
    std::string dropped;
    return tools::run_program(command, STDOUT_FILENO, &dropped);
}

void time_check(benchmark::State& state, const std::vector<std::string>& command,
                const Mode& mode) {
    for (auto _ : state) {
        const int status = run_in_mode(command, mode);
        if (status != 0) {
            state.SkipWithError(
                ("triptych check failed (exit status " + std::to_string(status) + ")").c_str());
            return;
        }
    }
}

// The console table, with each mode's median kept for the ratios: Google Benchmark's median
// aggregate, or the time of the one run when there are no repetitions.
class CostReporter : public benchmark::ConsoleReporter {
public:
    CostReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& run : runs) {
            failed_ = failed_ || run.error_occurred;
            if (run.error_occurred) continue;
            Timed& mode = timed_[run.run_name.function_name];
            if (run.run_type == Run::RT_Iteration) {
                if (++mode.runs == 1) mode.median_seconds = run.GetAdjustedRealTime();
            } else if (run.aggregate_name == "median") {
                mode.median_seconds = run.GetAdjustedRealTime();
            }
        }
    }
    // Whether a run failed (its check exited with an error: the table says which).
    bool failed() const { return failed_; }
    struct Timed {
        std::size_t runs = 0;  // that completed
        double median_seconds = 0;
    };
    // Benchmark `name`'s runs, none if it did not run.
    Timed timed(const std::string& name) const {
        auto found = timed_.find(name);
        return found == timed_.end() ? Timed{} : found->second;
    }

private:
    std::map<std::string, Timed> timed_;
    bool failed_ = false;
};

std::string benchmark_name(const Mode& mode) { return std::string("sim_cost/") + mode.name; }

}  // namespace
}  // namespace triptych::bench

int main(int argc, char** argv) {
    using namespace triptych::bench;
    // Our defaults go first, so that the same flags given by the user override them.
    std::vector<char*> args{argv[0], const_cast<char*>("--benchmark_repetitions=3"),
                            const_cast<char*>("--benchmark_enable_random_interleaving=true")};
    args.insert(args.end(), argv + 1, argv + argc);
    int count = static_cast<int>(args.size());
    std::vector<std::string> command;
    try {
        command = take_check_command(count, args.data());
    } catch (const triptych::Error& e) {
        std::fprintf(stderr, "triptych_sim_cost: %s\n", e.what());
        return 1;
    }
    benchmark::Initialize(&count, args.data(), print_help);
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;

    std::string shown;
    for (const std::string& word : command) shown += (shown.empty() ? "" : " ") + word;
    std::printf("each run: %s\n", shown.c_str());
    // Once before timing: a check that fails is reported here, with its own error, not timed; and
    // the program's files are in the page cache before any mode is timed.
    const int status = run_in_mode(command, modes[0]);
    if (status != 0) {
        std::fprintf(stderr, "triptych_sim_cost: the plain check failed (exit status %d)", status);
        std::fprintf(stderr, "; nothing timed\n");
        return 1;
    }
    for (const Mode& mode : modes)
        benchmark::RegisterBenchmark(benchmark_name(mode).c_str(), time_check, command, mode)
            ->Iterations(1)
            ->UseRealTime()
            ->Unit(benchmark::kSecond);

    CostReporter reporter;
    const std::size_t ran = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    if (ran == 0) {
        std::string names;
        for (const Mode& mode : modes) names += (names.empty() ? "" : ", ") + benchmark_name(mode);
        std::fprintf(stderr,
                     "triptych_sim_cost: --benchmark_filter matches none of %s; nothing timed\n",
                     names.c_str());
        return 1;
    }

    const int exit_status = reporter.failed() ? 1 : 0;
    const double plain = reporter.timed(benchmark_name(modes[0])).median_seconds;
    if (plain <= 0) {
        std::printf("\nno ratios: no plain run to divide by\n");
        return exit_status;
    }
    std::printf("\nmedian of each mode over plain's (%.2f s):\n", plain);
    for (const Mode& mode : modes) {
        const CostReporter::Timed timed = reporter.timed(benchmark_name(mode));
        if (mode.variable == nullptr || timed.runs == 0) continue;
        std::printf("  %-10s %6.1fx plain  (%s=1, median of %zu runs)\n", mode.name,
                    timed.median_seconds / plain, mode.variable, timed.runs);
    }
    return exit_status;
}
