// What the benchmark suites of triptych_bench share: the options, the list of variants to time,
// the rows every op description declares (check/description.hpp), and the one way a row is
// registered, warmed up and timed.
//
// Every row is named `<op>/<variant>/<size>` ("gemm/cpu_eigen_omp/1024x1024x1024",
// "gemm/gpu_tiled@3/1024x1024x1024" for a version other than the variant's default,
// "relu_forward/gpu_tiled/16777216", "softmax_forward/cpu_naive/4096x1000",
// "dense_forward/gpu_tiled/256x1024->1024_relu"). Variants come from the registry, so a new backend
// is benchmarked without touching bench/; a variant that lacks an op's kernel gets no row for it.
// Simulator variants are skipped: their times describe the CPU running the simulator, not a GPU.
// With --include-simulator they run at small sizes as `<variant>_on_simulator`, a name the report
// keeps out of every GPU column.
//
// Every row's op is declared to the report with its counter, the formula of its work and its table
// (describe_rows): the ops of the descriptions by register_descriptions, the few rows outside them
// (openblas, copies, training) by their suites. The report refuses a row whose op nobody declared.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "check/description.hpp"
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
// The versions of `op` that `v` has besides its default (common/kernels.hpp), as variants of their
// own: "gpu_tiled@3", or "gpu_tiled@3_on_simulator". Their rows sit next to the variant's.
std::vector<Variant> other_versions(const Variant& v, Op op);

// Declares the rows of `op` to the report: what `counter` counts ("bytes", "flops", "images"), the
// formula of one call's work as the report prints it, and the report table they belong in.
void describe_rows(const std::string& op, const std::string& counter, const std::string& work,
                   const std::string& table);
// Every op declared so far, as the JSON object the report reads from the context:
// {"relu_forward": {"counter": "bytes", "work": "8n", "table": "memory"}, ...}, in order.
std::string described_rows_json();

// The rows of every op description (check::ops()), on every variant and version that implements
// their kernels.
void register_descriptions(const Options& options);

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

// The timed loop of a row on `b`: `op`, then synchronize(), so that every timed GPU call includes
// its whole kernel.
void time_calls(benchmark::State& state, const Backend& b, const std::function<void()>& op);

// Sets counter `name` ("flops", "bytes") to `per_call` times the iterations, shown as a rate per
// second of wall-clock time ("flops=95.2G/s").
void count_per_second(benchmark::State& state, const char* name, double per_call);

// The suites outside the descriptions; see the top of each file.
void register_gemm(const Options& options);   // gemm.cpp: the openblas reference row
void register_train(const Options& options);  // train.cpp: whole training steps, batch transfers
void register_copy(const Options& options);   // copy.cpp

}  // namespace triptych::bench
