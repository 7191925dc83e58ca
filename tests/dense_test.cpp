// The Dense layer on every variant: its forward pass against the float64 reference
// act(x * W^T + b), and its three gradients (dx, dW, db) against central finite differences of
// that reference.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "common/activations.hpp"
#include "common/compare.hpp"
#include "common/nn/dense.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "cpu/naive/dense.hpp"
#include "tests/finite_difference.hpp"
#include "tests/seed.hpp"
#include "tests/variants.hpp"

using namespace triptych;

namespace {

// The layer in float64 (cpu_naive's dense_forward, the reference), and the loss whose gradient the
// layer's backward computes when it is given dy = r: L = sum(r * y).
struct Reference {
    DenseShape shape;

    std::vector<double> forward(const std::vector<double>& x, const std::vector<double>& W,
                                const std::vector<double>& b) const {
        std::vector<double> y(shape.batch * shape.out);
        cpu_naive::dense_forward<double>(shape, x.data(), W.data(), b.data(), y.data());
        return y;
    }
    double loss(const std::vector<double>& x, const std::vector<double>& W,
                const std::vector<double>& b, const std::vector<double>& r) const {
        const std::vector<double> y = forward(x, W, b);
        double total = 0;
        for (std::size_t i = 0; i < y.size(); ++i) total += r[i] * y[i];
        return total;
    }
};

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Every value involved is O(1) and every sum has at most a few dozen terms, so float32 results
// are within ~1e-6 of float64; 1e-4 leaves room, while a wrong formula is off by O(1).
constexpr Tolerance layer_tolerance{1e-4, 1e-5};

void expect_close(const char* what, const std::vector<float>& out, const std::vector<double>& ref,
                  const std::string& variant, Activation activation) {
    const Comparison c = compare(out, ref, layer_tolerance);
    INFO(what << " on " << variant << ", activation " << to_string(activation) << ", seed "
              << testing::seed() << ": " << c.describe());
    CHECK(c.passed);
}

}  // namespace

TEST_CASE(
    "Dense forward and its three gradients match float64 finite differences on every "
    "variant, for every activation",
    "[dense]") {
    const std::int64_t batch = 3, in = 7, out = 5;
    testing::for_every_variant([&](const Backend& b) {
        const std::string variant = b.name();
        // Every activation, GELU among them: the one whose backward needs z, which Dense keeps.
        std::vector<Activation> activations{Activation::none};
        activations.insert(activations.end(), std::begin(all_activations),
                           std::end(all_activations));
        for (Activation activation : activations) {
            nn::Dense layer(b, in, out, activation, testing::seed());
            // Non-zero biases, so that db and the bias path are exercised.
            Rng rng(testing::seed() + 1);
            std::vector<float> bias(out), x(batch * in), r(batch * out);
            rng.uniform(bias);
            rng.uniform(x);
            rng.uniform(r);
            b.upload(layer.bias().value, bias);

            std::vector<double> X = widen(x), W = widen(b.download(layer.weights().value)),
                                B = widen(bias), R = widen(r);
            const Reference ref{DenseShape{batch, in, out, activation}};

            const Tensor x_tensor = b.upload(Shape{batch, in}, x);
            expect_close("forward", b.download(layer.forward(x_tensor)), ref.forward(X, W, B),
                         variant, activation);

            const Tensor dy = b.upload(Shape{batch, out}, r);
            const std::vector<float> dx = b.download(layer.backward(dy));
            using testing::numerical_gradient;
            const auto dx_ref =
                numerical_gradient([&](auto& v) { return ref.loss(v, W, B, R); }, X);
            const auto dW_ref =
                numerical_gradient([&](auto& v) { return ref.loss(X, v, B, R); }, W);
            const auto db_ref =
                numerical_gradient([&](auto& v) { return ref.loss(X, W, v, R); }, B);
            expect_close("dx", dx, dx_ref, variant, activation);
            expect_close("dW", b.download(layer.weights().grad), dW_ref, variant, activation);
            expect_close("db", b.download(layer.bias().grad), db_ref, variant, activation);
        }
    });
}

TEST_CASE("Dense initialises its weights from the seed within the He or Glorot limit", "[dense]") {
    const Backend& b = backend("cpu_naive");
    nn::Dense relu_layer(b, 100, 10, Activation::relu, 7);
    nn::Dense same_seed(b, 100, 10, Activation::relu, 7);
    nn::Dense tanh_layer(b, 100, 10, Activation::tanh, 8);
    const std::vector<float> w = b.download(relu_layer.weights().value);
    CHECK(w == b.download(same_seed.weights().value));
    const double he = std::sqrt(6.0 / 100), glorot = std::sqrt(6.0 / 110);
    double largest = 0;
    for (float v : w) largest = std::max(largest, double(std::abs(v)));
    CHECK(largest <= he);
    CHECK(largest > 0.9 * he);  // 1000 draws come close to the limit
    for (float v : b.download(tanh_layer.weights().value)) CHECK(std::abs(v) <= glorot);
    for (float v : b.download(relu_layer.bias().value)) CHECK(v == 0.0f);
}

TEST_CASE(
    "an activation layer's forward and backward match float64 finite differences on every "
    "variant, for every activation",
    "[dense][activations]") {
    const Shape shape{3, 11};
    testing::for_every_variant([&](const Backend& b) {
        for (Activation activation : all_activations) {
            nn::ActivationLayer layer(b, activation);
            Rng rng(testing::seed());
            std::vector<float> x(static_cast<std::size_t>(shape.elements())), r(x.size());
            rng.uniform(x, -3.0f, 3.0f);
            rng.uniform(r);
            // The reference: the activation's formula (common/activations.hpp) in float64.
            const auto forward = [&](const std::vector<double>& input) {
                std::vector<double> y(input.size());
                with_activation(activation, [&](auto act) {
                    for (std::size_t i = 0; i < input.size(); ++i)
                        y[i] = decltype(act)::forward(input[i]);
                });
                return y;
            };
            const std::vector<double> X = widen(x), R = widen(r);
            const Tensor x_tensor = b.upload(shape, x);
            expect_close("forward", b.download(layer.forward(x_tensor)), forward(X), b.name(),
                         activation);
            const Tensor dy = b.upload(shape, r);
            const auto dx_ref = testing::numerical_gradient(
                [&](auto& v) {
                    const std::vector<double> y = forward(v);
                    double total = 0;
                    for (std::size_t i = 0; i < y.size(); ++i) total += R[i] * y[i];
                    return total;
                },
                X);
            expect_close("dx", b.download(layer.backward(dy)), dx_ref, b.name(), activation);
        }
    });
}
