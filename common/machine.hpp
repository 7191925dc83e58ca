// What CPU a run is on, in words, for the records that carry measured figures: `triptych info`
// prints it and triptych_bench puts it in its JSON's context (triptych_cpu), so every generated
// table names the machine kind its numbers come from. The kind matters as much as the clock: a
// Zen 4 and a Zen 5 EPYC both have AVX-512, but a Zen 5 core does two 16-float multiply-adds a
// cycle where a Zen 4 core does one, so the same kernel at the same clock can run twice as fast
// on the one. Where two of its CPUs sit matters too: cache_line_round_trip says whether they
// share a cache.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace triptych {

// The CPU's model name with its family and model numbers, as Linux reports them
// (/proc/cpuinfo), e.g. "AMD EPYC (family 25, model 17)"; "unknown CPU" where there is no such
// file, or only what it has.
std::string cpu_model();

// The widest vector instructions this build's CPU code was compiled for (-march=native, or the
// flags the build was given): "AVX-512", "AVX2", "AVX", "SSE2" or "no x86 vectors". Not the CPU's:
// a build for AVX2 runs AVX2 code on an AVX-512 machine.
const char* compiled_vector_isa();

// Both, as one line: "AMD EPYC (family 25, model 17), code compiled for AVX-512".
std::string cpu_description();

// The value of the line "<key>:   <value> kB" of a /proc file such as /proc/meminfo or
// /proc/self/status, in kB, or -1 where the file or the line cannot be read.
std::int64_t proc_kilobytes(const char* file, const std::string& key);

// How long one cache line takes to go from CPU `first` to CPU `second` and back, measured now:
// two threads, one pinned to each CPU, pass a counter to and fro in one line (the median of a
// few runs of bounces). Two cores that share an L3 cache do it in tens of nanoseconds; two cores
// of different dies or sockets, in hundreds. A parallel op whose threads read what the other
// wrote pays this (lessons/14_training_cnn, "Two cores that share no cache"), and on a virtual
// machine the host may move its CPUs between such places while it runs: `triptych info` and
// triptych_bench's context measure it so a run says which it had.
struct RoundTrip {
    int first = -1, second = -1;  // the CPUs: the first two this thread may run on, or -1
    double nanoseconds = -1;      // the median round trip, or -1 where it was not measured
    std::string why_not;          // why not: one CPU, no pinning, or CPUs too busy to finish
};
// It gives up once `budget` has passed: on a busy machine each bounce may wait for a CPU.
RoundTrip cache_line_round_trip(std::chrono::milliseconds budget = std::chrono::milliseconds(500));

// "62 ns between CPU 0 and CPU 1", or why it was not measured.
std::string describe(const RoundTrip& trip);

// The memory this machine can give a process now without swapping, in bytes (MemAvailable in
// /proc/meminfo: free memory and the caches it can drop), or -1 where that cannot be read.
std::int64_t available_memory();

}  // namespace triptych
