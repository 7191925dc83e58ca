// One description per op: everything `triptych check`, the tests, the benchmarks and the report
// know of it, declared once, next to its check (check/*.cpp). Adding an op means adding its
// description; check, bench and report iterate them, so it appears everywhere at once, and a
// benchmark row whose op no description declares stops the report with an error rather than
// vanishing from it.
//
//   name, shape syntax, check shapes, run   what `triptych check --op NAME` runs, and the tests
//   kernels                                  the ops of common/kernels.hpp it runs: each version
//                                            of them is checked (versions_to_check)
//   bench                                    its benchmark rows: per device kind the sizes, the
//                                            work of one call (bytes moved or flops) with its
//                                            formula as the report prints it, and the report
//                                            table the rows belong in
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/kernels.hpp"

namespace triptych::check {

struct CaseResult;

// One benchmarked call, made ready on a backend: its inputs uploaded, its outputs allocated.
struct Workload {
    std::function<void()> call;
    // Checked after the warm-up call: a NaN left in it means an element was never written (the
    // tensors come from allocate(), NaN-filled), and a fast time for it would be a lie. Empty for
    // an op whose result is the number it returns (`result`).
    Tensor output;
    std::function<float()> result;
};

// One row: its size as the row name spells it ("16777216", "4096x1000", "lenet_conv1"), the work
// of one call in the rows' counter, any further counters, and how to set it up on a backend.
struct BenchCase {
    std::string size;
    double work = 0;
    std::map<std::string, double> extra_counters;
    std::function<Workload(const Backend&)> prepare;
};

// What the benchmarks give the rows of a device kind: quick runs use small sizes only (for tests
// and CI); a simulator runs one small size (its times are the CPU's, and never shown as a GPU's).
struct BenchContext {
    DeviceKind kind;
    bool quick;
    const Backend& backend;
};

// A family of benchmark rows, named `<op>/<variant>/<size>`.
struct BenchRows {
    std::string op;       // "relu_forward", "sum_fast", "conv2d_forward_im2col"
    std::string counter;  // "bytes" or "flops" (or "images" for training): what `work` counts
    std::string work;     // the formula of `work`, as the report prints it: "8n", "2·M·N·K"
    std::string table;    // the report table the rows belong in (bench/report.py's TABLES)
    // The rows of one variant; none when it lacks the op (an algorithm, a pass).
    std::function<std::vector<BenchCase>(const BenchContext&)> cases;
    // The kernels the rows run: a variant without one of them gets no rows (gpu_vendor has no
    // bias_add). None for an op every backend runs one way or another (the dense layer, unfused).
    std::vector<Op> needs;
};

using CheckRun = std::function<std::vector<CaseResult>(
    const Backend& backend, const std::string& shape, std::uint64_t seed)>;

struct OpDescription {
    std::string name;          // "gemm", "relu_forward", "conv2d"
    std::string shape_syntax;  // what --shape takes, e.g. "M,N,K"
    std::vector<std::string>
        default_shapes;  // the check's shapes (none tile multiples, among them)
    // The shape `triptych profile` takes without --shape: one of default_shapes whose kernels fill
    // whole warps and several blocks, so that its counts show their access pattern (the first of
    // default_shapes is the one-element edge case).
    std::string profile_shape;
    // Runs every case of one shape (gemm: the four transpositions) on `backend`.
    CheckRun run;
    // The kernels it runs: each version of them a variant has is checked too ("gpu_tiled@3").
    std::vector<Op> kernels;
    std::vector<BenchRows> bench;
};

// --- sizes the benchmarks share ------------------------------------------------------------------

// 2^k for every k with low <= 2^k <= high.
std::vector<std::int64_t> powers_of_two(std::int64_t low, std::int64_t high);

// The float counts of the elementwise and whole-tensor rows (activations, bias, mse_loss, sum).
std::vector<std::int64_t> stream_sizes(DeviceKind kind, bool quick);

// A matrix seen as `rows` rows of `cols` floats, the shape of the row-wise ops.
struct RowsCols {
    std::int64_t rows, cols;
    // "4096x1000", as the row names spell it.
    std::string str() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};

// The (rows, cols) of the row-wise rows (softmax, softmax_cross_entropy): many short rows, a
// classifier's 1000 classes, a few very long rows.
std::vector<RowsCols> row_shapes(DeviceKind kind, bool quick);

// Every float count a memory-bound row uses on a device of `kind` (stream_sizes and the row
// shapes): the copy rows are measured at each, so every row has its ceiling of the same size.
std::vector<std::int64_t> copy_sizes(DeviceKind kind, bool quick);

// The named convolution shapes of the benchmarks, of every device kind (with --quick: the quick
// ones), as JSON: {"lenet_conv1": "64,1,28,28,6,5,5,1,1,2,2", ...}, each in the
// N,C,H,W,K,R,S,STRIDE_H,STRIDE_W,PAD_H,PAD_W form `triptych check --op conv2d --shape` takes.
// The run's context carries it (triptych_conv_shapes): the report prints the shapes from it and
// prices their transfers.
std::string named_conv_shapes_json(bool quick);

// `count` floats drawn uniformly from [-1, 1), the same on every call (seeded), so that every
// variant is timed on identical data.
std::vector<float> bench_values(std::int64_t count);

}  // namespace triptych::check
