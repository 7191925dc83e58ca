// ReLU benchmarks: relu_forward and relu_backward over n floats on every variant.
//
// Rows: relu_forward/<variant>/<n> and relu_backward/<variant>/<n>. ReLU does one comparison per
// element moved, so its speed is memory bandwidth: counter `bytes` is what one call must read and
// write (forward reads x, writes y: 8n bytes; backward reads x and dy, writes dx: 12n bytes), as a
// rate in bytes per second. The report compares it with the copy rows (copy.cpp), the fastest any
// memory-bound op can go on the same device.
// Run: triptych_bench --benchmark_filter='relu_'
#include "bench/suites.hpp"
#include "common/errors.hpp"

namespace triptych::bench {
namespace {

// Whether `b` has ReLU at all (gpu_vendor, cuBLAS only, has none): tried once on one element,
// so that a variant without it gets no rows rather than rows that can only fail.
bool implements_relu(const Backend& b) {
    try {
        const Tensor x = b.upload(Shape{1}, std::vector<float>{1.0f});
        Tensor y = b.allocate(Shape{1});
        b.relu_forward(x, y);
        b.relu_backward(x, x, y);
        return true;
    } catch (const Unsupported&) {
        return false;
    }
}

void relu_forward(benchmark::State& state, const Backend& b, std::int64_t n) {
    const Shape shape{n};
    const Tensor x = b.upload(shape, random_values(n));
    Tensor y = b.allocate(shape);
    auto relu = [&] { b.relu_forward(x, y); };
    if (!warm_up(state, relu, b, y)) return;
    for (auto _ : state) {
        relu();
        b.synchronize();
    }
    count_per_second(state, "bytes", 2.0 * sizeof(float) * double(n));
}

void relu_backward(benchmark::State& state, const Backend& b, std::int64_t n) {
    const Shape shape{n};
    const Tensor x = b.upload(shape, random_values(n));
    const Tensor dy = b.upload(shape, random_values(n));
    Tensor dx = b.allocate(shape);
    auto relu = [&] { b.relu_backward(x, dy, dx); };
    if (!warm_up(state, relu, b, dx)) return;
    for (auto _ : state) {
        relu();
        b.synchronize();
    }
    count_per_second(state, "bytes", 3.0 * sizeof(float) * double(n));
}

}  // namespace

void register_relu(const Options& options) {
    for (const Variant& v : variants(options)) {
        if (!implements_relu(*v.backend)) continue;
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
