// The image layers (Conv2d, MaxPool2d, AvgPool2d, Flatten) on every variant: each layer's forward
// and backward against the float64 references (cpu/naive/conv2d.hpp, cpu/naive/pool2d.hpp), the
// gradients of a small network (Conv2d -> pooling -> Flatten) against central finite differences
// of the same network in float64, and the messages of the layers' errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "common/compare.hpp"
#include "common/nn/conv.hpp"
#include "common/nn/flatten.hpp"
#include "common/nn/pool.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "cpu/naive/conv2d.hpp"
#include "cpu/naive/pool2d.hpp"
#include "tests/finite_difference.hpp"
#include "tests/seed.hpp"
#include "tests/variants.hpp"

using namespace triptych;
using Catch::Matchers::Contains;
using testing::random_doubles;

namespace {

// Inputs, weights and dy are O(1) and every output sums at most ~100 products, so float32 results
// are within ~1e-5 of float64, FFT included; a wrong index is off by O(1).
constexpr Tolerance layer_tolerance{1e-4, 1e-4};

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }
// Exact for the values random_doubles draws (floats widened to double).
std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }
std::vector<double> zeros(const Shape& shape) {
    return std::vector<double>(static_cast<std::size_t>(shape.elements()));
}

void check_against(const std::string& what, const Backend& b, const std::vector<float>& out,
                   const std::vector<double>& ref) {
    const Comparison c = compare(out, ref, layer_tolerance);
    INFO(what << " on " << b.name() << ", seed " << testing::seed() << ": " << c.describe());
    CHECK(c.passed);
}

// A Conv2d layer and the input it is given.
struct ConvCase {
    std::int64_t N, H, W;
    nn::Conv2dOptions options;
    Conv2dShape shape() const { return options.shape(N, H, W); }
};

// A pooling layer and the input it is given.
struct PoolCase {
    std::int64_t N, C, H, W;
    nn::Pool2dOptions options;
    Pool2dShape shape() const { return options.shape(N, C, H, W); }
};

enum class Pooling { max, average };

std::unique_ptr<nn::Layer> make_pool(const Backend& b, Pooling pooling,
                                     const nn::Pool2dOptions& options) {
    if (pooling == Pooling::max) return std::make_unique<nn::MaxPool2d>(b, options);
    return std::make_unique<nn::AvgPool2d>(b, options);
}

// y = pool(x) in float64 (the argmax of max pooling is discarded).
std::vector<double> pool_reference(Pooling pooling, const Pool2dShape& s,
                                   const std::vector<double>& x) {
    std::vector<double> y = zeros(s.y_shape()), argmax = zeros(s.y_shape());
    if (pooling == Pooling::max)
        cpu_naive::max_pool2d_forward<double>(s, x.data(), y.data(), argmax.data());
    else
        cpu_naive::avg_pool2d_forward<double>(s, x.data(), y.data());
    return y;
}

// The network Conv2d -> pooling -> Flatten in float64, and the loss L = sum(r * y) whose gradient
// the layers' backward passes compute when the last one is given dy = r.
struct NetworkReference {
    Conv2dShape conv;
    Pool2dShape pool;
    Pooling pooling;

    double loss(const std::vector<double>& x, const std::vector<double>& W,
                const std::vector<double>& b, const std::vector<double>& r) const {
        std::vector<double> features = zeros(conv.y_shape());
        cpu_naive::conv2d_forward<double>(conv, x.data(), W.data(), b.data(), features.data());
        const std::vector<double> y = pool_reference(pooling, pool, features);
        double total = 0;
        for (std::size_t i = 0; i < y.size(); ++i) total += r[i] * y[i];
        return total;
    }
};

}  // namespace

TEST_CASE(
    "Conv2d forward, dx, dW and db match the float64 reference on every variant and "
    "algorithm, for strides 1 to 3, padding and non-square filters",
    "[conv_layers]") {
    const ConvCase cases[] = {
        // Non-square filter, stride 2 down the rows only.
        {2,
         7,
         6,
         {.in_channels = 3,
          .out_channels = 4,
          .kernel_h = 3,
          .kernel_w = 2,
          .stride_h = 2,
          .stride_w = 1,
          .pad_h = 1,
          .pad_w = 1}},
        // Batch 1, C = 1, stride 3, padding more than half the filter.
        {1,
         5,
         4,
         {.in_channels = 1,
          .out_channels = 2,
          .kernel_h = 3,
          .kernel_w = 5,
          .stride_h = 3,
          .stride_w = 2,
          .pad_h = 2,
          .pad_w = 1}},
        // K = 1, a filter as large as the padded input: a single output per image.
        {2,
         3,
         4,
         {.in_channels = 2,
          .out_channels = 1,
          .kernel_h = 5,
          .kernel_w = 4,
          .pad_h = 1,
          .pad_w = 0}},
        // 3x3 and 5x5 at stride 1, padded, on odd sizes: the shapes Winograd computes.
        {2,
         7,
         9,
         {.in_channels = 3,
          .out_channels = 4,
          .kernel_h = 3,
          .kernel_w = 3,
          .pad_h = 1,
          .pad_w = 1}},
        {2,
         9,
         7,
         {.in_channels = 2,
          .out_channels = 3,
          .kernel_h = 5,
          .kernel_w = 5,
          .pad_h = 2,
          .pad_w = 2}},
    };
    testing::for_every_variant([&](const Backend& b) {
        for (const ConvCase& c : cases)
            for (ConvAlgorithm algorithm : b.conv2d_algorithms()) {
                const Conv2dShape s = c.shape();
                // conv_test checks that winograd refuses the others.
                if (!conv_algorithm_applies(algorithm, s)) continue;
                nn::Conv2d conv(b, c.options, testing::seed(), algorithm);
                Rng rng(testing::seed() + 1);
                const std::vector<double> x = random_doubles(s.x_shape().elements(), rng),
                                          bias = random_doubles(s.K, rng),
                                          dy = random_doubles(s.y_shape().elements(), rng),
                                          W = to_double(b.download(conv.weights().value));
                // Non-zero biases, so that the bias path is exercised.
                b.upload(conv.bias().value, to_float(bias));

                std::vector<double> y = zeros(s.y_shape()), dx = zeros(s.x_shape()),
                                    dW = zeros(s.w_shape()), db = zeros(s.b_shape());
                cpu_naive::conv2d_forward<double>(s, x.data(), W.data(), bias.data(), y.data());
                cpu_naive::conv2d_backward_data<double>(s, dy.data(), W.data(), dx.data());
                cpu_naive::conv2d_backward_weights<double>(s, x.data(), dy.data(), dW.data(),
                                                           db.data());

                const std::string what = conv.name() + " on " + s.str();
                check_against(what + " forward", b,
                              b.download(conv.forward(b.upload(s.x_shape(), to_float(x)))), y);
                check_against(what + " dx", b,
                              b.download(conv.backward(b.upload(s.y_shape(), to_float(dy)))), dx);
                check_against(what + " dW", b, b.download(conv.weights().grad), dW);
                check_against(what + " db", b, b.download(conv.bias().grad), db);
            }
    });
}

TEST_CASE(
    "MaxPool2d and AvgPool2d forward and backward match the float64 reference on every "
    "variant, with sizes that are not window multiples, overlapping windows and padding",
    "[conv_layers]") {
    const PoolCase cases[] = {
        // The default 2x2 window at stride 2; H = 5 leaves a row no window covers.
        {2, 3, 5, 6, {}},
        // Overlapping 3x2 windows, padded.
        {1,
         2,
         6,
         5,
         {.window_h = 3, .window_w = 2, .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 1}},
        // Stride 3 with padding on a non-square input.
        {2,
         1,
         4,
         7,
         {.window_h = 3, .window_w = 3, .stride_h = 3, .stride_w = 3, .pad_h = 1, .pad_w = 1}},
    };
    testing::for_every_variant([&](const Backend& b) {
        for (const PoolCase& c : cases)
            for (Pooling pooling : {Pooling::max, Pooling::average}) {
                const Pool2dShape s = c.shape();
                const std::unique_ptr<nn::Layer> pool = make_pool(b, pooling, c.options);
                Rng rng(testing::seed() + 2);
                const std::vector<double> x = random_doubles(s.x_shape().elements(), rng),
                                          dy = random_doubles(s.y_shape().elements(), rng);

                std::vector<double> y = zeros(s.y_shape()), dx = zeros(s.x_shape());
                if (pooling == Pooling::max) {
                    std::vector<double> argmax = zeros(s.y_shape());
                    cpu_naive::max_pool2d_forward<double>(s, x.data(), y.data(), argmax.data());
                    cpu_naive::max_pool2d_backward<double>(s, dy.data(), argmax.data(), dx.data());
                } else {
                    cpu_naive::avg_pool2d_forward<double>(s, x.data(), y.data());
                    cpu_naive::avg_pool2d_backward<double>(s, dy.data(), dx.data());
                }

                const std::string what = pool->name() + " on " + s.str();
                check_against(what + " forward", b,
                              b.download(pool->forward(b.upload(s.x_shape(), to_float(x)))), y);
                check_against(what + " dx", b,
                              b.download(pool->backward(b.upload(s.y_shape(), to_float(dy)))), dx);
            }
    });
}

TEST_CASE(
    "Conv2d -> MaxPool2d or AvgPool2d -> Flatten: dx, dW and db match float64 finite "
    "differences of the network on every variant",
    "[conv_layers]") {
    const nn::Conv2dOptions conv_options{
        .in_channels = 2, .out_channels = 3, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
    const Conv2dShape conv_shape = conv_options.shape(2, 6, 7);
    const nn::Pool2dOptions pool_options{};  // 2x2 at stride 2 over 6x7: the last column dropped
    const Pool2dShape pool_shape =
        pool_options.shape(conv_shape.N, conv_shape.K, conv_shape.P(), conv_shape.Q());
    // The network is piecewise linear (linear between changes of a window's argmax), so central
    // differences carry no Taylor error and h can be small: 1e-7 leaves rounding at ~1e-9 and makes
    // a step across an argmax change (two candidates within ~1e-7) practically impossible.
    const double h = 1e-7;
    testing::for_every_variant([&](const Backend& b) {
        for (Pooling pooling : {Pooling::max, Pooling::average}) {
            std::vector<std::unique_ptr<nn::Layer>> layers;
            layers.push_back(std::make_unique<nn::Conv2d>(b, conv_options, testing::seed()));
            layers.push_back(make_pool(b, pooling, pool_options));
            layers.push_back(std::make_unique<nn::Flatten>(b));
            std::vector<nn::Parameter*> conv_parameters = layers.front()->parameters();
            nn::Parameter& weights = *conv_parameters[0];
            nn::Parameter& bias = *conv_parameters[1];

            Rng rng(testing::seed() + 3);
            const std::vector<double> X = random_doubles(conv_shape.x_shape().elements(), rng),
                                      B = random_doubles(conv_shape.K, rng),
                                      R = random_doubles(pool_shape.y_shape().elements(), rng),
                                      W = to_double(b.download(weights.value));
            b.upload(bias.value, to_float(B));

            const Tensor* y = nullptr;
            const Tensor x = b.upload(conv_shape.x_shape(), to_float(X));
            for (const auto& layer : layers) y = &layer->forward(y == nullptr ? x : *y);
            REQUIRE(y->shape() ==
                    Shape{pool_shape.N, pool_shape.C * pool_shape.P() * pool_shape.Q()});
            const Tensor dy = b.upload(y->shape(), to_float(R));
            const Tensor* dx = &dy;
            for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer)
                dx = &(*layer)->backward(*dx);

            const NetworkReference ref{conv_shape, pool_shape, pooling};
            using testing::numerical_gradient;
            const auto dx_ref =
                numerical_gradient([&](auto& v) { return ref.loss(v, W, B, R); }, X, h);
            const auto dW_ref =
                numerical_gradient([&](auto& v) { return ref.loss(X, v, B, R); }, W, h);
            const auto db_ref =
                numerical_gradient([&](auto& v) { return ref.loss(X, W, v, R); }, B, h);
            const std::string what =
                layers[0]->name() + " -> " + layers[1]->name() + " -> " + layers[2]->name();
            check_against(what + " dx", b, b.download(*dx), dx_ref);
            check_against(what + " dW", b, b.download(weights.grad), dW_ref);
            check_against(what + " db", b, b.download(bias.grad), db_ref);
        }
    });
}

TEST_CASE(
    "Conv2d initialises its weights from the seed within the He or Glorot limit, with "
    "fan_in = C*R*S",
    "[conv_layers]") {
    const Backend& b = backend("cpu_naive");
    const nn::Conv2dOptions relu_options{
        .in_channels = 4, .out_channels = 6, .kernel_h = 5, .kernel_w = 5};
    nn::Conv2d relu_layer(b, relu_options, 7);
    nn::Conv2d same_seed(b, relu_options, 7);
    nn::Conv2dOptions tanh_options = relu_options;
    tanh_options.followed_by = Activation::tanh;
    nn::Conv2d tanh_layer(b, tanh_options, 8);

    const std::vector<float> w = b.download(relu_layer.weights().value);
    CHECK(w == b.download(same_seed.weights().value));
    const double he = std::sqrt(6.0 / 100), glorot = std::sqrt(6.0 / (100 + 150));
    double largest = 0;
    for (float v : w) largest = std::max(largest, double(std::abs(v)));
    CHECK(largest <= he);
    CHECK(largest > 0.9 * he);  // 600 draws come close to the limit
    for (float v : b.download(tanh_layer.weights().value)) CHECK(std::abs(v) <= glorot);
    for (float v : b.download(relu_layer.bias().value)) CHECK(v == 0.0f);
}

TEST_CASE(
    "The image layers reject an input that is not (N, C, H, W), and Conv2d one with the "
    "wrong channel count, naming the layer and the shape",
    "[conv_layers][errors]") {
    const Backend& b = backend("cpu_naive");
    nn::Conv2d conv(b, {.in_channels = 3, .out_channels = 4});
    nn::MaxPool2d max_pool(b);
    nn::AvgPool2d avg_pool(b);
    nn::Flatten flatten(b);
    const Tensor rank3 = b.allocate(Shape{2, 3, 5});
    const Tensor two_channels = b.allocate(Shape{2, 2, 5, 5});

    CHECK_THROWS_MATCHES(
        conv.forward(rank3), InvalidArgument,
        Catch::Matchers::Message("conv2d 3->4 3x3 stride 1,1 pad 0,0 direct: the input has shape "
                                 "[2, 3, 5], expected rank 4 (N, C, H, W)"));
    CHECK_THROWS_MATCHES(conv.forward(two_channels), InvalidArgument,
                         Catch::Matchers::Message(
                             "conv2d 3->4 3x3 stride 1,1 pad 0,0 direct: the input [2, 2, 5, 5] "
                             "has 2 channels, the layer expects 3"));
    CHECK_THROWS_WITH(max_pool.forward(rank3),
                      Contains("max_pool2d 2x2 stride 2,2 pad 0,0") && Contains("[2, 3, 5]"));
    CHECK_THROWS_WITH(avg_pool.forward(rank3),
                      Contains("avg_pool2d 2x2 stride 2,2 pad 0,0") && Contains("[2, 3, 5]"));
    CHECK_THROWS_WITH(flatten.forward(b.allocate(Shape{6})),
                      Contains("flatten") && Contains("[6]") && Contains("rank >= 2"));
    // An image smaller than the filter, or bad options, fail before anything is allocated.
    CHECK_THROWS_WITH(conv.forward(b.allocate(Shape{1, 3, 2, 5})), Contains("larger than"));
    CHECK_THROWS_AS(nn::MaxPool2d(b, {.stride_h = 0}), InvalidArgument);
    CHECK_THROWS_AS(nn::Conv2d(b, {.in_channels = 0}), InvalidArgument);
}

TEST_CASE(
    "Conv2d uses the backend's preferred algorithm unless told, and an algorithm the "
    "backend lacks is Unsupported, naming those it has",
    "[conv_layers][errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        const std::vector<ConvAlgorithm> have = b.conv2d_algorithms();
        if (have.empty()) continue;  // a variant with no conv2d: the layer cannot be built
        CHECK(nn::Conv2d(b, {}).algorithm() == have.front());
    }
    const Backend& naive = backend("cpu_naive");
    nn::Conv2d fft(naive, {}, 1, ConvAlgorithm::fft);
    const Tensor x = naive.allocate(Shape{1, 1, 4, 4});
    CHECK_THROWS_AS(fft.forward(x), Unsupported);
    CHECK_THROWS_WITH(fft.forward(x), Contains("no fft algorithm") && Contains("it has: direct"));
}

TEST_CASE(
    "Flatten views (N, C, H, W) as (N, C*H*W) and its backward views dy as (N, C, H, W), "
    "sharing the buffer and preserving the data",
    "[conv_layers]") {
    testing::for_every_variant([&](const Backend& b) {
        nn::Flatten flatten(b);
        Rng rng(testing::seed() + 4);
        std::vector<float> values(2 * 3 * 4 * 5);
        rng.uniform(values);
        const Tensor x = b.upload(Shape{2, 3, 4, 5}, values);

        const Tensor& y = flatten.forward(x);
        CHECK(y.shape() == Shape{2, 60});
        CHECK(y.data() == x.data());
        CHECK(b.download(y) == values);

        const Tensor& dx = flatten.backward(y);
        CHECK(dx.shape() == Shape{2, 3, 4, 5});
        CHECK(dx.data() == x.data());
        CHECK(b.download(dx) == values);
    });
}

TEST_CASE(
    "Tensor::reshaped shares the buffer under a shape of as many elements and rejects any "
    "other, naming both shapes",
    "[conv_layers][errors]") {
    const Backend& b = backend("cpu_naive");
    const Tensor t = b.upload(Shape{2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
    const Tensor view = t.reshaped(Shape{3, 1, 2});
    CHECK(view.shape() == Shape{3, 1, 2});
    CHECK(view.data() == t.data());
    CHECK(view.owner() == t.owner());
    CHECK_THROWS_MATCHES(t.reshaped(Shape{4, 2}), InvalidArgument,
                         Catch::Matchers::Message("reshaped: a tensor of shape [2, 3] (6 "
                                                  "elements) cannot be viewed as [4, 2] (8 "
                                                  "elements)"));
}
