// Bias benchmarks: bias_add (y = x + b, b broadcast over the rows) and bias_backward (dbias = the
// column sums of dy, a reduction over the batch), on (rows, 1024) matrices.
//
// Rows: bias_add/<variant>/<rows>x1024 and bias_backward/<variant>/<rows>x1024, rows * 1024 being
// the stream sizes of the activations. Counter `bytes`, what one call must read and write:
//   bias_add       reads x and b, writes y     8·rows·cols + 4·cols bytes
//   bias_backward  reads dy, writes dbias      4·rows·cols + 4·cols bytes
// Both are memory-bound; bias_backward reads down the columns, and how a variant splits those sums
// over threads (or GPU blocks) decides how close it gets to the copy bandwidth.
// Run: triptych_bench --benchmark_filter='bias_'
#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

// A layer of 1024 outputs: wide enough for coalesced rows on a GPU, and every stream size is a
// whole number of rows.
constexpr std::int64_t cols = 1024;

void bias_add(benchmark::State& state, const Backend& b, std::int64_t rows) {
    const Tensor x = b.upload(Shape{rows, cols}, random_values(rows * cols));
    const Tensor bias = b.upload(Shape{cols}, random_values(cols));
    Tensor y = b.allocate(Shape{rows, cols});
    auto op = [&] { b.bias_add(x, bias, y); };
    if (!warm_up(state, op, b, y)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", sizeof(float) * (2.0 * double(rows * cols) + double(cols)));
}

void bias_backward(benchmark::State& state, const Backend& b, std::int64_t rows) {
    const Tensor dy = b.upload(Shape{rows, cols}, random_values(rows * cols));
    Tensor dbias = b.allocate(Shape{cols});
    auto op = [&] { b.bias_backward(dy, dbias); };
    if (!warm_up(state, op, b, dbias)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", sizeof(float) * (double(rows * cols) + double(cols)));
}

}  // namespace

void register_bias(const Options& options) {
    for (const Variant& v : variants(options)) {
        const Backend& b = *v.backend;
        const Tensor one = b.upload(Shape{1, 1}, std::vector<float>{0.5f});
        Tensor out = b.allocate(Shape{1, 1});
        Tensor column = b.allocate(Shape{1});
        const bool has_add = implements([&] { b.bias_add(one, column, out); });
        const bool has_backward = implements([&] { b.bias_backward(one, column); });
        for (std::int64_t n : stream_sizes(v.kind, options)) {
            const std::int64_t rows = n / cols;
            const std::string shape = RowsCols{rows, cols}.str();
            if (has_add)
                add("bias_add/" + v.label + "/" + shape,
                    [&b, rows](benchmark::State& s) { bias_add(s, b, rows); });
            if (has_backward)
                add("bias_backward/" + v.label + "/" + shape,
                    [&b, rows](benchmark::State& s) { bias_backward(s, b, rows); });
        }
    }
}

}  // namespace triptych::bench
