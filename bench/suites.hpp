// What the benchmark suites of triptych_bench share: the options, the list of variants to time,
// size ladders, random inputs, and the one way a benchmark is registered and warmed up.
//
// Every row is named `<op>/<variant>/<size>` ("gemm/cpu_eigen_omp/1024x1024x1024",
// "gemm/gpu_tiled@3/1024x1024x1024" for a version other than the variant's default,
// "relu_forward/gpu_tiled/16777216", "softmax_forward/cpu_naive/4096x1000",
// "dense_forward/gpu_tiled/256x1024->1024_relu"). Variants come from the registry, so a new backend
// is benchmarked without touching bench/; a variant that throws Unsupported for an op gets no row
// for it. Simulator variants are skipped: their times describe the CPU running the simulator, not
// a GPU. With --include-simulator they run at small sizes as `<variant>_on_simulator`, a name the
// report keeps out of every GPU column.
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
// The versions of `op` that `v` has besides its default (common/kernels.hpp), as variants of their
// own: "gpu_tiled@3", or "gpu_tiled@3_on_simulator". Their rows sit next to the variant's.
std::vector<Variant> other_versions(const Variant& v, Op op);

// 2^k for every k with low <= 2^k <= high.
std::vector<std::int64_t> powers_of_two(std::int64_t low, std::int64_t high);

// The sizes (in floats) of the elementwise and whole-tensor rows (activations, bias, mse_loss,
// sum) on a device of `kind`.
std::vector<std::int64_t> stream_sizes(DeviceKind kind, const Options& options);

// A matrix seen as `rows` rows of `cols` floats, the shape of the row-wise ops.
struct RowsCols {
    std::int64_t rows, cols;
    // "4096x1000", as the row names spell it.
    std::string str() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};

// The (rows, cols) of the row-wise rows (softmax, softmax_cross_entropy): many short rows, a
// classifier's 1000 classes, a few very long rows.
std::vector<RowsCols> row_shapes(DeviceKind kind, const Options& options);

// Every float count a memory-bound row uses on a device of `kind` (stream_sizes and the row
// shapes): the copy rows are measured at each, so every row has its ceiling of the same size.
std::vector<std::int64_t> copy_sizes(DeviceKind kind, const Options& options);

// `count` floats drawn uniformly from [-1, 1), the same on every call (seeded), so that every
// variant works on identical data.
std::vector<float> random_values(std::int64_t count);

// Whether a variant implements an op: `try_once` calls it on a tiny input. Unsupported means no
// rows (gpu_vendor, cuBLAS only, has no ReLU); any other error registers the rows anyway, so that
// they fail with its message and the report lists them.
bool implements(const std::function<void()>& try_once);

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
// The same for an op whose output is the number it returns (sum): a NaN fails the row.
bool warm_up(benchmark::State& state, const std::function<float()>& op, const Backend& owner);

// The timed loop of a row on `b`: `op`, then synchronize(), so that every timed GPU call includes
// its whole kernel.
void time_calls(benchmark::State& state, const Backend& b, const std::function<void()>& op);

// Sets counter `name` ("flops", "bytes") to `per_call` times the iterations, shown as a rate per
// second of wall-clock time ("flops=95.2G/s").
void count_per_second(benchmark::State& state, const char* name, double per_call);

// Each suite registers its rows; see the top of each file.
void register_gemm(const Options& options);         // gemm.cpp
void register_activations(const Options& options);  // activations.cpp: ReLU, sigmoid, tanh
void register_bias(const Options& options);         // bias.cpp
void register_softmax(const Options& options);      // softmax.cpp
void register_losses(const Options& options);       // losses.cpp: mse_loss, softmax_cross_entropy
void register_reductions(const Options& options);   // reduce.cpp: sum, both modes
void register_dense(const Options& options);        // dense.cpp: fused against unfused
void register_conv(const Options& options);         // conv.cpp: conv2d, every algorithm
void register_pool(const Options& options);         // pool.cpp: max and average pooling
void register_optimizer(const Options& options);    // optimizer.cpp: SGD, Adam, RMSprop steps
void register_train(const Options& options);        // train.cpp: whole training steps, batch transfers
void register_copy(const Options& options);         // copy.cpp

}  // namespace triptych::bench
