// Activation benchmarks: ReLU, sigmoid and tanh, forward and backward, over n floats on every
// variant.
//
// Rows: <activation>_forward/<variant>/<n> and <activation>_backward/<variant>/<n> for relu,
// sigmoid and tanh. An activation does a few operations per element it moves, so its speed is
// memory bandwidth: counter `bytes` is what one call must read and write, as a rate in bytes per
// second:
//   forward   reads x, writes y                                     8n bytes
//   backward  reads x (ReLU) or the forward's y (sigmoid, tanh)
//             and dy, writes dx                                     12n bytes
// The report compares it with the copy rows (copy.cpp), the fastest any memory-bound op can go on
// the same device. Sigmoid and tanh compute an exponential per element: where they stay well
// below the copy, arithmetic, not memory, is what limits them.
// Run: triptych_bench --benchmark_filter='(relu|sigmoid|tanh)_'
#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

// One activation's two Backend methods: forward(x, y) and backward(x or y, dy, dx).
struct ActivationOps {
    const char* name;
    void (Backend::*forward)(const Tensor&, Tensor&) const;
    void (Backend::*backward)(const Tensor&, const Tensor&, Tensor&) const;
};

const ActivationOps activations[] = {
    {"relu", &Backend::relu_forward, &Backend::relu_backward},
    {"sigmoid", &Backend::sigmoid_forward, &Backend::sigmoid_backward},
    {"tanh", &Backend::tanh_forward, &Backend::tanh_backward},
};

void forward(benchmark::State& state, const Backend& b, const ActivationOps& a, std::int64_t n) {
    const Tensor x = b.upload(Shape{n}, random_values(n));
    Tensor y = b.allocate(Shape{n});
    auto op = [&] { (b.*a.forward)(x, y); };
    if (!warm_up(state, op, b, y)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", 2.0 * sizeof(float) * double(n));
}

void backward(benchmark::State& state, const Backend& b, const ActivationOps& a, std::int64_t n) {
    const Tensor y = b.upload(Shape{n}, random_values(n));
    const Tensor dy = b.upload(Shape{n}, random_values(n));
    Tensor dx = b.allocate(Shape{n});
    auto op = [&] { (b.*a.backward)(y, dy, dx); };
    if (!warm_up(state, op, b, dx)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", 3.0 * sizeof(float) * double(n));
}

}  // namespace

void register_activations(const Options& options) {
    for (const ActivationOps& a : activations) {
        const std::string name = a.name;
        for (const Variant& v : variants(options)) {
            const Backend& b = *v.backend;
            const Tensor one = b.upload(Shape{1}, std::vector<float>{0.5f});
            Tensor out = b.allocate(Shape{1});
            const bool has_forward = implements([&] { (b.*a.forward)(one, out); });
            const bool has_backward = implements([&] { (b.*a.backward)(one, one, out); });
            for (std::int64_t n : stream_sizes(v.kind, options)) {
                const std::string size = std::to_string(n);
                if (has_forward)
                    add(name + "_forward/" + v.label + "/" + size,
                        [&a, &b, n](benchmark::State& s) { forward(s, b, a, n); });
                if (has_backward)
                    add(name + "_backward/" + v.label + "/" + size,
                        [&a, &b, n](benchmark::State& s) { backward(s, b, a, n); });
            }
        }
    }
}

}  // namespace triptych::bench
