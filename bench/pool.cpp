// Pooling benchmarks: max_pool2d and avg_pool2d, forward and backward, on every variant.
//
// Rows: max_pool2d_forward/<variant>/<case>, and likewise max_pool2d_backward, avg_pool2d_forward,
// avg_pool2d_backward, where <case> is NxCxHxW_w<window>s<stride> (no padding):
//   64x6x28x28_w2s2       LeNet's first pooling layer on a batch of 64 (2x2, stride 2: no overlap)
//   16x64x112x112_w3s2    ResNet's stem pooling on a batch of 16 (3x3, stride 2: windows overlap)
// A GPU adds each with 8 times the batch, so that launch overhead no longer hides the bandwidth.
// Counter `bytes`, what one call must read and write, each tensor once (x, dx: N·C·H·W floats;
// y, dy, argmax: N·C·P·Q floats):
//   max forward    reads x, writes y and argmax     4·(NCHW + 2·NCPQ) bytes
//   max backward   reads dy and argmax, writes dx   4·(2·NCPQ + NCHW) bytes
//   avg forward    reads x, writes y                4·(NCHW + NCPQ) bytes
//   avg backward   reads dy, writes dx              4·(NCPQ + NCHW) bytes
// Pooling does a few comparisons or additions per float moved, so the best variants approach the
// copy bandwidth; overlapping windows (3x3 stride 2) read each input up to four times, from cache.
// Run: triptych_bench --benchmark_filter='pool2d'
#include <string>
#include <vector>

#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

// A square window with its stride and no padding, over a batch of square planes.
struct PoolCase {
    std::int64_t N, C, H, W, window, stride;

    Pool2dShape shape() const { return Pool2dShape{N, C, H, W, window, window, stride, stride}; }
    // "64x6x28x28_w2s2", as the row names spell it.
    std::string str() const {
        return std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(H) + "x" +
               std::to_string(W) + "_w" + std::to_string(window) + "s" + std::to_string(stride);
    }
    double x_floats() const { return double(N * C * H * W); }
    double y_floats() const { return double(shape().y_shape().elements()); }
};

std::vector<PoolCase> pool_cases(DeviceKind kind, const Options& options) {
    if (kind == DeviceKind::Simulator) return {{2, 3, 28, 28, 2, 2}, {1, 4, 30, 30, 3, 2}};
    if (options.quick) return {{8, 6, 28, 28, 2, 2}, {2, 16, 56, 56, 3, 2}};
    std::vector<PoolCase> cases{{64, 6, 28, 28, 2, 2}, {16, 64, 112, 112, 3, 2}};
    if (kind == DeviceKind::Gpu)
        cases.insert(cases.end(), {{512, 6, 28, 28, 2, 2}, {128, 64, 112, 112, 3, 2}});
    return cases;
}

void max_pool2d_forward(benchmark::State& state, const Backend& b, PoolCase c) {
    const Pool2dShape s = c.shape();
    const Tensor x = b.upload(s.x_shape(), random_values(s.x_shape().elements()));
    Tensor y = b.allocate(s.y_shape());
    Tensor argmax = b.allocate(s.y_shape());
    auto op = [&] { b.max_pool2d_forward(s, x, y, argmax); };
    if (!warm_up(state, op, b, argmax)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", sizeof(float) * (c.x_floats() + 2.0 * c.y_floats()));
}

void max_pool2d_backward(benchmark::State& state, const Backend& b, PoolCase c) {
    const Pool2dShape s = c.shape();
    const Tensor x = b.upload(s.x_shape(), random_values(s.x_shape().elements()));
    const Tensor dy = b.upload(s.y_shape(), random_values(s.y_shape().elements()));
    Tensor y = b.allocate(s.y_shape());
    Tensor argmax = b.allocate(s.y_shape());
    b.max_pool2d_forward(s, x, y, argmax);  // real argmax indices, as training passes them
    Tensor dx = b.allocate(s.x_shape());
    auto op = [&] { b.max_pool2d_backward(s, dy, argmax, dx); };
    if (!warm_up(state, op, b, dx)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", sizeof(float) * (2.0 * c.y_floats() + c.x_floats()));
}

void avg_pool2d_forward(benchmark::State& state, const Backend& b, PoolCase c) {
    const Pool2dShape s = c.shape();
    const Tensor x = b.upload(s.x_shape(), random_values(s.x_shape().elements()));
    Tensor y = b.allocate(s.y_shape());
    auto op = [&] { b.avg_pool2d_forward(s, x, y); };
    if (!warm_up(state, op, b, y)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", sizeof(float) * (c.x_floats() + c.y_floats()));
}

void avg_pool2d_backward(benchmark::State& state, const Backend& b, PoolCase c) {
    const Pool2dShape s = c.shape();
    const Tensor dy = b.upload(s.y_shape(), random_values(s.y_shape().elements()));
    Tensor dx = b.allocate(s.x_shape());
    auto op = [&] { b.avg_pool2d_backward(s, dy, dx); };
    if (!warm_up(state, op, b, dx)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", sizeof(float) * (c.y_floats() + c.x_floats()));
}

}  // namespace

void register_pool(const Options& options) {
    using Body = void (*)(benchmark::State&, const Backend&, PoolCase);
    struct Op {
        const char* name;
        Body body;
        std::function<void(const Backend&)> try_once;
    };
    // One 2x2 window over a 2x2 plane, for `implements`.
    const Pool2dShape tiny{1, 1, 2, 2, 2, 2, 2, 2};
    const std::vector<Op> ops{
        {"max_pool2d_forward", max_pool2d_forward,
         [&](const Backend& b) {
             const Tensor x = b.upload(tiny.x_shape(), random_values(4));
             Tensor y = b.allocate(tiny.y_shape()), argmax = b.allocate(tiny.y_shape());
             b.max_pool2d_forward(tiny, x, y, argmax);
         }},
        {"max_pool2d_backward", max_pool2d_backward,
         [&](const Backend& b) {
             const Tensor dy = b.upload(tiny.y_shape(), std::vector<float>{1.0f});
             const Tensor argmax = b.upload(tiny.y_shape(), std::vector<float>{0.0f});
             Tensor dx = b.allocate(tiny.x_shape());
             b.max_pool2d_backward(tiny, dy, argmax, dx);
         }},
        {"avg_pool2d_forward", avg_pool2d_forward,
         [&](const Backend& b) {
             const Tensor x = b.upload(tiny.x_shape(), random_values(4));
             Tensor y = b.allocate(tiny.y_shape());
             b.avg_pool2d_forward(tiny, x, y);
         }},
        {"avg_pool2d_backward", avg_pool2d_backward,
         [&](const Backend& b) {
             const Tensor dy = b.upload(tiny.y_shape(), std::vector<float>{1.0f});
             Tensor dx = b.allocate(tiny.x_shape());
             b.avg_pool2d_backward(tiny, dy, dx);
         }},
    };
    for (const Variant& v : variants(options)) {
        const Backend& b = *v.backend;
        for (const Op& op : ops) {
            if (!implements([&] { op.try_once(b); })) continue;
            for (const PoolCase c : pool_cases(v.kind, options))
                add(std::string(op.name) + "/" + v.label + "/" + c.str(),
                    [&b, body = op.body, c](benchmark::State& s) { body(s, b, c); });
        }
    }
}

}  // namespace triptych::bench
