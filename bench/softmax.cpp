// Softmax benchmarks: softmax_forward and softmax_backward, row-wise, on every variant.
//
// Rows: softmax_forward/<variant>/<rows>x<cols> and softmax_backward/<variant>/<rows>x<cols> for
// the row shapes of suites.cpp (4096x1000, 64x100000, 65536x10 on the CPU). Counter `bytes`, what
// one call must read and write, each tensor once:
//   forward   reads x, writes y            8·rows·cols bytes
//   backward  reads y and dy, writes dx    12·rows·cols bytes
// A softmax passes over each row more than once (the max, the sum of exponentials, the
// normalisation); a row that stays in cache between passes costs no more memory traffic, so the
// best variants approach the copy bandwidth. The shapes show where that stops: long rows outgrow
// the cache, short rows pay per-row overhead.
// Run: triptych_bench --benchmark_filter='softmax_(forward|backward)'
#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

void softmax_forward(benchmark::State& state, const Backend& b, RowsCols m) {
    const Shape shape{m.rows, m.cols};
    const Tensor x = b.upload(shape, random_values(m.rows * m.cols));
    Tensor y = b.allocate(shape);
    auto op = [&] { b.softmax_forward(x, y); };
    if (!warm_up(state, op, b, y)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", 2.0 * sizeof(float) * double(m.rows * m.cols));
}

void softmax_backward(benchmark::State& state, const Backend& b, RowsCols m) {
    const Shape shape{m.rows, m.cols};
    const Tensor y = b.upload(shape, random_values(m.rows * m.cols));
    const Tensor dy = b.upload(shape, random_values(m.rows * m.cols));
    Tensor dx = b.allocate(shape);
    auto op = [&] { b.softmax_backward(y, dy, dx); };
    if (!warm_up(state, op, b, dx)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", 3.0 * sizeof(float) * double(m.rows * m.cols));
}

}  // namespace

void register_softmax(const Options& options) {
    for (const Variant& v : variants(options)) {
        const Backend& b = *v.backend;
        const Tensor one = b.upload(Shape{1, 1}, std::vector<float>{0.5f});
        Tensor out = b.allocate(Shape{1, 1});
        const bool has_forward = implements([&] { b.softmax_forward(one, out); });
        const bool has_backward = implements([&] { b.softmax_backward(one, one, out); });
        for (const RowsCols m : row_shapes(v.kind, options)) {
            if (has_forward)
                add("softmax_forward/" + v.label + "/" + m.str(),
                    [&b, m](benchmark::State& s) { softmax_forward(s, b, m); });
            if (has_backward)
                add("softmax_backward/" + v.label + "/" + m.str(),
                    [&b, m](benchmark::State& s) { softmax_backward(s, b, m); });
        }
    }
}

}  // namespace triptych::bench
