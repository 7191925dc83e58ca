// Bias, the activations (ReLU, sigmoid, tanh, GELU) and softmax, forward and backward: every
// variant against the float64 reference (check/crosscheck.hpp; the activations' tolerances and
// their reasons are in check/activations.cpp), the reference's backward passes against central
// finite differences of its own forward passes, and GELU's tanh approximation against the exact
// GELU.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/activations.hpp"
#include "common/random.hpp"
#include "cpu/naive/activations.hpp"
#include "cpu/naive/bias.hpp"
#include "cpu/naive/softmax.hpp"
#include "tests/finite_difference.hpp"
#include "tests/seed.hpp"
#include "tests/test_backend.hpp"
#include "tests/variants.hpp"

using namespace triptych;
using Catch::Matchers::Approx;
using testing::check_default_cases;
using testing::for_every_variant;
using testing::numerical_gradient;
using testing::random_doubles;
using testing::require_pass;
using testing::weighted_sum;

TEST_CASE(
    "every variant's bias_add and bias_backward match the float64 reference, in place too, and "
    "with NaN and infinities",
    "[bias]") {
    check_default_cases("bias_add");
    check_default_cases("bias_backward");
    // A long batch of one column and one row of many columns: the two ways to split the sums.
    for_every_variant([](const Backend& b) {
        for (const Shape& s : {Shape{100003, 1}, Shape{1, 100003}, Shape{513, 129}}) {
            require_pass(check::check_bias_add(b, s, check::Output::in_place, testing::seed()));
            for (check::Values values : {check::Values::finite, check::Values::non_finite})
                require_pass(check::check_bias_backward(b, s, testing::seed(), values));
        }
    });
}

namespace {

// Column sums in float with a mistake: each NaN of dy taken as 0 (a "nansum"), or each sum
// stopped at its first infinity, so that a later one of the other sign is never added.
enum class SumMistake { skips_nan, stops_at_infinity };

template <SumMistake mistake>
void wrong_column_sums(std::int64_t rows, std::int64_t cols, const float* dy, float* dbias) {
    for (std::int64_t j = 0; j < cols; ++j) {
        float sum = 0;
        for (std::int64_t i = 0; i < rows; ++i) {
            const float value = dy[i * cols + j];
            if (mistake == SumMistake::skips_nan && std::isnan(value)) continue;
            if (mistake == SumMistake::stops_at_infinity && std::isinf(sum)) break;
            sum += value;
        }
        dbias[j] = sum;
    }
}

template <SumMistake mistake>
struct WrongColumnSums : testing::TestBackend {
    WrongColumnSums()
        : TestBackend(mistake == SumMistake::skips_nan ? "skips_nan" : "stops_at_infinity") {
        use_kernel(ops::bias_backward, wrong_column_sums<mistake>);
    }
};

}  // namespace

TEST_CASE(
    "the non-finite check of bias_backward fails column sums that skip NaN or stop at the first "
    "infinity",
    "[bias]") {
    const WrongColumnSums<SumMistake::skips_nan> skips_nan;
    const WrongColumnSums<SumMistake::stops_at_infinity> stops_at_infinity;
    const Shape s{9, 7};
    for (const Backend* wrong : {static_cast<const Backend*>(&skips_nan),
                                 static_cast<const Backend*>(&stops_at_infinity)}) {
        INFO(wrong->name());
        CHECK(check::check_bias_backward(*wrong, s, testing::seed()).comparison.passed);
        CHECK_FALSE(
            check::check_bias_backward(*wrong, s, testing::seed(), check::Values::non_finite)
                .comparison.passed);
    }
}

TEST_CASE(
    "every variant's activations match the float64 reference, in place too, for any length and "
    "at saturation",
    "[activations]") {
    for (Activation a : all_activations) {
        check_default_cases(to_string(a) + "_forward");
        check_default_cases(to_string(a) + "_backward");
    }
    for_every_variant([](const Backend& b) {
        for (Activation a : all_activations)
            for (const Shape& s : {Shape{2}, Shape{3}, Shape{5}, Shape{1000003}}) {
                INFO(to_string(a) << " " << s.str());
                require_pass(check::check_activation_forward(b, a, s, check::Output::separate,
                                                             testing::seed()));
                require_pass(check::check_activation_backward(b, a, s, check::Output::separate,
                                                              testing::seed()));
            }
    });
}

TEST_CASE(
    "every variant's softmax matches the float64 reference and stays finite for logits of "
    "+-1e4, equal rows, rows of length 1 and rows of 100 000",
    "[softmax]") {
    check_default_cases("softmax_forward");
    check_default_cases("softmax_backward");
    for_every_variant([](const Backend& b) {
        // Row lengths around warp and block sizes and around the longest row gpu_tiled's version
        // 3 holds in registers (16 384), batch 1, and a rank-3 tensor (rows = 2 * 3).
        for (const Shape& s :
             {Shape{1, 31}, Shape{1, 32}, Shape{1, 33}, Shape{2, 1023}, Shape{1, 1025},
              Shape{1, 16384}, Shape{1, 16385}, Shape{1, 100000}, Shape{2, 3, 257}})
            for (check::Logits logits :
                 {check::Logits::uniform, check::Logits::huge, check::Logits::equal_rows}) {
                require_pass(check::check_softmax_forward(b, s, logits, testing::seed()));
                require_pass(check::check_softmax_backward(b, s, logits, testing::seed()));
            }
    });
}

TEST_CASE(
    "the cross-check catches a ReLU that turns NaN into 0 (x > 0 ? x : 0), and one that leaves an "
    "element it should make NaN unwritten",
    "[relu]") {
    struct NanToZero : testing::TestBackend {
        NanToZero() : TestBackend("nan_to_zero") {
            use_kernel(ops::relu_forward, [](std::int64_t n, const float* x, float* y) {
                for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
            });
        }
    } zero;
    struct SkipsNaN : testing::TestBackend {
        SkipsNaN() : TestBackend("skips_nan") {
            use_kernel(ops::relu_forward, [](std::int64_t n, const float* x, float* y) {
                for (std::int64_t i = 0; i < n; ++i)
                    if (x[i] == x[i]) y[i] = x[i] < 0.0f ? 0.0f : x[i];
            });
        }
    } skips;
    const Shape s{100};
    for (const Backend* b :
         {static_cast<const Backend*>(&zero), static_cast<const Backend*>(&skips)}) {
        INFO(b->name());
        const auto relu = [&](check::Values values) {
            return check::check_activation_forward(*b, Activation::relu, s, check::Output::separate,
                                                   testing::seed(), values);
        };
        CHECK(relu(check::Values::finite).comparison.passed);
        CHECK_FALSE(relu(check::Values::non_finite).comparison.passed);
    }
}

TEST_CASE("the cross-check catches a softmax that forgets to subtract the row max", "[softmax]") {
    // Right for small logits; e^(1e4) = inf turns the +-1e4 rows into NaN.
    struct NoMaxSubtraction : testing::TestBackend {
        NoMaxSubtraction() : TestBackend("no_max_subtraction") {
            use_kernel(ops::softmax_forward,
                       [](std::int64_t rows, std::int64_t cols, const float* x, float* y) {
                           for (std::int64_t i = 0; i < rows; ++i) {
                               float sum = 0;
                               for (std::int64_t j = 0; j < cols; ++j) {
                                   y[i * cols + j] = std::exp(x[i * cols + j]);
                                   sum += y[i * cols + j];
                               }
                               for (std::int64_t j = 0; j < cols; ++j) y[i * cols + j] /= sum;
                           }
                       });
        }
    } broken;
    const Shape s{4, 10};
    CHECK(check::check_softmax_forward(broken, s, check::Logits::uniform, testing::seed())
              .comparison.passed);
    CHECK_FALSE(check::check_softmax_forward(broken, s, check::Logits::huge, testing::seed())
                    .comparison.passed);
}

TEST_CASE("the reference's bias_backward is the derivative of bias_add (finite differences)",
          "[bias][gradient]") {
    Rng rng(testing::seed());
    const std::int64_t rows = 4, cols = 7;
    const std::vector<double> x = random_doubles(rows * cols, rng),
                              dy = random_doubles(rows * cols, rng);
    const std::vector<double> bias = random_doubles(cols, rng);
    // L(bias) = sum_ij dy[i, j] * (x[i, j] + bias[j])
    const auto loss = [&](const std::vector<double>& b) {
        std::vector<double> y(x.size());
        cpu_naive::bias_add<double>(rows, cols, x.data(), b.data(), y.data());
        return weighted_sum(dy, y);
    };
    std::vector<double> dbias(cols);
    cpu_naive::bias_backward<double>(rows, cols, dy.data(), dbias.data());
    CHECK_THAT(dbias, Approx(numerical_gradient(loss, bias)).epsilon(1e-7).margin(1e-9));
}

TEST_CASE(
    "the reference's activation backward passes are the derivatives of their forward passes "
    "(finite differences)",
    "[activations][gradient]") {
    Rng rng(testing::seed());
    const std::int64_t n = 23;
    // [-6, 6): both sides of every activation's bend, and GELU's dip near -0.75.
    const std::vector<double> x = random_doubles(n, rng, -6, 6), dy = random_doubles(n, rng);
    for_each_activation([&](auto act) {
        using Act = decltype(act);
        INFO(to_string(Act::kind));
        const auto loss = [&](const std::vector<double>& input) {
            std::vector<double> y(input.size());
            cpu_naive::activation_forward<Act>(n, input.data(), y.data());
            return weighted_sum(dy, y);
        };
        std::vector<double> y(n), dx(n);
        cpu_naive::activation_forward<Act>(n, x.data(), y.data());
        // From the input or the output, whichever the Backend's backward pass takes.
        const std::vector<double>& in = Act::backward_takes_output ? y : x;
        cpu_naive::activation_backward<Act>(n, in.data(), dy.data(), dx.data());
        CHECK_THAT(dx, Approx(numerical_gradient(loss, x)).epsilon(1e-7).margin(1e-9));
    });
}

TEST_CASE(
    "GELU's tanh approximation is within 5e-4 of the exact GELU x Phi(x), and reaches its limits "
    "beyond |x| = 30, at the infinities and for NaN",
    "[activations][gelu]") {
    // The exact GELU is x Phi(x), Phi the standard normal CDF; the tanh form GPT-2 uses differs
    // from it by at most about 4.7e-4 (near |x| = 2), far below float32's error on a trained net.
    for (int i = -10000; i <= 10000; ++i) {
        const double x = i / 1000.0;
        const double exact = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        INFO("x = " << x);
        REQUIRE(std::abs(Gelu::forward(x) - exact) <= 5e-4);
    }
    // Either side of the cut at |x| = 30 the formula and the limits agree: tanh(u) is +-1 there.
    for (const float x : {29.5f, 30.0f, 30.5f, 1e30f}) {
        INFO("x = " << x);
        CHECK(Gelu::forward(x) == x);
        CHECK(Gelu::forward(-x) == 0.0f);
        CHECK(Gelu::backward(x, 0.25f) == 0.25f);
        CHECK(Gelu::backward(-x, 0.25f) == 0.0f);
    }
    constexpr float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK(Gelu::forward(inf) == inf);
    CHECK(Gelu::forward(-inf) == 0.0f);
    CHECK(std::isnan(Gelu::forward(nan)));
    CHECK(Gelu::backward(inf, 0.5f) == 0.5f);
    CHECK(Gelu::backward(-inf, 0.5f) == 0.0f);
    CHECK(std::isnan(Gelu::backward(nan, 0.5f)));
    CHECK(std::isnan(Gelu::backward(1.0f, nan)));
}

TEST_CASE("the reference's softmax backward is the derivative of its forward (finite differences)",
          "[softmax][gradient]") {
    Rng rng(testing::seed());
    for (const std::int64_t cols : {1, 2, 9}) {
        const std::int64_t rows = 3;
        INFO("cols " << cols);
        const std::vector<double> x = random_doubles(rows * cols, rng, -3, 3);
        const std::vector<double> dy = random_doubles(rows * cols, rng);
        const auto loss = [&](const std::vector<double>& input) {
            std::vector<double> y(input.size());
            cpu_naive::softmax_forward<double>(rows, cols, input.data(), y.data());
            return weighted_sum(dy, y);
        };
        std::vector<double> y(x.size()), dx(x.size());
        cpu_naive::softmax_forward<double>(rows, cols, x.data(), y.data());
        cpu_naive::softmax_backward<double>(rows, cols, y.data(), dy.data(), dx.data());
        CHECK_THAT(dx, Approx(numerical_gradient(loss, x)).epsilon(1e-7).margin(1e-9));
    }
}
