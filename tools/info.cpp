// `triptych info`: what this build is and what it runs on.
#include <omp.h>

#include <cstdio>

#include "common/machine.hpp"
#include "common/registry.hpp"
#include "tools/commands.hpp"
#include "tools/memory.hpp"
#include "tools/options.hpp"
#include "triptych_config.hpp"

#if !TRIPTYCH_GPU_OFF
#include "gpu/runtime/device.hpp"
#endif
#if TRIPTYCH_GPU_SIM
#include "gpu/runtime/sim/recorder.hpp"
#endif

namespace triptych::tools {

int info_main(const Args& args) {
    Options options("info", args, {}, {"--help"});
    if (options.has("--help")) {
        std::puts(
            "usage: triptych info\n\n"
            "Prints the build flavor (cuda, sim or off), the compiler, the CPU (its model, and\n"
            "the vector instructions the build compiled for), the CPU threads OpenMP uses, how\n"
            "long a cache line takes to go between two CPUs and back (measured as it runs), the\n"
            "memory triptych may take, the GPU (name, SMs, memory, compute capability) or\n"
            "'simulator' / 'none', and the backends.");
        return 0;
    }
    std::printf("build:       TRIPTYCH_GPU=%s\n", TRIPTYCH_GPU_FLAVOR);
    std::printf("compiler:    %s\n", TRIPTYCH_CXX_COMPILER);
    std::printf("CPU:         %s\n", cpu_description().c_str());
    std::printf("CPU threads: %d (OpenMP; set OMP_NUM_THREADS to change)\n", omp_get_max_threads());
    if (const RoundTrip trip = cache_line_round_trip(); trip.nanoseconds > 0)
        std::printf(
            "round trip:  %s for one cache line, measured now (tens of ns where\n"
            "             two cores share an L3 cache, hundreds where they do not: lesson 14)\n",
            describe(trip).c_str());
    else
        std::printf("round trip:  %s\n", describe(trip).c_str());
    if (const unsigned long long cap = memory_cap(); cap != 0)
        std::printf(
            "memory:      at most %.1f GiB, what the machine had available at the start: a "
            "shape\n             that needs more fails as out of memory\n",
            double(cap) / double(1ull << 30));
    else
        std::printf("memory:      not capped\n");
#if TRIPTYCH_GPU_OFF
    std::printf("GPU:         none (CPU-only build)\n");
#else
    if (!gpu::available()) {
        std::printf("GPU:         none visible\n");
    } else if (const gpu::DeviceInfo d = gpu::info(); d.simulated) {
        std::printf(
            "GPU:         simulator (GPU kernels run on the CPU; their timings say nothing "
            "about a GPU)\n");
#if TRIPTYCH_GPU_SIM
        const sim::RecordMode mode = sim::record_mode();
        std::printf(
            "recorder:    %s; counting %s, race checking %s (TRIPTYCH_SIM_PROFILE, "
            "TRIPTYCH_SIM_RACECHECK)\n",
            sim::recorder_available() ? "this program's kernels are instrumented"
                                      : "this program's kernels are not instrumented",
            mode.profile ? "on" : "off", mode.racecheck ? "on" : "off");
#endif
    } else {
        std::printf("GPU:         %s, %d SMs, %.1f GiB, compute capability %d.%d\n", d.name.c_str(),
                    d.multiprocessors, d.memory_bytes / double(1u << 30), d.major, d.minor);
    }
#endif
    std::printf("backends:   ");
    for (const std::string& name : backend_names())
        std::printf(" %s (%s)", name.c_str(), backend(name).device().c_str());
    std::printf("\n");
    return 0;
}

}  // namespace triptych::tools
