// What the command line refuses before it does any work: empty option values, versions an op does
// not have, output files it could not write as promised, and simulator settings it does not take.
// Each refusal is one line on stderr, naming the option or variable and the value, and a non-zero
// exit; nothing it was asked to write is touched.
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <utility>

#include "common/machine.hpp"
#include "tests/cli.hpp"
#include "triptych_config.hpp"

using namespace triptych;
using Catch::Matchers::Contains;
using testing::one_line;
using testing::run_cli;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for the scope of one test (the commands run inherit it), then
// restores it: the test program itself runs under a TRIPTYCH_SIM_ORDER of its own.
class ScopedVariable {
public:
    ScopedVariable(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        setenv(name, value, 1);
    }
    ~ScopedVariable() {
        if (old_) {
            setenv(name_, old_->c_str(), 1);
        } else {
            unsetenv(name_);
        }
    }
    ScopedVariable(const ScopedVariable&) = delete;
    ScopedVariable& operator=(const ScopedVariable&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `arguments` and checks it failed in one line containing `why`.
void refuses(const std::string& arguments, const std::string& why) {
    INFO("triptych " << arguments);
    const testing::CliRun run = run_cli(arguments);
    CHECK(run.status != 0);
    CHECK(one_line(run.stderr_text));
    CHECK_THAT(run.stderr_text, Contains(why));
}

}  // namespace

TEST_CASE("an option given an empty value is refused, not read as absent", "[cli]") {
    // `check --backend ""` once checked every variant, `train --save ""` saved nothing.
    const std::pair<const char*, const char*> cases[] = {
        {"check --op relu_forward --backend ''", "--backend"},
        {"train --save ''", "--save"},
        {"train --load ''", "--load"},
        {"profile --op relu_forward --json ''", "--json"},
        {"bench --out ''", "--out"},
        {"report --out ''", "--out"},
    };
    for (const auto& [arguments, option] : cases)
        refuses(arguments, std::string("option ") + option + " needs a value, got an empty one");
}

TEST_CASE("an option given twice, or given another option as its value, is refused", "[cli]") {
    // The second value silently replaced the first; `--backend --shape 4` took --shape as the
    // backend and then called 4 an unknown option.
    refuses("check --op relu_forward --seed 1 --seed 2", "option --seed is given twice");
    refuses("check --op relu_forward --op gemm", "option --op is given twice");
    refuses("train --profile --profile", "option --profile is given twice");
    refuses("check --op relu_forward --backend --shape 4",
            "option --backend needs a value, got the option --shape");
    // profile --ncu-metrics printed the names and ignored the rest, an unknown op included.
    refuses("profile --ncu-metrics --op nosuch",
            "--ncu-metrics prints the metric names alone; --op goes with a profile");
    // A value that only starts with a dash is still a value, for its option to judge.
    refuses("check --op relu_forward --seed -5", "--seed");
}

TEST_CASE("an output file is checked before the work, and a link to one is followed", "[cli]") {
    const testing::ScratchDirectory dir("cli-outputs");
    const std::string bench = "bench --quick --filter '^relu_forward/cpu_naive/' --out ";

    // A directory, or a FIFO, where the output would go: renaming over them would replace them.
    refuses(bench + dir.path.string(), dir.path.string() + " is a directory, not a file");
    const fs::path fifo = dir.path / "fifo.json";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    refuses(bench + fifo.string(), "is not a regular file");
    CHECK(fs::is_fifo(fs::symlink_status(fifo)));
    refuses(bench + (dir.path / "absent/out.json").string(), "absent does not exist");
    // A file where its directory should be.
    std::ofstream(dir.path / "plain.json") << "{}";
    refuses(bench + (dir.path / "plain.json/out.json").string(),
            (dir.path / "plain.json").string() + " is not a directory");

    // A link: the file it leads to gets the output, and the link stays a link.
    const fs::path target = dir.path / "target.json", via = dir.path / "link.json";
    std::ofstream(target) << "old";
    fs::create_symlink(target.filename(), via);
    REQUIRE(run_cli(bench + via.string()).status == 0);
    CHECK(fs::is_symlink(fs::symlink_status(via)));
    CHECK_THAT(read_text(target), Contains("relu_forward/cpu_naive/"));

    // train's checkpoint, before an epoch is spent.
    refuses("train --save " + dir.path.string(), "--save " + dir.path.string() + " is a directory");

    // A directory where no file can be created: the work was done, then lost.
    refuses(bench + "/proc/triptych.json",
            "--out /proc/triptych.json: cannot create a file in /proc");
}

#if TRIPTYCH_GPU_SIM

TEST_CASE("profile and versions take a variant's version only where the op has it", "[cli]") {
    // profile once counted gemm's default kernel under the name gpu_tiled@2.
    refuses("profile --op gemm --backend gpu_tiled@2",
            "gpu_tiled has no version 2 of gemm; its versions: 3, 4");
    refuses("profile --op gemm --backend gpu_tiled --version 2", "gpu_tiled has no version 2");

    // versions lists that version alone; it once said the op had no kernels.
    const std::string nine = testing::cli_output("versions --op gemm --backend gpu_tiled@9");
    CHECK_THAT(nine, Contains("tensor_cores_tf32") && !Contains("double_buffer") &&
                         !Contains("no kernels"));
    // A version the op lacks was a line of output and exit status 0; check and profile refuse it.
    refuses("versions --op relu_forward --backend gpu_tiled@9",
            "gpu_tiled has no version 9 of relu_forward");
}

TEST_CASE("check --every-version runs each version of one variant, and needs a variant", "[cli]") {
    // CI's race check once ran each op's default kernel only: --backend gpu_tiled is that one.
    const std::string every =
        testing::cli_output("check --op sum --backend gpu_tiled --every-version --shape 300");
    for (const std::string version : {"gpu_tiled ", "gpu_tiled@2 ", "gpu_tiled@3 "})
        CHECK_THAT(every, Contains("\nsum                     " + version));
    CHECK_THAT(testing::cli_output("check --op sum --backend gpu_tiled --shape 300"),
               !Contains("gpu_tiled@2"));
    refuses("check --op sum --every-version", "--every-version needs --backend VARIANT");
    refuses("check --op sum --backend gpu_tiled@3 --every-version",
            "--every-version needs --backend VARIANT, a variant without a version");
}

TEST_CASE("a simulator setting it does not take is named before anything runs", "[cli][sim]") {
    const std::string check = "check --op relu_forward --backend gpu_tiled --shape 64";
    {
        // It was reported as a fault of --shape.
        const ScopedVariable order("TRIPTYCH_SIM_ORDER", "bogus");
        refuses(check, "TRIPTYCH_SIM_ORDER=bogus: simulator thread order 'bogus' is not one of");
    }
    for (const char* stack : {"9999999999", "64k", "4"}) {
        // It asked for 10 TB of stacks, and blamed the shape.
        const ScopedVariable variable("TRIPTYCH_SIM_STACK_KB", stack);
        refuses(check,
                std::string("TRIPTYCH_SIM_STACK_KB=") + stack + ": each CUDA thread's stack");
    }
    for (const char* rows : {"0", "65536", "2x", "-1"}) {
        const ScopedVariable variable("TRIPTYCH_SIM_GRID_ROWS", rows);
        refuses(check, std::string("TRIPTYCH_SIM_GRID_ROWS=") + rows +
                           ": the most blocks a launch puts along y is a whole number from 1 to "
                           "65535");
    }
    for (const char* sites : {"gemm.cu", "gemm.cu:0", "gemm.cu:12,"}) {
        // A barrier that is not named right must not leave the kernel whole without a word.
        const ScopedVariable variable("TRIPTYCH_SIM_SKIP_SYNC", sites);
        refuses(check, std::string("TRIPTYCH_SIM_SKIP_SYNC=") + sites + ": '");
    }
    for (const char* name : {"TRIPTYCH_SIM_PROFILE", "TRIPTYCH_SIM_RACECHECK"}) {
        // Anything but 1 left recording off without a word.
        const ScopedVariable variable(name, "2");
        refuses(check, std::string(name) + "=2: takes 1 (on) or 0 (off)");
    }
    const ScopedVariable off("TRIPTYCH_SIM_RACECHECK", "0");
    CHECK(run_cli(check).status == 0);
}

#endif

TEST_CASE(
    "triptych info names the CPU by Linux's model name, family and model, and the vector "
    "instructions the build compiled for",
    "[cli]") {
    // The first processor's fields of /proc/cpuinfo, as common/machine.cpp reads them.
    std::string model_name, family, model;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        const auto value = [&] {
            std::string v = line.substr(line.find(':') + 1);
            v.erase(0, v.find_first_not_of(" \t"));
            return v;
        };
        if (line.rfind("model name", 0) == 0 && model_name.empty()) model_name = value();
        if (line.rfind("cpu family", 0) == 0 && family.empty()) family = value();
        if (line.rfind("model\t", 0) == 0 && model.empty()) model = value();
    }
    const std::string info = testing::cli_output("info");
    const std::string isa = compiled_vector_isa();
    CHECK_THAT(info, Contains(", code compiled for " + isa + "\n"));
    if (!model_name.empty() && !family.empty() && !model.empty())
        CHECK_THAT(info, Contains("CPU:         " + model_name + " (family " + family + ", model " +
                                  model + "), code compiled for"));
}

TEST_CASE("output that cannot be written fails the command instead of exiting 0", "[cli]") {
    for (const char* command : {"versions", "info", "check --op relu_forward --shape 5"}) {
        INFO(command);
        const auto [status, errors] = testing::run_cli_piped(command, "2>&1 >/dev/full");
        CHECK(status == 1);
        CHECK(one_line(errors));
        CHECK_THAT(errors, Contains("cannot write its output: No space left on device"));
    }
}

TEST_CASE(
    "a check too large for the machine's memory is refused before it allocates, naming the op, "
    "the shape and the memory it needs",
    "[cli]") {
    // Sizes no machine holds (terabytes): each op's estimate refuses them at once. They used to
    // fill the memory with inputs for up to a minute before an allocation failed.
    const std::pair<std::string, std::string> cases[] = {
        {"relu_forward", "1099511627776"},
        {"sum", "1099511627776"},
        {"softmax_cross_entropy", "1048576,1048576"},
        {"gemm", "1048576,1048576,1"},
        {"dense_forward", "1048576,1048576,1048576"},
        {"conv2d", "1024,1024,1024,1024,3,3,3"},
        {"max_pool2d", "1024,1024,1024,1024,2,2"},
        {"avg_pool2d", "1024,1024,1024,1024,2,2"},
        {"sgd", "1099511627776"},
        {"adam", "549755813888,549755813888"},
    };
    const std::int64_t available = available_memory();
    REQUIRE(available > 0);  // Linux's /proc/meminfo
    for (const auto& [op, shape] : cases)
        refuses("check --op " + op + " --backend cpu_naive --shape " + shape,
                op + ": --shape '" + shape + "': its check needs at least ");
    refuses("check --op sgd --shape 1099511627776",
            "needs at least 32768.0 GiB (inputs, outputs and the float64 reference), and this "
            "machine has ");
}

TEST_CASE("a /proc line is read in kB, and a line that is not there or not in kB is -1", "[cli]") {
    // The memory guard and the memory cap both read /proc through proc_kilobytes.
    const fs::path file = fs::temp_directory_path() / "triptych_proc_kilobytes_test";
    {
        std::ofstream out(file);
        out << "MemTotal:       24683736 kB\n"
               "MemAvailable:   22817516 kB\n"
               "HugePages_Total:       0\n"
               "VmData:\t  123 MB\n"
               "Negative:  -5 kB\n";
    }
    CHECK(proc_kilobytes(file.c_str(), "MemAvailable") == 22817516);
    CHECK(proc_kilobytes(file.c_str(), "MemTotal") == 24683736);
    CHECK(proc_kilobytes(file.c_str(), "Mem") == -1);              // a prefix of a key
    CHECK(proc_kilobytes(file.c_str(), "HugePages_Total") == -1);  // no unit
    CHECK(proc_kilobytes(file.c_str(), "VmData") == -1);           // not kB
    CHECK(proc_kilobytes(file.c_str(), "Negative") == -1);
    CHECK(proc_kilobytes(file.c_str(), "SwapFree") == -1);
    fs::remove(file);
    CHECK(proc_kilobytes(file.c_str(), "MemAvailable") == -1);  // no such file
    CHECK(proc_kilobytes("/proc/self/status", "VmData") > 0);
    CHECK(available_memory() > 0);
    CHECK(available_memory() % 1024 == 0);
}

TEST_CASE(
    "a cache line's round trip is measured between the first two CPUs this thread may use, and "
    "not where it may use one",
    "[cli]") {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0);
    int first = -1, second = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE && second < 0; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) (first < 0 ? first : second) = cpu;
    if (second >= 0) {
        const RoundTrip trip = cache_line_round_trip();
        CHECK(trip.first == first);
        CHECK(trip.second == second);
        const std::string cpus =
            "between CPU " + std::to_string(first) + " and CPU " + std::to_string(second);
        if (trip.nanoseconds > 0) {  // a busy machine may give up: ctest runs two tests at once
            CHECK(trip.why_not.empty());
            CHECK(describe(trip) == std::to_string(std::lround(trip.nanoseconds)) + " ns " + cpus);
        } else {
            CHECK(describe(trip) ==
                  "not measured " + cpus + " (the CPUs were too busy to finish in 500 ms)");
        }
        // The busy machine's branch, forced: no time at all to finish in.
        const RoundTrip hurried = cache_line_round_trip(std::chrono::milliseconds(0));
        CHECK(hurried.first == first);
        CHECK(hurried.second == second);
        CHECK(hurried.nanoseconds == -1);
        CHECK(describe(hurried) ==
              "not measured " + cpus + " (the CPUs were too busy to finish in 0 ms)");
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
    const RoundTrip alone = cache_line_round_trip();
    REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0);
    CHECK(alone.first == -1);
    CHECK(alone.nanoseconds == -1);
    CHECK(describe(alone) == "not measured (this process may run on one CPU only)");

    const std::string info = testing::cli_output("info");
    CHECK(std::regex_search(
        info, std::regex(R"(\nround trip:  ([0-9]+ ns between CPU [0-9]+ and CPU [0-9]+ for one )"
                         R"(cache line, measured now \(tens of ns|not measured \())")));
}

#if !defined(__SANITIZE_ADDRESS__) && !TRIPTYCH_GPU_CUDA

TEST_CASE("triptych caps its memory at what the machine has available", "[cli]") {
    // Past the cap an allocation fails as std::bad_alloc, reported as out of memory, where Linux
    // would otherwise kill the process without a word once it touched too much.
    const std::string info = testing::cli_output("info");
    CHECK_THAT(info, Contains("memory:      at most "));
    CHECK_THAT(info, !Contains("not capped"));
}

#endif
