// ReLU benchmarks: relu_forward and relu_backward over n floats on every variant.
//
// Rows: relu_forward/<variant>/<n> and relu_backward/<variant>/<n>. ReLU does one comparison per
// element moved, so its speed is memory bandwidth: counter `bytes` is what one call must read and
// write (forward reads x, writes y: 8n bytes; backward reads x and dy, writes dx: 12n bytes), as a
// rate in bytes per second. The report compares it with the copy rows (copy.cpp), the fastest any
// memory-bound op can go on the same device.
// Run: triptych_bench --benchmark_filter='relu_'
#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

void count_bytes(benchmark::State& state, double bytes_per_call) {
    state.counters["bytes"] =
        benchmark::Counter(bytes_per_call, benchmark::Counter::kIsIterationInvariantRate);
}

void relu_forward(benchmark::State& state, const Backend& b, std::int64_t n) {
    const Shape shape{n};
    const Tensor x = b.upload(shape, random_values(n));
    Tensor y = b.allocate(shape);
    if (!warm_up(state, [&] { b.relu_forward(x, y); }, b, y)) return;
    for (auto _ : state) {
        b.relu_forward(x, y);
        b.synchronize();
    }
    count_bytes(state, 2.0 * sizeof(float) * double(n));
}

void relu_backward(benchmark::State& state, const Backend& b, std::int64_t n) {
    const Shape shape{n};
    const Tensor x = b.upload(shape, random_values(n));
    const Tensor dy = b.upload(shape, random_values(n));
    Tensor dx = b.allocate(shape);
    if (!warm_up(state, [&] { b.relu_backward(x, dy, dx); }, b, dx)) return;
    for (auto _ : state) {
        b.relu_backward(x, dy, dx);
        b.synchronize();
    }
    count_bytes(state, 3.0 * sizeof(float) * double(n));
}

}  // namespace

void register_relu(const Options& options) {
    for (const Variant& v : variants(options)) {
        for (std::int64_t n : stream_sizes(v.kind, options)) {
            const std::string size = std::to_string(n);
            add("relu_forward/" + v.label + "/" + size,
                [b = v.backend, n](benchmark::State& s) { relu_forward(s, *b, n); });
            add("relu_backward/" + v.label + "/" + size,
                [b = v.backend, n](benchmark::State& s) { relu_backward(s, *b, n); });
        }
    }
}

}  // namespace triptych::bench
