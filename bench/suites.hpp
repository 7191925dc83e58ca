// What the benchmark suites of triptych_bench share: the options, the list of variants to time,
// size ladders, random inputs, and the one way a benchmark is registered and warmed up.
//
// Every row is named `<op>/<variant>/<size>` ("gemm/cpu_eigen_omp/1024x1024x1024",
// "relu_forward/gpu_tiled/16777216"). Variants come from the registry, so a new backend is
// benchmarked without touching bench/. Simulator variants are skipped: their times describe the
// CPU running the simulator, not a GPU. With --include-simulator they run at small sizes as
// `<variant>_on_simulator`, a name the report keeps out of every GPU column.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/backend.hpp"

namespace triptych::bench {

struct Options {
    bool quick = false;              // small sizes only: for tests and CI
    bool include_simulator = false;  // also time simulator variants, under a name that says so
};

// A backend to benchmark and the name its rows carry.
struct Variant {
    std::string label;  // the registry name, or "<name>_on_simulator"
    const Backend* backend;
    DeviceKind kind;
};

// The registry's variants in rank order, minus the simulator ones unless options ask for them.
std::vector<Variant> variants(const Options& options);

// 2^k for every k with low <= 2^k <= high.
std::vector<std::int64_t> powers_of_two(std::int64_t low, std::int64_t high);

// The sizes (in floats) of the memory-bound rows, ReLU and copies, on a device of `kind`; the copy
// rows use the same sizes so that every ReLU row has its ceiling next to it.
std::vector<std::int64_t> stream_sizes(DeviceKind kind, const Options& options);

// `count` floats drawn uniformly from [-1, 1), the same on every call (seeded), so that every
// variant works on identical data.
std::vector<float> random_values(std::int64_t count);

// Registers `body` as benchmark `name`. Rows are timed in wall-clock time: OpenMP worker threads
// and GPU kernels do not show in the main thread's CPU time, which Google Benchmark uses by
// default. An exception (Unsupported, CudaError, out of memory) marks the row as failed with its
// message; the other rows still run.
void add(const std::string& name, std::function<void(benchmark::State&)> body);

// Runs `op` once before timing, to warm caches and the GPU, then checks that `output` holds no NaN:
// allocate() fills with NaN, so a NaN left means an element was never written, and a fast time
// for it would be a lie. Returns false, having marked the row as failed, in that case.
bool warm_up(benchmark::State& state, const std::function<void()>& op, const Backend& owner,
             const Tensor& output);

// Sets counter `name` ("flops", "bytes") to `per_call` times the iterations, shown as a rate per
// second of wall-clock time ("flops=95.2G/s").
void count_per_second(benchmark::State& state, const char* name, double per_call);

// Each suite registers its rows; see the top of gemm.cpp, relu.cpp and copy.cpp.
void register_gemm(const Options& options);
void register_relu(const Options& options);
void register_copy(const Options& options);

}  // namespace triptych::bench
