// `triptych`: the command line. One subcommand per job:
//   info     the build, the compiler, the CPU threads and the GPU (or simulator / none)
//   versions every kernel version of every op and variant (the optimisation ladders)
//   check    every op of every variant against the float64 reference
//   profile  one op's GPU kernels in the simulator: what Nsight Compute would count
//   bench    the Google Benchmark suites
//   report   benchmarks -> a Markdown speedup report with charts
//   train    train a model on Fashion-MNIST, with a loss curve, a chart and checkpoints
// Any error is printed as one line on stderr and the exit status is non-zero.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "tools/commands.hpp"
#include "tools/memory.hpp"
#include "triptych_config.hpp"

#if TRIPTYCH_GPU_SIM
#include "gpu/runtime/sim/sim.hpp"
#endif

namespace {

void print_usage() {
    std::puts(
        "usage: triptych <command> [options]\n"
        "\n"
        "commands:\n"
        "  info     show the build flavor, compiler, CPU threads and GPU\n"
        "  versions list every op's kernel versions in every variant (the ladders)\n"
        "  check    cross-check every op and variant against the float64 reference\n"
        "  profile  count one op's GPU kernels in the simulator as Nsight Compute would\n"
        "  bench    run the benchmarks (Google Benchmark)\n"
        "  report   run the benchmarks and write the speedup report (Markdown + charts)\n"
        "  train    train mlp or lenet on Fashion-MNIST on any backend (loss curve, checkpoints)\n"
        "\n"
        "`triptych <command> --help` explains each command's options.");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace triptych::tools;
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
        print_usage();
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    const Args args(argv + 2, argv + argc);
    cap_memory_at_available();
    try {
#if TRIPTYCH_GPU_SIM
        triptych::sim::check_environment();
#endif
        // Output that could not all be written (a full disk, a closed stdout) fails the command.
        const auto written = [&](int status) {
            if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
            std::fprintf(stderr, "triptych %s: cannot write its output: %s\n", command.c_str(),
                         std::strerror(errno));
            return status == 0 ? 1 : status;
        };
        if (command == "info") return written(info_main(args));
        if (command == "versions") return written(versions_main(args));
        if (command == "check") return written(check_main(args));
        if (command == "profile") return written(profile_main(args));
        if (command == "bench") return written(bench_main(args));
        if (command == "report") return written(report_main(args));
        if (command == "train") return written(train_main(args));
        std::fprintf(stderr, "triptych: unknown command '%s' (try triptych --help)\n",
                     command.c_str());
        return 2;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr,
                     "triptych %s: out of memory: the sizes asked for need more memory than this "
                     "machine has available\n",
                     command.c_str());
        return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "triptych %s: %s\n", command.c_str(), error.what());
        return 1;
    }
}
