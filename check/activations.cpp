// The activations' descriptions (ReLU, sigmoid, tanh, GELU: every one of common/activations.hpp):
// their checks against the float64 formula (cpu_naive's loops instantiated in double), their
// tolerances, derived below one activation at a time, and their benchmark rows.
//
// Every tolerance is a first-order rounding-error bound (Higham, Accuracy and Stability of
// Numerical Algorithms), doubled as every bound of the cross-check: doubling keeps a correct result
// from failing on the reference's own rounding, a fused multiply-add or a different but equally
// good order of operations, while a wrong index, a missing term or a NaN still fails. u = 2^-24;
// "ulp" is at most 2u relative.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "check/case_helpers.hpp"
#include "check/crosscheck.hpp"
#include "common/activations.hpp"
#include "common/errors.hpp"
#include "cpu/naive/activations.hpp"

namespace triptych::check {
namespace {

// ReLU's inputs: uniform in [-1, 1) with every 7th value exactly 0, where the convention (gradient
// 0 at 0) matters. With non-finite values planted (every 7th from index 3, so never on a 0), NaN
// must stay NaN and infinities give their limits.
std::vector<float> relu_input(std::int64_t count, Rng& rng) {
    std::vector<float> x = random_values(count, rng);
    for (std::size_t i = 0; i < x.size(); i += 7) x[i] = 0.0f;
    return x;
}

// The other activations' x: uniform in [-12, 12) (sigmoid and tanh saturate within it), with every
// 11th element one of the values where a careless formula breaks: 0, +-20 (saturated), +-100
// (e^100 overflows float, so e^-x in the sigmoid is +inf; GELU's x^3 is 1e6) and +-1e4 (GELU's
// x^3 is 1e12, its tanh exactly +-1).
std::vector<float> activation_input(std::int64_t count, Rng& rng) {
    std::vector<float> x = random_values(count, rng, -12.0f, 12.0f);
    constexpr float special[] = {0.0f, 20.0f, -20.0f, 100.0f, -100.0f, 1e4f, -1e4f};
    for (std::size_t i = 0, k = 0; i < x.size(); i += 11, ++k)
        x[i] = special[k % std::size(special)];
    return x;
}

// The outputs sigmoid and tanh give, for their backward passes, which read y.
std::vector<float> sigmoid_output(std::int64_t count, Rng& rng) {
    return random_values(count, rng, 0.0f, 1.0f);
}
std::vector<float> tanh_output(std::int64_t count, Rng& rng) {
    return random_values(count, rng, -1.0f, 1.0f);
}

// GELU's u = sqrt(2/pi) (x + 0.044715 x^3) and t = tanh(u), in double.
struct GeluParts {
    double u, t;
};
GeluParts gelu_parts(double x) {
    const double u = Gelu::sqrt_2_over_pi * (x + Gelu::cubic * x * x * x);
    return {u, std::tanh(u)};
}

// What a check of one activation needs: its inputs, forward and backward, and each pass's bound
// |out - ref| <= rtol * scale(in, ...) + atol, with the text the table shows.
struct ActivationCheck {
    std::vector<float> (*forward_input)(std::int64_t count, Rng& rng);
    std::vector<float> (*backward_input)(std::int64_t count, Rng& rng);
    double forward_rtol;
    double (*forward_scale)(double x, double y);
    std::string forward_tolerance;
    double backward_rtol;
    double (*backward_scale)(double in, double dy);
    std::string backward_tolerance;
    double atol;
    // The largest |act'(x)| over all x: how much an error in x can grow through the activation.
    double max_slope;
};

ActivationCheck facts(Activation activation) {
    switch (activation) {
        // ReLU: both directions are exact in float32, max and select do not round.
        case Activation::relu:
            return {relu_input, relu_input, 0.0, nullptr, "exact", 0.0, nullptr, "exact", 0.0, 1.0};
        // Sigmoid, forward: e^-x within 2 ulp (4u; CUDA documents 2 ulp for expf, glibc's is below
        // 1 ulp, Eigen's vectorised exp measured 2.4u), then 1 + e and 1 / (...) round once each,
        // and the relative error of e reaches y damped by e / (1 + e) <= 1: 6u |y|; doubled:
        // 12u |y|. Where y underflows (x < -87) only an absolute 2^-126 is asked. Fast-math __expf
        // is not this accurate for large |x| and fails here.
        // Backward, y uniform in [0, 1): dy * y * (1 - y) is three roundings, 3u |dx|. Measured
        // against |dy| (|y| + y^2), the size of the terms before any cancellation, the bound also
        // holds for dy * (y - y * y); doubled: 6u |dy| (|y| + y^2).
        case Activation::sigmoid:
            return {activation_input,
                    sigmoid_output,
                    12 * unit_roundoff,
                    [](double, double y) { return std::abs(y); },
                    "12u |y| + 2^-126",
                    6 * unit_roundoff,
                    [](double y, double dy) { return std::abs(dy) * (std::abs(y) + y * y); },
                    "6u |dy| (|y| + y^2)",
                    smallest_normal,
                    0.25};  // y (1 - y) <= 1/4
        // Tanh, forward: tanh within 2 ulp (4u; CUDA's tanhf documents 2 ulp, glibc's tanhf is
        // below 1 ulp, Eigen's vectorised rational approximation measured 4.8u, i.e. 2.4 ulp),
        // doubled: 8u |y|, plus 2^-126 as for the sigmoid.
        // Backward, y uniform in [-1, 1): dy * (1 - y^2) is three roundings, and 1 - y^2 cancels
        // for |y| near 1, so the bound is against |dy| (1 + y^2); doubled: 6u |dy| (1 + y^2).
        case Activation::tanh:
            return {activation_input,
                    tanh_output,
                    8 * unit_roundoff,
                    [](double, double y) { return std::abs(y); },
                    "8u |y| + 2^-126",
                    6 * unit_roundoff,
                    [](double y, double dy) { return std::abs(dy) * (1.0 + y * y); },
                    "6u |dy| (1 + y^2)",
                    smallest_normal,
                    1.0};
        // GELU, forward, y = h (1 + t), h = x/2 (exact), t = tanh(u):
        //   u = k (x + c x^3) is five roundings of terms of one sign: |du| <= 5u |u|;
        //   t is within 2 ulp of tanh of the computed u (4u |t|; Eigen's 4.8u is inside the
        //   doubling), and carries du as (1 - t^2) du: |dt| <= u (5 (1 - t^2) |u| + 4 |t|);
        //   1 + t and h (1 + t) round once each: u |y| twice.
        //   |dy| <= u (|h| (5 (1 - t^2) |u| + 4 |t|) + 2 |y|); doubled. Measured against |h|, not
        //   |y|: for x < 0, 1 + t cancels, and the error of t is what remains of y.
        // Backward, d = (1 + t)/2 + q, q = h (1 - t^2) k (1 + 3c x^2), dx = dy d:
        //   (1 + t)/2 carries dt/2 and a rounding; 1 - t^2 carries 2 |t| dt and a rounding
        //   (it cancels too); q's own products round 5 times; the sum and dy d once each:
        //   |ddx| <= u |dy| ((e_t + |1 + t|)/2 + m (2 |t| e_t + 1) + 5 |q| + 2 |d|), with
        //   e_t = 5 (1 - t^2) |u| + 4 |t| and m = |h| k (1 + 3c x^2); doubled.
        case Activation::gelu:
            return {activation_input,
                    activation_input,
                    2 * unit_roundoff,
                    [](double x, double y) {
                        const GeluParts g = gelu_parts(x);
                        return std::abs(x / 2) *
                                   (5 * (1 - g.t * g.t) * std::abs(g.u) + 4 * std::abs(g.t)) +
                               2 * std::abs(y);
                    },
                    "2u(|x/2|(5(1-t^2)|u|+4|t|)+2|y|)",
                    2 * unit_roundoff,
                    [](double x, double dy) {
                        const GeluParts g = gelu_parts(x);
                        const double e_t = 5 * (1 - g.t * g.t) * std::abs(g.u) + 4 * std::abs(g.t);
                        const double m =
                            std::abs(x / 2) * Gelu::sqrt_2_over_pi * (1 + 3 * Gelu::cubic * x * x);
                        const double q = m * (1 - g.t * g.t);
                        const double d = (1 + g.t) / 2 + (x < 0 ? -q : q);
                        return std::abs(dy) *
                               ((e_t + std::abs(1 + g.t)) / 2 + m * (2 * std::abs(g.t) * e_t + 1) +
                                5 * q + 2 * std::abs(d));
                    },
                    "2u|dy|(...) (see activations.cpp)",
                    smallest_normal,
                    1.13};  // the slope peaks at 1.12899... near x = 2.42 and dips to -0.129
        case Activation::none:
            break;
    }
    throw InvalidArgument("activation checks: Activation::none has no kernel to check");
}

std::string describe(const Shape& shape, Output output, Values values) {
    std::string detail = output == Output::in_place ? " in place" : "";
    if (values == Values::non_finite) detail += " NaN+-inf";
    return shape.str() + detail;
}

// dy's specials land 3 later than the input's, so that some meet an ordinary input.
void plant_shifted(std::vector<float>& dy) {
    std::rotate(dy.begin(), dy.begin() + std::min<std::size_t>(3, dy.size()), dy.end());
    plant_non_finite(dy);
}

// The float64 reference of one pass: cpu_naive's loop of the activation's formula, in double.
void reference_forward(Activation activation, const std::vector<double>& x,
                       std::vector<double>& y) {
    with_activation(activation, [&](auto act) {
        cpu_naive::activation_forward<decltype(act)>(std::int64_t(x.size()), x.data(), y.data());
    });
}

void reference_backward(Activation activation, const std::vector<double>& in,
                        const std::vector<double>& dy, std::vector<double>& dx) {
    with_activation(activation, [&](auto act) {
        cpu_naive::activation_backward<decltype(act)>(std::int64_t(in.size()), in.data(), dy.data(),
                                                      dx.data());
    });
}

}  // namespace

double activation_forward_bound(Activation activation, double x, double y) {
    if (activation == Activation::none) return 0.0;
    const ActivationCheck f = facts(activation);
    return f.forward_scale ? f.forward_rtol * f.forward_scale(x, y) : 0.0;
}

double activation_max_slope(Activation activation) {
    return activation == Activation::none ? 1.0 : facts(activation).max_slope;
}

CaseResult check_activation_forward(const Backend& backend, Activation activation,
                                    const Shape& shape, Output output, std::uint64_t seed,
                                    Values values) {
    const ActivationCheck f = facts(activation);
    Rng rng(seed);
    std::vector<float> x = f.forward_input(shape.elements(), rng);
    if (values == Values::non_finite) plant_non_finite(x);
    const std::vector<double> wide_x = widen(x);
    std::vector<double> ref(x.size()), scale(x.size());
    reference_forward(activation, wide_x, ref);
    if (f.forward_scale)
        for (std::size_t i = 0; i < x.size(); ++i) scale[i] = f.forward_scale(wide_x[i], ref[i]);

    Tensor X = backend.upload(shape, x);
    Tensor Y = output == Output::in_place ? X : fresh_output(backend, shape, values);
    CaseResult r =
        result_for(backend, to_string(activation) + "_forward", describe(shape, output, values));
    r.seconds = timed(backend, [&] { backend.activation_forward(activation, X, Y); });
    r.tolerance = f.forward_tolerance;
    r.comparison = compare(backend.download(Y), ref, Tolerance{f.forward_rtol, f.atol}, scale);
    return r;
}

CaseResult check_activation_backward(const Backend& backend, Activation activation,
                                     const Shape& shape, Output output, std::uint64_t seed,
                                     Values values) {
    const ActivationCheck f = facts(activation);
    Rng rng(seed);
    std::vector<float> in = f.backward_input(shape.elements(), rng);
    std::vector<float> dy = random_values(shape.elements(), rng);
    if (values == Values::non_finite) {
        plant_non_finite(in);
        plant_shifted(dy);
    }
    const std::vector<double> wide_in = widen(in), wide_dy = widen(dy);
    std::vector<double> ref(in.size()), scale(in.size());
    reference_backward(activation, wide_in, wide_dy, ref);
    if (f.backward_scale)
        for (std::size_t i = 0; i < in.size(); ++i)
            scale[i] = f.backward_scale(wide_in[i], wide_dy[i]);

    const Tensor In = backend.upload(shape, in);
    Tensor dY = backend.upload(shape, dy);
    Tensor dX = output == Output::in_place ? dY : fresh_output(backend, shape, values);
    CaseResult r =
        result_for(backend, to_string(activation) + "_backward", describe(shape, output, values));
    r.seconds = timed(backend, [&] { backend.activation_backward(activation, In, dY, dX); });
    r.tolerance = f.backward_tolerance;
    r.comparison = compare(backend.download(dX), ref, Tolerance{f.backward_rtol, f.atol}, scale);
    return r;
}

namespace {

// Every shape: writing to a fresh tensor, then over the input, then NaN and infinities among the
// inputs.
CheckRun activation_run(Activation activation, bool backward) {
    const std::string op = to_string(activation) + (backward ? "_backward" : "_forward");
    const auto check = backward ? check_activation_backward : check_activation_forward;
    return every_output(op, [activation, check](const Backend& b, const Shape& shape, Output output,
                                                std::uint64_t seed, Values values) {
        return check(b, activation, shape, output, seed, values);
    });
}

// The rows over n floats (the stream sizes): forward reads x and writes y, 8n bytes; backward
// reads x or y and dy and writes dx, 12n. An activation does a few operations per element it
// moves, so its speed is memory bandwidth, which the report sets against the copy of the same
// size; where sigmoid, tanh or GELU stay well below it, arithmetic, not memory, limits them.
BenchRows stream_rows(Activation activation, bool backward) {
    const std::string op = to_string(activation) + (backward ? "_backward" : "_forward");
    const Op kernel = backward ? backward_op(activation).op : forward_op(activation).op;
    return {op,
            "bytes",
            backward ? "12n" : "8n",
            "memory",
            [activation, backward](const BenchContext& c) {
                std::vector<BenchCase> cases;
                for (std::int64_t n : stream_sizes(c.kind, c.quick))
                    cases.push_back({std::to_string(n),
                                     (backward ? 12.0 : 8.0) * double(n),
                                     {},
                                     [activation, backward, n](const Backend& b) {
                                         const Tensor in = b.upload(Shape{n}, bench_values(n));
                                         const Tensor dy = b.upload(Shape{n}, bench_values(n));
                                         Tensor out = b.allocate(Shape{n});
                                         return Workload{
                                             [&b, activation, backward, in, dy, out]() mutable {
                                                 if (backward)
                                                     b.activation_backward(activation, in, dy, out);
                                                 else
                                                     b.activation_forward(activation, in, out);
                                             },
                                             out,
                                             {}};
                                     }});
                return cases;
            },
            {kernel}};
}

}  // namespace

// Default shapes: 1, a prime, sizes off every float4 and block width, and a row of 4097.
std::vector<OpDescription> activation_descriptions() {
    const std::string dims = "D1[,D2,...] (tensor dimensions)";
    const std::vector<std::string> shapes = {"1", "7", "33,65", "4099", "64,4097"};
    std::vector<OpDescription> descriptions;
    for (Activation a : all_activations)
        for (bool backward : {false, true}) {
            const auto key = backward ? backward_op(a).op : forward_op(a).op;
            descriptions.push_back({std::string(op_name(key)),
                                    dims,
                                    shapes,
                                    "64,4097",
                                    activation_run(a, backward),
                                    {key},
                                    {stream_rows(a, backward)}});
        }
    return descriptions;
}

}  // namespace triptych::check
