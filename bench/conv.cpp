// Conv2d benchmarks: every variant, every algorithm it offers (Backend::conv2d_algorithms).
//
// Rows, for the named shapes (N, C, H, W, K, R x S, stride, pad):
//   lenet_conv1  64, 1, 28, 28,  6,  5x5, 1, 2    LeNet's first layer: one input channel
//   lenet_conv2  64, 6, 14, 14, 16,  5x5, 1, 0    its second
//   resnet_3x3   16, 64, 56, 56, 64, 3x3, 1, 1    a ResNet stage-1 layer: GEMM-sized work
//   large_11x11   8, 16, 64, 64, 16, 11x11, 1, 5  a large filter, where FFT pays off
//   conv2d_forward_<algorithm>/<variant>/<shape>           forward alone
//   conv2d_forward_backward_<algorithm>/<variant>/<shape>  forward, backward_data and
//                                                          backward_weights: one training step's
//                                                          conv work, as PyTorch's autograd figure
// and a filter-size sweep at a fixed input (N=8, C=16, H=W=64, K=16, R=S, pad R/2, forward only):
//   conv2d_forward_<algorithm>/<variant>/sweep_r<R>        R = 3, 5, ..., 15
// where FFT's cost stays flat while direct and im2col grow as R^2: the sizes where it overtakes
// them. Counter `flops`: Conv2dShape::flops() per forward call (the direct algorithm's
// multiply-adds, whatever the algorithm does), three times that for forward+backward, as a rate.
// --quick runs two small shapes and a short sweep; simulator variants run one tiny shape; cpu_naive
// runs only the shapes of at most `naive_most_flops` (the LeNet layers).
// Run: triptych_bench --benchmark_filter='conv2d_forward.*/cpu_eigen_omp/'
#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

// cpu_naive's seven loops run at about 1 GFLOP/s: ResNet's layer (3.7 GFLOP per forward) would take
// half a minute per forward+backward row, with its warm-up.
constexpr double naive_most_flops = 1e8;

struct NamedConv {
    std::string name;
    Conv2dShape shape;
};

// Conv2dShape from (N, C, H, W, K, R = S, stride, pad), square filters, strides and padding.
Conv2dShape square(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K,
                   std::int64_t R, std::int64_t stride, std::int64_t pad) {
    return Conv2dShape{.N = N,
                       .C = C,
                       .H = H,
                       .W = W,
                       .K = K,
                       .R = R,
                       .S = R,
                       .stride_h = stride,
                       .stride_w = stride,
                       .pad_h = pad,
                       .pad_w = pad};
}

std::vector<NamedConv> conv_shapes(const Variant& v, const Options& options) {
    if (v.kind == DeviceKind::Simulator) return {{"tiny", square(1, 2, 8, 8, 2, 3, 1, 1)}};
    if (options.quick)
        return {{"small_3x3", square(2, 4, 16, 16, 4, 3, 1, 1)},
                {"small_5x5_stride2", square(2, 3, 15, 15, 4, 5, 2, 2)}};
    return {{"lenet_conv1", square(64, 1, 28, 28, 6, 5, 1, 2)},
            {"lenet_conv2", square(64, 6, 14, 14, 16, 5, 1, 0)},
            {"resnet_3x3", square(16, 64, 56, 56, 64, 3, 1, 1)},
            {"large_11x11", square(8, 16, 64, 64, 16, 11, 1, 5)}};
}

std::vector<NamedConv> sweep_shapes(const Variant& v, const Options& options) {
    if (v.kind == DeviceKind::Simulator) return {};
    const std::int64_t largest = options.quick ? 7 : 15;
    std::vector<NamedConv> shapes;
    for (std::int64_t R = 3; R <= largest; R += 2) {
        const Conv2dShape s = options.quick ? square(1, 2, 16, 16, 2, R, 1, R / 2)
                                            : square(8, 16, 64, 64, 16, R, 1, R / 2);
        shapes.push_back({"sweep_r" + std::to_string(R), s});
    }
    return shapes;
}

// The shapes a variant can afford to run: all of them, but the largest on cpu_naive.
std::vector<NamedConv> affordable(const Variant& v, std::vector<NamedConv> shapes) {
    if (v.label == "cpu_naive")
        std::erase_if(shapes,
                      [](const NamedConv& c) { return c.shape.flops() > naive_most_flops; });
    return shapes;
}

// x, w, b and dy hold random values; y, dx, dw and db are the outputs.
struct ConvTensors {
    Tensor x, w, b, dy, y, dx, dw, db;
    ConvTensors(const Backend& owner, const Conv2dShape& s)
        : x(owner.upload(s.x_shape(), random_values(s.x_shape().elements()))),
          w(owner.upload(s.w_shape(), random_values(s.w_shape().elements()))),
          b(owner.upload(s.b_shape(), random_values(s.K))),
          dy(owner.upload(s.y_shape(), random_values(s.y_shape().elements()))),
          y(owner.allocate(s.y_shape())),
          dx(owner.allocate(s.x_shape())),
          dw(owner.allocate(s.w_shape())),
          db(owner.allocate(s.b_shape())) {}
};

void conv_forward(benchmark::State& state, const Backend& b, ConvAlgorithm algorithm,
                  const Conv2dShape& s) {
    ConvTensors t(b, s);
    auto op = [&] { b.conv2d_forward(s, algorithm, t.x, t.w, t.b, t.y); };
    if (!warm_up(state, op, b, t.y)) return;
    time_calls(state, b, op);
    count_per_second(state, "flops", s.flops());
}

void conv_forward_backward(benchmark::State& state, const Backend& b, ConvAlgorithm algorithm,
                           const Conv2dShape& s) {
    ConvTensors t(b, s);
    auto op = [&] {
        b.conv2d_forward(s, algorithm, t.x, t.w, t.b, t.y);
        b.conv2d_backward_data(s, algorithm, t.dy, t.w, t.dx);
        b.conv2d_backward_weights(s, algorithm, t.x, t.dy, t.dw, t.db);
    };
    // dx is checked: the output a strided layer is likeliest to leave unwritten (inputs that no
    // window reads still get a 0).
    if (!warm_up(state, op, b, t.dx)) return;
    time_calls(state, b, op);
    count_per_second(state, "flops", 3.0 * s.flops());
}

}  // namespace

void register_conv(const Options& options) {
    const Conv2dShape probe = square(1, 1, 3, 3, 1, 3, 1, 1);
    for (const Variant& v : variants(options)) {
        const Backend& b = *v.backend;
        for (const ConvAlgorithm algorithm : b.conv2d_algorithms()) {
            ConvTensors t(b, probe);
            const bool has_forward =
                implements([&] { b.conv2d_forward(probe, algorithm, t.x, t.w, t.b, t.y); });
            const bool has_backward = implements([&] {
                b.conv2d_backward_data(probe, algorithm, t.dy, t.w, t.dx);
                b.conv2d_backward_weights(probe, algorithm, t.x, t.dy, t.dw, t.db);
            });
            const std::string suffix = to_string(algorithm) + "/" + v.label + "/";
            auto add_forward = [&](const NamedConv& c) {
                add("conv2d_forward_" + suffix + c.name,
                    [&b, algorithm, s = c.shape](benchmark::State& st) {
                        conv_forward(st, b, algorithm, s);
                    });
            };
            for (const NamedConv& c : affordable(v, conv_shapes(v, options))) {
                if (has_forward) add_forward(c);
                if (has_forward && has_backward)
                    add("conv2d_forward_backward_" + suffix + c.name,
                        [&b, algorithm, s = c.shape](benchmark::State& st) {
                            conv_forward_backward(st, b, algorithm, s);
                        });
            }
            if (has_forward)
                for (const NamedConv& c : affordable(v, sweep_shapes(v, options))) add_forward(c);
        }
    }
}

}  // namespace triptych::bench
