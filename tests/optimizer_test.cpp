// The optimizers (SGD with momentum and Nesterov, Adam and AdamW, RMSprop) on every variant:
// several steps against the float64 reference (check/optimizer_checks.cpp has the inputs and the
// tolerance); against the update rules as published, written out here in closed form for inputs
// where they have one, independently of common/optimizer_rule.hpp; and bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/compare.hpp"
#include "common/errors.hpp"
#include "common/optimizer_rule.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "cpu/naive/optimizer.hpp"
#include "tests/seed.hpp"
#include "tests/test_backend.hpp"
#include "tests/variants.hpp"

using namespace triptych;
using Catch::Matchers::Contains;
using testing::check_default_cases;
using testing::for_every_variant;

TEST_CASE(
    "every variant's SGD (plain, weight decay, momentum, Nesterov) matches the float64 reference "
    "over 5 steps, on odd tensor sizes, both models' parameters and 130 tensors at once",
    "[optimizer]") {
    check_default_cases("sgd");
}

TEST_CASE(
    "every variant's Adam (plain, L2 weight decay, AdamW) matches the float64 reference over 5 "
    "steps, weights and both running means",
    "[optimizer]") {
    check_default_cases("adam");
}

TEST_CASE(
    "every variant's RMSprop (plain, momentum with weight decay) matches the float64 reference "
    "over 5 steps, weights and state",
    "[optimizer]") {
    check_default_cases("rmsprop");
}

namespace {

constexpr double u = 0x1p-24;  // float32's unit roundoff

// The weights and state tensors of one parameter tensor after some steps.
struct After {
    std::vector<float> w;
    std::vector<std::vector<float>> states;
};

// Steps 1, 2, ... of `config` on backend b, one per gradient, on one parameter tensor that starts
// at w0 with its state tensors at 0.
After run_steps(const Backend& b, const OptimizerConfig& config, const std::vector<float>& w0,
                const std::vector<std::vector<float>>& gradients) {
    const Shape shape{std::int64_t(w0.size())};
    Tensor value = b.upload(shape, w0);
    Tensor grad = b.allocate(shape);
    std::vector<Tensor> states;
    for (int s = 0; s < config.state_tensors(); ++s)
        states.push_back(b.upload(shape, std::vector<float>(w0.size(), 0.0f)));
    Backend::OptimizerTensor tensor{&value, &grad};
    for (std::size_t s = 0; s < states.size(); ++s) tensor.state[s] = &states[s];
    for (std::size_t k = 0; k < gradients.size(); ++k) {
        b.upload(grad, gradients[k]);
        b.optimizer_step(config, std::int64_t(k + 1), {&tensor, 1});
    }
    After after{b.download(value), {}};
    for (const Tensor& s : states) after.states.push_back(b.download(s));
    return after;
}

// n values of random sign whose magnitudes are spread evenly over the decades from 10^low to
// 10^high (log-uniform), so that the rules are seen on gradients of every size.
std::vector<float> signed_magnitudes(std::size_t n, Rng& rng, float low, float high) {
    std::vector<float> exponents(n), signs(n);
    rng.uniform(exponents, low, high);
    rng.uniform(signs);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = std::copysign(std::pow(10.0f, exponents[i]), signs[i]);
    return v;
}

std::vector<float> uniform(std::size_t n, Rng& rng) {
    std::vector<float> v(n);
    rng.uniform(v);
    return v;
}

// Checks `out` against `expected` on variant b: |out - expected| <= rtol * scale, NaN failing.
void check_close(const Backend& b, const std::string& what, const std::vector<float>& out,
                 const std::vector<double>& expected, double rtol,
                 const std::vector<double>& scale) {
    const Comparison c = compare(out, expected, Tolerance{rtol, 0.0}, scale);
    INFO(what << " on " << b.name() << ", seed " << testing::seed() << ": " << c.describe());
    CHECK(c.passed);
}

}  // namespace

// Kingma and Ba, Adam (ICLR 2015), section 2.1: at t = 1 the bias-corrected means are m^ = g and
// v^ = g^2, so the step is lr * g / (|g| + eps): lr * sign(g) for any |g| >> eps. Without the
// bias correction it would be lr * 0.1 g / (sqrt(0.001) |g|) = 3.16 lr sign(g).
TEST_CASE(
    "the first Adam step moves every weight by lr * sign(g) whatever the gradient's size, and "
    "sets the means to (1 - beta1) g and (1 - beta2) g^2",
    "[optimizer]") {
    Rng rng(testing::seed());
    const std::size_t n = 1000;
    const std::vector<float> w0 = uniform(n, rng);
    const std::vector<float> g = signed_magnitudes(n, rng, -3.0f, 2.0f);  // 1e-3 to 1e2
    const OptimizerConfig config{.kind = OptimizerKind::adam, .lr = 0.01f};
    const double lr = config.lr, eps = config.eps, beta1 = config.beta1, beta2 = config.beta2;

    std::vector<double> w1(n), m(n), s(n), scale_w(n), scale_m(n), scale_s(n);
    for (std::size_t i = 0; i < n; ++i) {
        w1[i] = w0[i] - lr * g[i] / (std::abs(g[i]) + eps);
        m[i] = (1 - beta1) * g[i];
        s[i] = (1 - beta2) * g[i] * g[i];
        scale_w[i] = std::abs(w0[i]) + lr;
        scale_m[i] = std::abs(m[i]);
        scale_s[i] = s[i];
    }
    // A handful of roundings on each: the means are two products and a sum (1 - beta in float is
    // exact); the step adds a bias correction, a square root, eps, a division, lr and the
    // subtraction. 16u leaves room for all, relative to what each is made of.
    for_every_variant([&](const Backend& b) {
        const After after = run_steps(b, config, w0, {g});
        check_close(b, "weights", after.w, w1, 16 * u, scale_w);
        check_close(b, "mean", after.states[0], m, 16 * u, scale_m);
        check_close(b, "mean square", after.states[1], s, 16 * u, scale_s);
    });
}

// Adam's bias correction 1 - beta^t cancels while beta^t is close to 1: rounding beta^t to float
// before the subtraction keeps only the bits left after it (for beta2 = 0.999 at t = 10, a relative
// error of 6e-6 in 1 - beta2^t). The rule computes it in double and rounds once.
TEST_CASE(
    "Adam's bias corrections 1 - beta^t are the float64 values rounded once to float, for every "
    "step of a long run",
    "[optimizer]") {
    const OptimizerConfig config{.kind = OptimizerKind::adam, .lr = 0.01f};
    for (std::int64_t t = 1; t <= 20000; ++t) {
        const OptimizerRule<float> rule = optimizer_rule<float>(config, t);
        const float expected1 = float(1.0 - std::pow(double(config.beta1), double(t)));
        const float expected2 = float(1.0 - std::pow(double(config.beta2), double(t)));
        INFO("step " << t);
        REQUIRE(rule.bias_correction1 == expected1);
        REQUIRE(rule.bias_correction2 == expected2);
    }
}

// A captured graph replays its arguments, so the trainer's captured update reads the step's bias
// corrections from memory (Backend::optimizer_step's `corrections`). Those must give the bits the
// corrections computed from the step give, and a wrong tensor must be refused by name.
TEST_CASE(
    "Adam's update reading step t's bias corrections from a tensor gives the bits of step t "
    "computed from the step count, on every variant",
    "[optimizer]") {
    Rng rng(testing::seed());
    const std::int64_t n = 1000;
    const OptimizerConfig config{.kind = OptimizerKind::adam, .lr = 0.01f};
    std::vector<float> w0(n), g(n), m0(n), s0(n);
    rng.uniform(w0, -1, 1);
    rng.uniform(g, -1, 1);
    rng.uniform(m0, -0.1, 0.1);
    rng.uniform(s0, 0.001, 0.01);
    for_every_variant([&](const Backend& b) {
        for (std::int64_t t : {1, 2, 7, 5000}) {
            INFO(b.name() << ", step " << t);
            std::vector<std::vector<float>> results;
            for (bool from_memory : {false, true}) {
                Tensor w = b.upload(Shape{n}, w0), m = b.upload(Shape{n}, m0),
                       s = b.upload(Shape{n}, s0);
                const Tensor grad = b.upload(Shape{n}, g);
                const Backend::OptimizerTensor tensor{&w, &grad, {&m, &s}};
                const OptimizerRule<float> rule = optimizer_rule<float>(config, t);
                const Tensor corrections = b.upload(
                    Shape{2}, std::vector<float>{rule.bias_correction1, rule.bias_correction2});
                // From memory, the step passed is a wrong one: only the tensor may count.
                if (from_memory)
                    b.optimizer_step(config, t + 1, std::span(&tensor, 1), &corrections);
                else
                    b.optimizer_step(config, t, std::span(&tensor, 1));
                results.push_back(b.download(w));
                results.push_back(b.download(m));
                results.push_back(b.download(s));
            }
            for (std::size_t i = 0; i < 3; ++i)
                CHECK(std::memcmp(results[i].data(), results[i + 3].data(),
                                  sizeof(float) * std::size_t(n)) == 0);
        }
        Tensor w = b.upload(Shape{n}, w0), m = b.upload(Shape{n}, m0), s = b.upload(Shape{n}, s0);
        const Tensor grad = b.upload(Shape{n}, g),
                     three = b.upload(Shape{3}, std::vector<float>(3, 1.0f));
        const Backend::OptimizerTensor tensor{&w, &grad, {&m, &s}};
        CHECK_THROWS_WITH(b.optimizer_step(config, 1, std::span(&tensor, 1), &three),
                          Contains("the bias corrections has shape [3], expected [2]"));
    });
}

// Momentum (Polyak's heavy ball, written as PyTorch and Sutskever et al. 2013 do: v = m v + g,
// w -= lr v): with the same g at every step, v_k = g (1 + m + ... + m^(k-1)) = g (1 - m^k) / (1 -
// m), and w_k = w_0 - lr sum_{j<=k} v_j = w_0 - lr g (k - m (1 - m^k) / (1 - m)) / (1 - m).
TEST_CASE(
    "SGD's velocity after k steps of a constant gradient is g (1 - m^k) / (1 - m), the geometric "
    "series, and the weights moved by lr times the sum of the velocities",
    "[optimizer]") {
    Rng rng(testing::seed());
    const std::size_t n = 777;
    const int k = 20;
    const std::vector<float> w0 = uniform(n, rng), g = uniform(n, rng);
    const OptimizerConfig config{.kind = OptimizerKind::sgd, .lr = 0.01f, .momentum = 0.9f};
    const double m = config.momentum, lr = config.lr;

    std::vector<double> v(n), w(n), scale_v(n), scale_w(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = g[i] * (1 - std::pow(m, k)) / (1 - m);
        w[i] = w0[i] - lr * g[i] * (k - m * (1 - std::pow(m, k)) / (1 - m)) / (1 - m);
        scale_v[i] = std::abs(g[i]) / (1 - m);  // |v| never exceeds it
        scale_w[i] = std::abs(w0[i]) + lr * k * scale_v[i];
    }
    // Each step rounds v twice (m v, + g) and w twice (lr v, w -): errors of at most 2u of each
    // scale per step, k steps, doubled.
    for_every_variant([&](const Backend& b) {
        const After after = run_steps(b, config, w0, std::vector<std::vector<float>>(k, g));
        check_close(b, "velocity", after.states[0], v, 4 * k * u, scale_v);
        check_close(b, "weights", after.w, w, 4 * k * u, scale_w);
    });
}

// Tieleman and Hinton, lecture 6.5 (2012), as PyTorch writes it: s = alpha s + (1 - alpha) g^2,
// w -= lr g / (sqrt(s) + eps). From s = 0 the first step divides by sqrt(1 - alpha) |g| + eps:
// lr / sqrt(0.01) = 10 lr in the direction of -g, whatever the gradient's size.
TEST_CASE(
    "RMSprop's first step is lr g / (sqrt(1 - alpha) |g| + eps), and its mean square "
    "(1 - alpha) g^2",
    "[optimizer]") {
    Rng rng(testing::seed());
    const std::size_t n = 1000;
    const std::vector<float> w0 = uniform(n, rng);
    const std::vector<float> g = signed_magnitudes(n, rng, -3.0f, 2.0f);
    const OptimizerConfig config{.kind = OptimizerKind::rmsprop, .lr = 0.001f};
    const double lr = config.lr, eps = config.eps, alpha = config.alpha;

    std::vector<double> w1(n), s(n), scale_w(n);
    for (std::size_t i = 0; i < n; ++i) {
        w1[i] = w0[i] - lr * g[i] / (std::sqrt(1 - alpha) * std::abs(g[i]) + eps);
        s[i] = (1 - alpha) * g[i] * g[i];
        scale_w[i] = std::abs(w0[i]) + lr / std::sqrt(1 - alpha);
    }
    // As Adam's first step: a handful of roundings, 16u.
    for_every_variant([&](const Backend& b) {
        const After after = run_steps(b, config, w0, {g});
        check_close(b, "weights", after.w, w1, 16 * u, scale_w);
        check_close(b, "mean square", after.states[0], s, 16 * u, s);
    });
}

// Loshchilov and Hutter, Decoupled weight decay regularization (ICLR 2019): AdamW shrinks the
// weights by lr * weight_decay apart from the gradient step, so with g = 0 it only decays them:
// w_1 = w_0 (1 - lr wd). Adam with an L2 penalty adds wd w to the gradient instead, which the
// normalisation turns into a whole step: w_1 = w_0 - lr wd w_0 / (|wd w_0| + eps), about
// w_0 - lr sign(w_0).
TEST_CASE(
    "AdamW decays the weights by lr * weight_decay when the gradient is 0; Adam's L2 weight decay "
    "instead takes a whole normalised step of lr",
    "[optimizer]") {
    Rng rng(testing::seed());
    const std::size_t n = 500;
    const std::vector<float> w0 = signed_magnitudes(n, rng, -1.0f, 0.0f);  // 0.1 to 1
    const std::vector<float> zero(n, 0.0f);
    const OptimizerConfig adamw{.kind = OptimizerKind::adam,
                                .lr = 0.01f,
                                .weight_decay = 0.1f,
                                .decoupled_weight_decay = true};
    OptimizerConfig adam_l2 = adamw;
    adam_l2.decoupled_weight_decay = false;
    const double lr = adamw.lr, wd = adamw.weight_decay, eps = adamw.eps;

    std::vector<double> decayed(n), stepped(n), scale(n);
    for (std::size_t i = 0; i < n; ++i) {
        decayed[i] = w0[i] * (1 - lr * wd);
        stepped[i] = w0[i] - lr * wd * w0[i] / (std::abs(wd * w0[i]) + eps);
        scale[i] = std::abs(w0[i]) + lr;
    }
    // The two results differ by about lr (1 - wd |w_0|) >= 0.009: 16u of the scale is 2e-6.
    for_every_variant([&](const Backend& b) {
        const After w = run_steps(b, adamw, w0, {zero});
        check_close(b, "AdamW weights", w.w, decayed, 16 * u, scale);
        const std::vector<double> zeros(n, 0.0);
        check_close(b, "AdamW mean", w.states[0], zeros, 0.0, zeros);  // 0 exactly
        check_close(b, "Adam (L2) weights", run_steps(b, adam_l2, w0, {zero}).w, stepped, 16 * u,
                    scale);
    });
}

namespace {

// An optimizer with a classic mistake: the bias correction of step 1 at every step, AdamW's decay
// applied as an L2 penalty, Adam's two running means swapped, or elements whose gradient is NaN
// or infinite left alone (as a mixed-precision gradient scaler would skip a whole step; done
// inside the optimizer, it hides a diverging run).
enum class Mistake { first_step_forever, coupled_decay, swapped_states, skips_non_finite };

template <Mistake mistake>
void sloppy_step(const OptimizerRule<float>& right, std::span<const OptimizerSlot> slots) {
    OptimizerRule<float> rule = right;
    if (mistake == Mistake::coupled_decay) rule.decoupled_weight_decay = false;
    if (mistake == Mistake::first_step_forever) {
        rule.bias_correction1 = 1.0f - rule.beta1;
        rule.bias_correction2 = 1.0f - rule.beta2;
    }
    const bool swap = mistake == Mistake::swapped_states;
    for (const OptimizerSlot& t : slots) {
        if (mistake == Mistake::skips_non_finite) {
            const auto at = [](float* p, std::int64_t i) { return p ? p + i : nullptr; };
            for (std::int64_t i = 0; i < t.n; ++i)
                if (std::isfinite(t.grad[i]))
                    cpu_naive::optimizer_step(rule, 1, t.value + i, t.grad + i, at(t.state0, i),
                                              at(t.state1, i));
            continue;
        }
        cpu_naive::optimizer_step(rule, t.n, t.value, t.grad, swap ? t.state1 : t.state0,
                                  swap ? t.state0 : t.state1);
    }
}

template <Mistake mistake>
struct SloppyOptimizer : testing::TestBackend {
    SloppyOptimizer() : TestBackend("sloppy_optimizer") {
        use_kernel(ops::optimizer_step, sloppy_step<mistake>);
    }
};

bool all_passed(const std::vector<check::CaseResult>& results) {
    for (const check::CaseResult& r : results)
        if (!r.comparison.passed) return false;
    return true;
}

}  // namespace

TEST_CASE(
    "the cross-check catches a bias correction stuck at step 1, AdamW's decay taken as L2, and "
    "swapped running means",
    "[optimizer]") {
    const OptimizerConfig adamw{.kind = OptimizerKind::adam,
                                .lr = 0.01f,
                                .weight_decay = 0.1f,
                                .decoupled_weight_decay = true};
    const std::vector<std::int64_t> sizes{1, 7, 1000};
    const SloppyOptimizer<Mistake::first_step_forever> first_step_forever;
    const SloppyOptimizer<Mistake::coupled_decay> coupled_decay;
    const SloppyOptimizer<Mistake::swapped_states> swapped_states;
    const std::pair<const char*, const Backend*> sloppy[] = {
        {"bias correction of step 1", &first_step_forever},
        {"AdamW's decay as L2", &coupled_decay},
        {"running means swapped", &swapped_states}};
    for (const auto& [mistake, b] : sloppy) {
        INFO("mistake: " << mistake);
        CHECK_FALSE(all_passed(check::check_optimizer(*b, adamw, sizes, 5, testing::seed())));
    }
    // ...while the same code without the mistake passes, on one step as on five.
    const Backend& reference = backend("cpu_naive");
    CHECK(all_passed(check::check_optimizer(reference, adamw, sizes, 1, testing::seed())));
    CHECK(all_passed(check::check_optimizer(reference, adamw, sizes, 5, testing::seed())));
}

TEST_CASE(
    "the non-finite check of every optimizer fails one that skips the elements whose gradient is "
    "NaN or infinite",
    "[optimizer]") {
    const SloppyOptimizer<Mistake::skips_non_finite> skips;
    const std::vector<std::int64_t> sizes{1, 7, 1000};
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam, OptimizerKind::rmsprop})
        for (const OptimizerConfig& config : check::optimizer_check_configs(kind)) {
            INFO(config.str());
            CHECK(all_passed(check::check_optimizer(skips, config, sizes, 5, testing::seed())));
            CHECK_FALSE(all_passed(check::check_optimizer(skips, config, sizes, 5, testing::seed(),
                                                          check::Values::non_finite)));
            // One step: the planted gradient is the first, and still caught.
            CHECK_FALSE(all_passed(check::check_optimizer(skips, config, sizes, 1, testing::seed(),
                                                          check::Values::non_finite)));
        }
}

TEST_CASE(
    "optimizer_step rejects bad hyperparameters, a step below 1, a gradient of another shape and "
    "a missing or extra state tensor, naming the op and the values",
    "[optimizer][errors]") {
    for_every_variant([](const Backend& b) {
        INFO(b.name());
        Tensor w = b.allocate(Shape{5});
        const Tensor g = b.upload(Shape{5}, std::vector<float>(5, 0.5f));
        const Tensor wrong_g = b.allocate(Shape{6});
        Tensor s0 = b.upload(Shape{5}, std::vector<float>(5, 0.0f));
        Tensor s1 = b.upload(Shape{5}, std::vector<float>(5, 0.0f));
        const Backend::OptimizerTensor plain{&w, &g};
        const auto step = [&](const OptimizerConfig& config, std::int64_t k,
                              Backend::OptimizerTensor t) {
            b.optimizer_step(config, k, {&t, 1});
        };

        const OptimizerConfig zero_lr{.kind = OptimizerKind::sgd, .lr = 0.0f};
        CHECK_THROWS_AS(step(zero_lr, 1, plain), InvalidArgument);
        CHECK_THROWS_WITH(step(zero_lr, 1, plain), Contains("optimizer sgd") &&
                                                       Contains("lr must be > 0") &&
                                                       Contains("got 0"));
        const OptimizerConfig nan_lr{.kind = OptimizerKind::adam,
                                     .lr = std::numeric_limits<float>::quiet_NaN()};
        CHECK_THROWS_WITH(step(nan_lr, 1, plain), Contains("optimizer adam") && Contains("lr"));
        const OptimizerConfig nesterov{.kind = OptimizerKind::sgd, .nesterov = true};
        CHECK_THROWS_AS(step(nesterov, 1, plain), InvalidArgument);
        CHECK_THROWS_WITH(step(nesterov, 1, plain), Contains("nesterov needs momentum > 0"));
        const OptimizerConfig beta_one{.kind = OptimizerKind::adam, .beta1 = 1.0f};
        CHECK_THROWS_WITH(step(beta_one, 1, plain),
                          Contains("betas must be in [0, 1)") && Contains("got 1"));

        const OptimizerConfig sgd{.kind = OptimizerKind::sgd, .lr = 0.1f};
        CHECK_THROWS_AS(step(sgd, 0, plain), InvalidArgument);
        CHECK_THROWS_WITH(step(sgd, 0, plain), Contains("optimizer_step sgd lr=0.1") &&
                                                   Contains("step counts from 1, got 0"));
        CHECK_THROWS_AS(step(sgd, 1, {&w, &wrong_g}), InvalidArgument);
        CHECK_THROWS_WITH(step(sgd, 1, {&w, &wrong_g}),
                          Contains("optimizer_step sgd") &&
                              Contains("tensor 0's gradient has shape [6], expected [5]"));
        CHECK_THROWS_WITH(step(sgd, 1, {&w, &g, {&s0}}),
                          Contains("needs 0 state tensors, state 0 is one too many"));

        const OptimizerConfig adam{.kind = OptimizerKind::adam};
        CHECK_THROWS_AS(step(adam, 1, {&w, &g, {&s0}}), InvalidArgument);
        CHECK_THROWS_WITH(step(adam, 1, {&w, &g, {&s0}}),
                          Contains("optimizer_step adam") &&
                              Contains("needs 2 state tensors, state 1 is missing"));
        Tensor wrong_state = b.allocate(Shape{5, 1});
        CHECK_THROWS_WITH(step(adam, 1, {&w, &g, {&s0, &wrong_state}}),
                          Contains("tensor 0's state has shape [5, 1], expected [5]"));

        // None of these touched the weights: the step is refused before anything runs.
        for (float v : b.download(w)) CHECK(std::isnan(v));
        // Called bare: a GPU variant without optimizers (gpu_vendor) throws Unsupported here,
        // which for_every_variant reports as skipped; anything else fails the test.
        step(adam, 1, {&w, &g, {&s0, &s1}});
    });
}
