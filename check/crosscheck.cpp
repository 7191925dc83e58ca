#include "check/crosscheck.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>

#include "check/case_helpers.hpp"
#include "common/errors.hpp"
#include "common/machine.hpp"
#include "common/random.hpp"
#include "cpu/naive/activations.hpp"
#include "cpu/naive/bias.hpp"
#include "cpu/naive/dense.hpp"
#include "cpu/naive/gemm.hpp"
#include "cpu/naive/losses.hpp"
#include "cpu/naive/reduce.hpp"
#include "cpu/naive/softmax.hpp"

namespace triptych::check {

void require_memory(const std::string& op, const std::string& shape, double bytes) {
    const std::int64_t available = available_memory();
    if (available < 0 || bytes <= double(available)) return;
    const auto gib = [](double b) { return format("%.1f GiB", b / double(1 << 30)); };
    throw InvalidArgument(op + ": --shape '" + shape + "': its check needs at least " + gib(bytes) +
                          " (inputs, outputs and the float64 reference), and this machine has " +
                          gib(double(available)) + " available");
}

std::vector<std::int64_t> parse_sizes(const std::string& op, const std::string& text) {
    std::vector<std::int64_t> sizes;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string part = text.substr(start, comma - start);
        // from_chars takes digits with an optional '-' and nothing else: no spaces, no '+'.
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (error == std::errc::result_out_of_range)
            throw InvalidArgument(op + ": shape '" + text + "': the size " + part +
                                  " is beyond 2^63 - 1 (9223372036854775807)");
        if (part.empty() || error != std::errc() || end != part.data() + part.size())
            throw InvalidArgument(op + ": shape '" + text + "' is not a list of integers ('" +
                                  part + "' is not one)");
        sizes.push_back(value);
        start = comma + 1;
    }
    return sizes;
}

// gemm. Tolerance: a float32 dot product of K terms, summed in any order (loops, tiles, FMA),
// is within gamma_K * sum_k |a_k * b_k| of the exact value, gamma_K ~ K*u (Higham, Accuracy and
// Stability of Numerical Algorithms, 3.1). Scaling by alpha and adding beta*C costs two more
// roundings; we allow twice that: |out - ref| <= 2 (K + 2) u (|alpha| sum|a*b| + |beta c|).
// A tensor-core version rounds A and B to TF32 or BF16 first (KernelVersion::inputs), each with
// relative error at most v = 2^-11 or 2^-8; a product of two rounded inputs is then within
// (2v + v^2) |a*b| of the exact one, and the float sum adds the bound above. Doubled as well:
// 2 ((K + 2) u + 2v + v^2) (|alpha| sum|a*b| + |beta c|). (Tensor cores may add with truncation,
// up to twice u per addition: the doubling covers it. Our kernels round their inputs to nearest
// (cvt.rna); cuBLAS does not say how its TF32 and BF16 modes round them. Truncated inputs would
// have v = 2^-10 or 2^-7, which the doubling also covers, but not with truncated additions on
// top: in that worst case, a failure of gpu_vendor@2 or @3 alone points here.)
// With Values::non_finite, A and B each hold +inf (first element), -inf (last) and a NaN (one
// between): the rule of common/backend.hpp, compare()'s for a non-finite reference, with no
// exception: every element of C whose sum meets one is NaN or that infinity, as the reference.
CaseResult check_gemm(const Backend& backend, const GemmShape& s, std::uint64_t seed,
                      Values values) {
    s.validate();
    Rng rng(seed);
    std::vector<float> a = random_values(s.a_shape().elements(), rng);
    std::vector<float> b = random_values(s.b_shape().elements(), rng);
    const std::vector<float> c = random_values(s.c_shape().elements(), rng);
    if (values == Values::non_finite) {
        plant_three_non_finite(a, rng);
        plant_three_non_finite(b, rng);
    }

    // The reference and, from |A| and |B|, the size of what each element sums.
    std::vector<double> ref = widen(c), scale = widen(c);
    cpu_naive::gemm<double>(s, widen(a).data(), widen(b).data(), ref.data());
    std::vector<double> abs_a = widen(a), abs_b = widen(b);
    for (double& v : abs_a) v = std::abs(v);
    for (double& v : abs_b) v = std::abs(v);
    for (double& v : scale) v = std::abs(v);
    GemmShape magnitude = s;
    magnitude.alpha = std::abs(s.alpha);
    magnitude.beta = std::abs(s.beta);
    cpu_naive::gemm<double>(magnitude, abs_a.data(), abs_b.data(), scale.data());

    const Tensor A = backend.upload(s.a_shape(), a);
    const Tensor B = backend.upload(s.b_shape(), b);
    // beta == 0: C stays NaN (the finite marker of a non-finite case, whose reference has NaN),
    // so reading it (instead of ignoring it) fails the check.
    Tensor C =
        s.beta == 0 ? fresh_output(backend, s.c_shape(), values) : backend.upload(s.c_shape(), c);

    CaseResult r = result_for(backend, "gemm",
                              s.str() + format(" a=%g", s.alpha) + format(" b=%g", s.beta) +
                                  (values == Values::non_finite ? " NaN+-inf" : ""));
    r.seconds = timed(backend, [&] { backend.gemm(s, A, B, C); });
    const KernelVersion* version = backend.version_of(Op::gemm);
    const InputPrecision inputs = version ? version->inputs : InputPrecision::fp32;
    const double v = input_roundoff(inputs);
    const double rtol = 2.0 * (double(s.K + 2) * unit_roundoff + 2.0 * v + v * v);
    r.tolerance = format("%.2g * sum|a*b|", rtol) +
                  (inputs == InputPrecision::fp32 ? "" : " (" + to_string(inputs) + " inputs)");
    r.comparison = compare(backend.download(C), ref, Tolerance{rtol, 0.0}, scale);
    return r;
}

// --- the ops of dense layers ------------------------------------------------------------------
//
// Every tolerance below is a first-order rounding-error bound (Higham, Accuracy and Stability of
// Numerical Algorithms), written next to its check, doubled as for gemm: doubling keeps a correct
// result from failing on the reference's own rounding, a fused multiply-add or a different but
// equally good order of operations, while a wrong index, a missing term or a NaN still fails.
// u = 2^-24. "ulp" is at most 2u relative.

namespace {

// "[33, 65]" plus what distinguishes the case: "[33, 65] in place".
std::string describe(const Shape& shape, const std::string& detail) {
    return detail.empty() ? shape.str() : shape.str() + " " + detail;
}

std::string describe(const Shape& shape, Output output, Values values = Values::finite) {
    std::string detail = output == Output::in_place ? "in place" : "";
    if (values == Values::non_finite) detail += std::string(detail.empty() ? "" : " ") + "NaN+-inf";
    return describe(shape, detail);
}

}  // namespace

// bias_add. Tolerance: y = x + b is one correctly rounded addition, |out - ref| <= u |ref|;
// doubled: 2u |ref|.
CaseResult check_bias_add(const Backend& backend, const Shape& shape, Output output,
                          std::uint64_t seed, Values values) {
    Rng rng(seed);
    std::vector<float> x = random_values(shape.elements(), rng);
    std::vector<float> bias = random_values(shape.columns(), rng);
    if (values == Values::non_finite) {
        plant_non_finite(x);
        plant_non_finite(bias);
    }
    std::vector<double> ref(x.size());
    cpu_naive::bias_add<double>(shape.rows(), shape.columns(), widen(x).data(), widen(bias).data(),
                                ref.data());

    Tensor X = backend.upload(shape, x);
    const Tensor B = backend.upload(Shape{shape.columns()}, bias);
    Tensor Y = output == Output::in_place ? X : fresh_output(backend, shape, values);
    CaseResult r = result_for(backend, "bias_add", describe(shape, output, values));
    r.seconds = timed(backend, [&] { backend.bias_add(X, B, Y); });
    r.tolerance = "2u |y|";
    r.comparison = compare(backend.download(Y), ref, Tolerance{2 * unit_roundoff, 0.0});
    return r;
}

// bias_backward. Tolerance: each column sum adds `rows` terms; in any order the error is at most
// (rows - 1) u sum_i |dy[i, j]| (Higham 4.2); doubled, with room for a final rounding:
// 2 (rows + 1) u sum_i |dy[i, j]|.
// With Values::non_finite, each column sum that meets a NaN, or +inf and -inf together, must be
// NaN, and one that meets one infinity that infinity (compare's rule for a non-finite reference).
CaseResult check_bias_backward(const Backend& backend, const Shape& shape, std::uint64_t seed,
                               Values values) {
    Rng rng(seed);
    std::vector<float> dy = random_values(shape.elements(), rng);
    const std::int64_t rows = shape.rows(), cols = shape.columns();
    if (values == Values::non_finite) {
        constexpr float inf = std::numeric_limits<float>::infinity();
        const std::size_t n = dy.size();
        const bool both_in_column_1 = rows >= 2 && cols >= 3;
        dy[0] = inf;
        if (n > 1) dy[n - 1] = -inf;
        if (both_in_column_1) {
            dy[1] = inf;
            dy[std::size_t((rows - 1) * cols + 1)] = -inf;
        }
        // The NaN: anywhere but the corners, and outside column 1 where that already sums to
        // NaN, so that a kernel that drops it always shows.
        if (n > 2) {
            std::size_t at = 0;
            do at = 1 + rng.next() % (n - 2);
            while (both_in_column_1 && at % std::size_t(cols) == 1);
            dy[at] = std::numeric_limits<float>::quiet_NaN();
        }
    }
    const Shape bias_shape{shape.columns()};
    std::vector<double> ref(static_cast<std::size_t>(shape.columns())), scale(ref.size());
    cpu_naive::bias_backward<double>(shape.rows(), shape.columns(), widen(dy).data(), ref.data());
    cpu_naive::bias_backward<double>(shape.rows(), shape.columns(), absolute(widen(dy)).data(),
                                     scale.data());

    const Tensor dY = backend.upload(shape, dy);
    Tensor dB = fresh_output(backend, bias_shape, values);
    CaseResult r = result_for(backend, "bias_backward",
                              shape.str() + (values == Values::non_finite ? " NaN+-inf" : ""));
    r.seconds = timed(backend, [&] { backend.bias_backward(dY, dB); });
    const double rtol = 2.0 * double(shape.rows() + 1) * unit_roundoff;
    r.tolerance = format("%.2g * sum|dy|", rtol);
    r.comparison = compare(backend.download(dB), ref, Tolerance{rtol, 0.0}, scale);
    return r;
}

std::string to_string(Logits logits) {
    switch (logits) {
        case Logits::uniform:
            return "uniform";
        case Logits::huge:
            return "+-1e4";
        case Logits::equal_rows:
            return "equal rows";
        case Logits::non_finite:
            return "NaN+-inf";
    }
    return "?";
}

namespace {

std::vector<float> make_logits(std::int64_t rows, std::int64_t cols, Logits kind, Rng& rng) {
    switch (kind) {
        case Logits::uniform:
            return random_values(rows * cols, rng, -10.0f, 10.0f);
        case Logits::huge: {
            std::vector<float> x = random_values(rows * cols, rng);
            for (float& v : x) v += (rng.next() & 1) ? 1e4f : -1e4f;
            return x;
        }
        case Logits::equal_rows: {
            std::vector<float> x(static_cast<std::size_t>(rows * cols));
            const std::vector<float> value = random_values(rows, rng, -1e4f, 1e4f);
            for (std::int64_t i = 0; i < rows; ++i)
                std::fill_n(x.begin() + i * cols, cols, value[static_cast<std::size_t>(i)]);
            return x;
        }
        case Logits::non_finite: {
            std::vector<float> x = random_values(rows * cols, rng, -10.0f, 10.0f);
            const float inf = std::numeric_limits<float>::infinity();
            for (std::int64_t i = 0; i < rows; ++i) {
                float* row = x.data() + i * cols;
                const std::int64_t j = static_cast<std::int64_t>(rng.next() % std::uint64_t(cols));
                switch (i % 4) {
                    case 0:  // a NaN: the whole row is NaN
                        row[j] = std::numeric_limits<float>::quiet_NaN();
                        break;
                    case 1:  // +inf: inf - inf is NaN, the whole row is NaN (as PyTorch)
                        row[j] = inf;
                        break;
                    case 2:  // every third logit -inf: probability 0, the rest a softmax
                        for (std::int64_t k = i % 3; k < cols; k += 3) row[k] = -inf;
                        break;
                    case 3:  // all -inf: no finite max, NaN (as PyTorch)
                        std::fill_n(row, cols, -inf);
                        break;
                }
            }
            return x;
        }
    }
    return {};
}

Values values_of(Logits logits) {
    return logits == Logits::non_finite ? Values::non_finite : Values::finite;
}

// The size that bounds the rounding error of a softmax output, in units of 2u (see
// check_softmax_forward): y[i, j] (cols + |x[i, j] - max_i| + 8).
std::vector<double> softmax_error_scale(std::int64_t rows, std::int64_t cols,
                                        const std::vector<double>& x,
                                        const std::vector<double>& y) {
    std::vector<double> scale(x.size());
    for (std::int64_t i = 0; i < rows; ++i) {
        const auto row = x.begin() + i * cols;
        const double max = *std::max_element(row, row + cols);
        for (std::int64_t j = 0; j < cols; ++j) {
            const std::size_t k = static_cast<std::size_t>(i * cols + j);
            // A probability of exactly 0 (a -inf logit) has nothing to be off by: 0, not 0 * inf.
            scale[k] = y[k] == 0.0 ? 0.0 : y[k] * (double(cols) + std::abs(x[k] - max) + 8.0);
        }
    }
    return scale;
}

}  // namespace

// softmax_forward. Tolerance, per element of a row of n = cols:
//   x - max rounds (u |x - max| relative error in e^(x - max)), the exponential is within 2 ulp
//   (4u), the row sum of n positive terms within (n - 1) u of itself plus the terms' own errors
//   (their weighted mean, at most 4u + u ln n), the division one u: about
//   u (n + |x - max| + ln n + 9) y. Doubled, with ln n folded into n:
//   |out - ref| <= 2u y (n + |x - max| + 8) + 2^-126 (outputs below 2^-126 may be flushed).
// The huge and equal-rows logits must come out finite: a NaN or an inf fails any tolerance.
CaseResult check_softmax_forward(const Backend& backend, const Shape& shape, Logits logits,
                                 std::uint64_t seed) {
    Rng rng(seed);
    const std::int64_t R = shape.rows(), C = shape.columns();
    const std::vector<float> x = make_logits(R, C, logits, rng);
    const std::vector<double> wide_x = widen(x);
    std::vector<double> ref(x.size());
    cpu_naive::softmax_forward<double>(R, C, wide_x.data(), ref.data());
    const std::vector<double> scale = softmax_error_scale(R, C, wide_x, ref);

    const Tensor X = backend.upload(shape, x);
    Tensor Y = fresh_output(backend, shape, values_of(logits));
    CaseResult r = result_for(backend, "softmax_forward", describe(shape, to_string(logits)));
    r.seconds = timed(backend, [&] { backend.softmax_forward(X, Y); });
    r.tolerance = "2u y(n+|x-max|+8)";
    r.comparison =
        compare(backend.download(Y), ref, Tolerance{2 * unit_roundoff, smallest_normal}, scale);
    return r;
}

// softmax_backward, y = softmax(logits) rounded to float, dy uniform in [-1, 1). Tolerance:
//   the dot product dy . y is within n u sum_k |dy_k y_k| (Higham 3.1), dy_j - dot and the
//   product with y_j round once each: |error| <= u y_j (|dy_j| + (n + 2) sum_k |dy_k y_k|);
//   doubled, plus 2^-126 for underflowing products.
CaseResult check_softmax_backward(const Backend& backend, const Shape& shape, Logits logits,
                                  std::uint64_t seed) {
    Rng rng(seed);
    const std::int64_t R = shape.rows(), C = shape.columns();
    std::vector<double> softmax(static_cast<std::size_t>(shape.elements()));
    cpu_naive::softmax_forward<double>(R, C, widen(make_logits(R, C, logits, rng)).data(),
                                       softmax.data());
    const std::vector<float> y(softmax.begin(), softmax.end());
    const std::vector<float> dy = random_values(shape.elements(), rng);
    const std::vector<double> wide_y = widen(y), wide_dy = widen(dy);
    std::vector<double> ref(y.size()), scale(y.size());
    cpu_naive::softmax_backward<double>(R, C, wide_y.data(), wide_dy.data(), ref.data());
    for (std::int64_t i = 0; i < R; ++i) {
        double dot_magnitude = 0;  // sum_k |dy_k y_k|
        for (std::int64_t j = 0; j < C; ++j)
            dot_magnitude += std::abs(wide_dy[i * C + j] * wide_y[i * C + j]);
        for (std::int64_t j = 0; j < C; ++j) {
            const std::size_t k = static_cast<std::size_t>(i * C + j);
            scale[k] = wide_y[k] * (std::abs(wide_dy[k]) + double(C + 2) * dot_magnitude);
        }
    }

    const Tensor Y = backend.upload(shape, y);
    const Tensor dY = backend.upload(shape, dy);
    Tensor dX = fresh_output(backend, shape, values_of(logits));
    CaseResult r = result_for(backend, "softmax_backward", describe(shape, to_string(logits)));
    r.seconds = timed(backend, [&] { backend.softmax_backward(Y, dY, dX); });
    r.tolerance = "2u y(|dy|+(n+2)S|dy y|)";
    r.comparison =
        compare(backend.download(dX), ref, Tolerance{2 * unit_roundoff, smallest_normal}, scale);
    return r;
}

// mse_loss, prediction and target uniform in [-1, 1).
//   loss: n non-negative terms (p - t)^2, each within 3u of itself, summed (n - 1)u, divided by n
//         (u): (n + 3) u loss; doubled: 2 (n + 4) u loss.
//   grad: 2 (p - t) / n, at most three roundings (p - t, 2 / n, the product): 3u; doubled: 6u.
std::vector<CaseResult> check_mse_loss(const Backend& backend, const Shape& shape,
                                       std::uint64_t seed, Values values) {
    Rng rng(seed);
    const std::int64_t n = shape.elements();
    std::vector<float> p = random_values(n, rng), t = random_values(n, rng);
    if (values == Values::non_finite) {
        plant_non_finite(p);
        std::rotate(t.begin(), t.begin() + std::min<std::size_t>(3, t.size()), t.end());
        plant_non_finite(t);
    }
    std::vector<double> ref_grad(p.size());
    const double ref_loss =
        cpu_naive::mse_loss<double>(n, widen(p).data(), widen(t).data(), ref_grad.data());

    const Tensor P = backend.upload(shape, p);
    const Tensor T = backend.upload(shape, t);
    Tensor G = fresh_output(backend, shape, values);
    float loss = std::numeric_limits<float>::quiet_NaN();
    const double seconds = timed(backend, [&] { loss = backend.mse_loss(P, T, G); });
    const std::string planted = values == Values::non_finite ? " NaN+-inf" : "";

    CaseResult loss_result = result_for(backend, "mse_loss", describe(shape, "loss" + planted));
    loss_result.seconds = seconds;
    const double rtol = 2.0 * double(n + 4) * unit_roundoff;
    loss_result.tolerance = format("%.2g * loss", rtol);
    loss_result.comparison =
        compare(std::span(&loss, 1), std::span(&ref_loss, 1), Tolerance{rtol, 0.0});

    CaseResult grad_result = result_for(backend, "mse_loss", describe(shape, "grad" + planted));
    grad_result.seconds = seconds;
    grad_result.tolerance = "6u |grad|";
    grad_result.comparison =
        compare(backend.download(G), ref_grad, Tolerance{6 * unit_roundoff, 0.0});
    return {loss_result, grad_result};
}

// softmax_cross_entropy, labels uniform among the classes. With n = classes:
//   loss: per row, the sum of exponentials is within u (n + ln n + 8) of itself as in the
//         softmax, which log turns into an absolute error of that size; forming the loss from
//         max, z[label] and log(sum) rounds at the size of those (|max| + |z[label]|: computing
//         logsumexp first and then subtracting z[label] is allowed); the mean over rows adds
//         (rows + 1) u loss. Doubled:
//         2u ((n + ln n + 8) + mean_i(|max_i| + |z_i[label_i]|) + (rows + 4) loss).
//   grad: (softmax - one_hot) / rows: the softmax's bound, then the subtraction and the division
//         round once each: 2u (y (n + |z - max| + 8) / rows + |grad|) + 2^-126. The |grad| term
//         is not doubled: two roundings are all a division by rows can cost, and a kernel that
//         multiplies by a rounded 1 / rows instead (a third rounding) is caught by it.
std::vector<CaseResult> check_softmax_cross_entropy(const Backend& backend, std::int64_t R,
                                                    std::int64_t C, Logits logits,
                                                    std::uint64_t seed) {
    const Shape shape{R, C};
    Rng rng(seed);
    const std::vector<float> z = make_logits(R, C, logits, rng);
    std::vector<float> labels(static_cast<std::size_t>(R));
    for (float& label : labels) label = static_cast<float>(rng.next() % std::uint64_t(C));

    const std::vector<double> wide_z = widen(z);
    std::vector<double> ref_grad(z.size()), softmax(z.size());
    std::int64_t bad = -1;
    const double ref_loss = cpu_naive::softmax_cross_entropy<double>(
        R, C, wide_z.data(), widen(labels).data(), ref_grad.data(), bad);
    cpu_naive::softmax_forward<double>(R, C, wide_z.data(), softmax.data());

    double logit_magnitude = 0;  // mean_i (|max_i| + |z_i[label_i]|)
    for (std::int64_t i = 0; i < R; ++i) {
        const auto row = wide_z.begin() + i * C;
        logit_magnitude += std::abs(*std::max_element(row, row + C)) +
                           std::abs(row[static_cast<std::int64_t>(labels[std::size_t(i)])]);
    }
    logit_magnitude /= double(R);
    const double loss_scale = double(C) + std::log(double(C)) + 8.0 + logit_magnitude +
                              double(R + 4) * std::abs(ref_loss);
    std::vector<double> grad_scale = softmax_error_scale(R, C, wide_z, softmax);
    for (std::size_t k = 0; k < grad_scale.size(); ++k)
        grad_scale[k] = grad_scale[k] / double(R) + std::abs(ref_grad[k]);

    const Tensor Z = backend.upload(shape, z);
    const Tensor L = backend.upload(Shape{R}, labels);
    Tensor G = fresh_output(backend, shape, values_of(logits));
    float loss = std::numeric_limits<float>::quiet_NaN();
    const double seconds = timed(backend, [&] { loss = backend.softmax_cross_entropy(Z, L, G); });

    const std::string what = describe(shape, to_string(logits));
    CaseResult loss_result = result_for(backend, "softmax_cross_entropy", what + " loss");
    loss_result.seconds = seconds;
    loss_result.tolerance = format("%.2g (see source)", 2 * unit_roundoff * loss_scale);
    loss_result.comparison = compare(std::span(&loss, 1), std::span(&ref_loss, 1),
                                     Tolerance{2 * unit_roundoff, 0.0}, std::span(&loss_scale, 1));

    CaseResult grad_result = result_for(backend, "softmax_cross_entropy", what + " grad");
    grad_result.seconds = seconds;
    grad_result.tolerance = "2u(y(n+|z-max|+8)/R+|g|)";
    grad_result.comparison = compare(backend.download(G), ref_grad,
                                     Tolerance{2 * unit_roundoff, smallest_normal}, grad_scale);
    return {loss_result, grad_result};
}

namespace {

// Dyadic summands are multiples of 2^-k in [-1, 1]. Every partial sum of n of them is a multiple
// of 2^-k no larger than n, which float holds exactly while 2^k n <= 2^24: then every order of
// addition gives the exact sum. k is the finest grid (at most 1/64) that n allows.
constexpr std::int64_t max_exact_dyadic = std::int64_t(1) << 24;

std::vector<float> make_summands(std::int64_t n, Summands summands, Rng& rng) {
    std::vector<float> x = random_values(n, rng);
    const auto at_random = [&](std::int64_t from, std::int64_t to) {  // in [from, to)
        return std::size_t(from + std::int64_t(rng.next() % std::uint64_t(to - from)));
    };
    constexpr float inf = std::numeric_limits<float>::infinity();
    switch (summands) {
        case Summands::uniform:
            break;
        case Summands::dyadic: {
            int k = 6;
            while (k > 0 && (n << k) > max_exact_dyadic) --k;
            const float grid = std::ldexp(1.0f, k);
            for (float& v : x) v = std::round(v * grid) / grid;
            break;
        }
        case Summands::nan:
            x[at_random(0, n)] = std::numeric_limits<float>::quiet_NaN();
            break;
        case Summands::plus_infinity:
            x[at_random(0, n)] = inf;
            break;
        case Summands::minus_infinity:
            x[at_random(0, n)] = -inf;
            break;
        case Summands::both_infinities:
            if (n < 2)
                throw InvalidArgument("sum check: +inf and -inf need 2 elements, got " +
                                      std::to_string(n));
            x[at_random(0, n / 2)] = inf;
            x[at_random(n / 2, n)] = -inf;
            break;
    }
    return x;
}

std::string to_string(Summands summands) {
    switch (summands) {
        case Summands::uniform:
            return "uniform";
        case Summands::dyadic:
            return "dyadic";
        case Summands::nan:
            return "NaN";
        case Summands::plus_infinity:
            return "+inf";
        case Summands::minus_infinity:
            return "-inf";
        case Summands::both_infinities:
            return "+inf -inf";
    }
    return "?";
}

std::string describe(const Shape& shape, Reduction mode, Summands summands) {
    return describe(shape, std::string(mode == Reduction::deterministic ? "determ. " : "fast ") +
                               to_string(summands));
}

// sum (divide_by_n false) or mean (true). Tolerance:
//   uniform summands: in any order, a sum of n terms is within (n - 1) u sum|x| of the exact
//     sum (Higham 4.2); rounding a wider accumulator to float adds u |sum|; doubled:
//     2 (n + 1) u sum|x|. mean divides by n, one more rounding: 2 (n + 2) u sum|x| / n.
//   dyadic summands, n <= 2^24: sum exact; mean one rounding of the exact quotient, doubled 2u.
//   non-finite summands: NaN or the infinity the reference gives, exactly (compare's rule).
CaseResult check_reduction(const Backend& backend, bool divide_by_n, const Shape& shape,
                           Reduction mode, Summands summands, std::uint64_t seed) {
    Rng rng(seed);
    const std::int64_t n = shape.elements();
    const std::vector<float> x = make_summands(n, summands, rng);
    const std::vector<double> wide = widen(x);
    double ref = cpu_naive::sum<double>(n, wide.data());
    double magnitude = cpu_naive::sum<double>(n, absolute(wide).data());
    if (divide_by_n) {
        ref /= double(n);
        magnitude /= double(n);
    }

    const Tensor X = backend.upload(shape, x);
    float out = std::numeric_limits<float>::quiet_NaN();
    CaseResult r =
        result_for(backend, divide_by_n ? "mean" : "sum", describe(shape, mode, summands));
    r.seconds =
        timed(backend, [&] { out = divide_by_n ? backend.mean(X, mode) : backend.sum(X, mode); });
    Tolerance tolerance;
    if (summands == Summands::dyadic && n <= max_exact_dyadic) {
        tolerance = Tolerance{divide_by_n ? 2 * unit_roundoff : 0.0, 0.0};
        magnitude = std::abs(ref);
        r.tolerance = divide_by_n ? "2u |mean|" : "exact";
    } else {
        tolerance.rtol = 2.0 * double(n + (divide_by_n ? 2 : 1)) * unit_roundoff;
        r.tolerance = format("%.2g * sum|x|", tolerance.rtol) + (divide_by_n ? "/n" : "");
    }
    if (!std::isfinite(ref)) r.tolerance = "same NaN/inf";
    r.comparison =
        compare(std::span(&out, 1), std::span(&ref, 1), tolerance, std::span(&magnitude, 1));
    return r;
}

}  // namespace

CaseResult check_sum(const Backend& backend, const Shape& shape, Reduction mode, Summands summands,
                     std::uint64_t seed) {
    return check_reduction(backend, false, shape, mode, summands, seed);
}

CaseResult check_mean(const Backend& backend, const Shape& shape, Reduction mode, Summands summands,
                      std::uint64_t seed) {
    return check_reduction(backend, true, shape, mode, summands, seed);
}

// Tolerance: none. The first deterministic sum is the expected value of every later one.
CaseResult check_sum_repeatable(const Backend& backend, const Shape& shape, int runs,
                                std::uint64_t seed) {
    Rng rng(seed);
    const Tensor X = backend.upload(shape, make_summands(shape.elements(), Summands::uniform, rng));
    const double first = backend.sum(X, Reduction::deterministic);
    std::vector<float> later(static_cast<std::size_t>(runs));
    CaseResult r =
        result_for(backend, "sum", describe(shape, "determ. x" + std::to_string(runs) + " same"));
    r.seconds = timed(backend, [&] {
        for (float& out : later) out = backend.sum(X, Reduction::deterministic);
    });
    r.tolerance = "exact (same bits)";
    r.comparison = compare(later, std::vector<double>(later.size(), first), Tolerance{});
    return r;
}

// dense_forward and dense_forward_unfused; X and b uniform in [-1, 1), W uniform in
// [-1/sqrt(in), 1/sqrt(in)) so that X * W^T + b spans the activations' interesting range.
// Tolerance: z = X * W^T + b is a dot product of in + 1 terms: 2 (in + 2) u (sum|x w| + |b|),
// as for gemm. The activation passes an error in z on multiplied by at most its largest slope L
// (1 for none, ReLU and tanh, 1/4 for the sigmoid, 1.13 for GELU), and adds its own rounding,
// the bound of its forward check at z (check/activations.cpp):
//   |out - ref| <= 2 (in + 2) u L (sum|x w| + |b|) + act's bound at z + 2^-126.
// The unfused path multiplies with the backend's gemm; where that is a tensor-core version, its
// inputs' rounding v widens the first term as in check_gemm: 2 ((in + 2) u + 2v + v^2) L (...).
// With Values::non_finite, x holds +inf, -inf and a NaN (plant_three_non_finite): each output is
// the activation of gemm's non-finite result, by the activation's own rule (relu(-inf) = 0,
// sigmoid(+inf) = 1, ...), compared as compare() does.
CaseResult check_dense_forward(const Backend& backend, const DenseShape& s, DensePath path,
                               std::uint64_t seed, Values values) {
    s.validate();
    Rng rng(seed);
    const float w_range = 1.0f / std::sqrt(float(s.in));
    std::vector<float> x = random_values(s.batch * s.in, rng);
    const std::vector<float> w = random_values(s.out * s.in, rng, -w_range, w_range);
    const std::vector<float> b = random_values(s.out, rng);
    if (values == Values::non_finite) plant_three_non_finite(x, rng);

    const std::vector<double> wide_x = widen(x), wide_w = widen(w), wide_b = widen(b);
    // z = x * W^T + b in float64 (the same layer without its activation), then y = act(z), and
    // sum|x w| + |b|.
    DenseShape linear = s;
    linear.activation = Activation::none;
    std::vector<double> z(static_cast<std::size_t>(s.batch * s.out)), scale(z.size());
    cpu_naive::dense_forward<double>(linear, wide_x.data(), wide_w.data(), wide_b.data(), z.data());
    std::vector<double> ref = z;
    cpu_naive::apply_activation(s.activation, std::int64_t(ref.size()), ref.data());
    cpu_naive::dense_forward<double>(linear, absolute(wide_x).data(), absolute(wide_w).data(),
                                     absolute(wide_b).data(), scale.data());
    const double slope = activation_max_slope(s.activation);
    const bool fused = path == DensePath::fused;
    const KernelVersion* gemm = fused ? nullptr : backend.version_of(Op::gemm);
    const InputPrecision inputs = gemm ? gemm->inputs : InputPrecision::fp32;
    const double v = input_roundoff(inputs);
    const double terms = double(s.in + 2) + (2.0 * v + v * v) / unit_roundoff;  // in units of u
    for (std::size_t i = 0; i < scale.size(); ++i) {
        scale[i] = 2.0 * terms * slope * scale[i] +
                   activation_forward_bound(s.activation, z[i], ref[i]) / unit_roundoff;
        // An infinite z whose activation is a number (relu(-inf) = 0): held to an unbounded
        // scale, as any output whose sum is infinite.
        if (std::isnan(scale[i])) scale[i] = std::numeric_limits<double>::infinity();
    }

    const Tensor X = backend.upload(Shape{s.batch, s.in}, x);
    const Tensor W = backend.upload(Shape{s.out, s.in}, w);
    const Tensor B = backend.upload(Shape{s.out}, b);
    Tensor Y = fresh_output(backend, Shape{s.batch, s.out}, values);
    CaseResult r = result_for(backend, fused ? "dense_forward" : "dense_forward_unfused",
                              s.str() + (values == Values::non_finite ? " NaN+-inf" : ""));
    r.seconds = timed(backend, [&] {
        if (fused)
            backend.dense_forward(X, W, B, s.activation, Y);
        else
            backend.dense_forward_unfused(X, W, B, s.activation, Y);
    });
    r.tolerance = "2(K+2)uL(S|xw|+|b|)+act's" +
                  (inputs == InputPrecision::fp32 ? "" : " (" + to_string(inputs) + " inputs)");
    r.comparison =
        compare(backend.download(Y), ref, Tolerance{unit_roundoff, smallest_normal}, scale);
    return r;
}

namespace {

// The four transpositions of one gemm shape, each with its own alpha and beta, so that the
// beta == 0 path (C not read) and the beta != 0 path are both covered; "M,N,K,NT" runs one of them
// (N: the operand as stored, T: transposed; A's letter first).
std::vector<CaseResult> run_gemm(const Backend& backend, const std::string& text,
                                 std::uint64_t seed) {
    std::string sizes_text = text, only;
    if (const std::size_t comma = text.rfind(','); comma != std::string::npos) {
        const std::string last = text.substr(comma + 1);
        if (last == "NN" || last == "NT" || last == "TN" || last == "TT") {
            only = last;
            sizes_text = text.substr(0, comma);
        } else if (!last.empty() && std::isalpha(static_cast<unsigned char>(last[0]))) {
            throw InvalidArgument("gemm: --shape '" + text + "' ends in '" + last +
                                  "', which is not one of NN, NT, TN, TT (A then B: N as "
                                  "stored, T transposed)");
        }
    }
    const std::vector<std::int64_t> sizes = parse_sizes("gemm", sizes_text);
    if (sizes.size() != 3)
        throw InvalidArgument(
            "gemm: --shape takes M,N,K (3 sizes) and optionally one of NN, NT, "
            "TN, TT, got '" +
            text + "'");
    GemmShape{sizes[0], sizes[1], sizes[2]}.validate();  // its sizes, before they are priced
    {
        // A and B (floats on the host and the backend, doubles for the reference's |A|, |B|), C
        // (the same) and the reference with its scale (doubles).
        const double m = double(sizes[0]), n = double(sizes[1]), k = double(sizes[2]);
        require_memory("gemm", text, 16.0 * (m * k + k * n) + 24.0 * m * n);
    }
    struct Variant {
        bool trans_a, trans_b;
        float alpha, beta;
    };
    const Variant variants[] = {{false, false, 1.0f, 0.0f},
                                {false, true, 1.5f, 0.0f},
                                {true, false, 1.0f, 0.5f},
                                {true, true, -0.75f, 1.25f}};
    std::vector<CaseResult> results;
    for (const Variant& v : variants) {
        if (!only.empty() && only != std::string{v.trans_a ? 'T' : 'N', v.trans_b ? 'T' : 'N'})
            continue;
        GemmShape s{sizes[0], sizes[1], sizes[2], v.trans_a, v.trans_b, v.alpha, v.beta};
        for (Values values : {Values::finite, Values::non_finite})
            results.push_back(check_gemm(backend, s, seed, values));
    }
    return results;
}

using ValuesCheck = CaseResult (*)(const Backend&, const Shape&, std::uint64_t, Values);
using LogitsCheck = CaseResult (*)(const Backend&, const Shape&, Logits, std::uint64_t);

constexpr Logits all_logits[] = {Logits::uniform, Logits::huge, Logits::equal_rows,
                                 Logits::non_finite};

// An op with two cases per tensor shape: its usual values, then non-finite ones.
CheckRun both_values(const std::string& op, ValuesCheck check) {
    return [op, check](const Backend& b, const std::string& text, std::uint64_t seed) {
        const Shape shape = tensor_shape(op, text);
        require_memory(op, text, 16.0 * double(shape.elements()));
        return std::vector{check(b, shape, seed, Values::finite),
                           check(b, shape, seed, Values::non_finite)};
    };
}

// A softmax: each kind of logits.
CheckRun every_logits(const std::string& op, LogitsCheck check) {
    return [op, check](const Backend& b, const std::string& text, std::uint64_t seed) {
        const Shape shape = tensor_shape(op, text);
        require_memory(op, text, 16.0 * double(shape.elements()));
        std::vector<CaseResult> results;
        for (Logits logits : all_logits) results.push_back(check(b, shape, logits, seed));
        return results;
    };
}

std::vector<CaseResult> run_mse_loss(const Backend& b, const std::string& text,
                                     std::uint64_t seed) {
    const Shape shape = tensor_shape("mse_loss", text);
    require_memory("mse_loss", text, 16.0 * double(shape.elements()));
    std::vector<CaseResult> results = check_mse_loss(b, shape, seed, Values::finite);
    for (CaseResult& r : check_mse_loss(b, shape, seed, Values::non_finite))
        results.push_back(std::move(r));
    return results;
}

std::vector<CaseResult> run_softmax_cross_entropy(const Backend& b, const std::string& text,
                                                  std::uint64_t seed) {
    const std::string op = "softmax_cross_entropy";
    const Shape shape = tensor_shape(op, text);
    if (shape.rank() != 2)
        throw InvalidArgument(op + ": --shape takes ROWS,CLASSES (2 sizes), got '" + text + "'");
    require_memory(op, text, 16.0 * double(shape.elements()));
    std::vector<CaseResult> results;
    for (Logits logits : all_logits)
        for (CaseResult& r : check_softmax_cross_entropy(b, shape[0], shape[1], logits, seed))
            results.push_back(std::move(r));
    return results;
}

// sum: both modes on uniform summands, both on dyadic ones where those are exact, then the same
// bits on repeated deterministic runs.
std::vector<CaseResult> run_sum(const Backend& b, const std::string& text, std::uint64_t seed) {
    const Shape shape = tensor_shape("sum", text);
    require_memory("sum", text, 8.0 * double(shape.elements()));  // x on the host and the backend
    std::vector<CaseResult> results;
    for (Summands summands : {Summands::uniform, Summands::dyadic}) {
        if (summands == Summands::dyadic && shape.elements() > max_exact_dyadic) continue;
        for (Reduction mode : {Reduction::deterministic, Reduction::fast})
            results.push_back(check_sum(b, shape, mode, summands, seed));
    }
    results.push_back(check_sum_repeatable(b, shape, 5, seed));
    for (Summands summands : non_finite_summands(shape.elements()))
        for (Reduction mode : {Reduction::deterministic, Reduction::fast})
            results.push_back(check_sum(b, shape, mode, summands, seed));
    return results;
}

std::vector<CaseResult> run_mean(const Backend& b, const std::string& text, std::uint64_t seed) {
    const Shape shape = tensor_shape("mean", text);
    require_memory("mean", text, 8.0 * double(shape.elements()));
    std::vector<CaseResult> results;
    for (Reduction mode : {Reduction::deterministic, Reduction::fast})
        results.push_back(check_mean(b, shape, mode, Summands::uniform, seed));
    if (shape.elements() <= max_exact_dyadic)
        results.push_back(check_mean(b, shape, Reduction::deterministic, Summands::dyadic, seed));
    for (Summands summands : non_finite_summands(shape.elements()))
        results.push_back(check_mean(b, shape, Reduction::deterministic, summands, seed));
    return results;
}

// "none, relu, sigmoid, ...": every activation a dense layer takes.
std::string activation_names() {
    std::string names = "none";
    for (Activation a : all_activations) names += ", " + to_string(a);
    return names;
}

Activation parse_activation(const std::string& op, const std::string& text) {
    Activation activation = Activation::none;
    if (activation_named(text, activation)) return activation;
    throw InvalidArgument(op + ": unknown activation '" + text + "'; known: " + activation_names());
}

// "BATCH,IN,OUT" (every activation) or "BATCH,IN,OUT,ACT".
CheckRun dense_run(const std::string& op, DensePath path) {
    return [op, path](const Backend& b, const std::string& text, std::uint64_t seed) {
        std::string sizes_text = text;
        std::vector<Activation> activations{Activation::none};
        activations.insert(activations.end(), std::begin(all_activations),
                           std::end(all_activations));
        const std::size_t comma = text.rfind(',');
        if (comma != std::string::npos && comma + 1 < text.size() &&
            std::isalpha(static_cast<unsigned char>(text[comma + 1]))) {
            activations = {parse_activation(op, text.substr(comma + 1))};
            sizes_text = text.substr(0, comma);
            if (std::any_of(sizes_text.begin(), sizes_text.end(),
                            [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }))
                throw InvalidArgument(op + ": --shape takes BATCH,IN,OUT[,ACT], one activation " +
                                      "at most, got '" + text + "'");
        }
        const std::vector<std::int64_t> sizes = parse_sizes(op, sizes_text);
        if (sizes.size() != 3)
            throw InvalidArgument(op + ": --shape takes BATCH,IN,OUT[,ACT], got '" + text + "'");
        DenseShape{sizes[0], sizes[1], sizes[2]}.validate();  // its sizes, before they are priced
        {
            // As gemm's: x and W as floats and doubles, y and its reference.
            const double batch = double(sizes[0]), in = double(sizes[1]), out = double(sizes[2]);
            require_memory(op, text, 16.0 * (batch * in + in * out) + 24.0 * batch * out);
        }
        std::vector<CaseResult> results;
        for (Values values : {Values::finite, Values::non_finite})
            for (Activation a : activations)
                results.push_back(check_dense_forward(
                    b, DenseShape{sizes[0], sizes[1], sizes[2], a}, path, seed, values));
        return results;
    };
}

}  // namespace

// --- the benchmark rows of the dense-layer ops ---------------------------------------------------
//
// Each row times one call on the benchmarks' seeded inputs (bench_values); its counter is the work
// of that call: flops for GEMM and the dense layer, and for the memory-bound ops the bytes one call
// must read and write, each input once and each output once (n floats, or a rows x cols matrix), so
// that the report can set them against the copy bandwidth of the same size.

namespace {

Tensor bench_tensor(const Backend& b, const Shape& shape) {
    return b.upload(shape, bench_values(shape.elements()));
}

// GEMM C = A * B of square N x N matrices, N a power of two. cpu_naive's loops walk B column by
// column: from N = 1024 on, B's columns no longer stay in cache and a call takes seconds, far more
// than the 8 times N = 512's that the flops alone would give, so it stops at 512
// (triptych_bench --benchmark_filter='gemm/cpu_naive/' times its rows); a GPU needs large matrices
// to fill its SMs; the simulator runs every CUDA thread as a fiber, so only tiny sizes finish in
// reasonable time.
std::vector<BenchCase> gemm_cases(const BenchContext& c) {
    std::vector<std::int64_t> sizes;
    switch (c.kind) {
        case DeviceKind::Gpu:
            sizes = powers_of_two(64, c.quick ? 512 : 8192);
            break;
        case DeviceKind::Simulator:
            sizes = powers_of_two(64, c.quick ? 64 : 128);
            break;
        case DeviceKind::Cpu:
            sizes = powers_of_two(64, c.quick                              ? 256
                                      : c.backend.variant() == "cpu_naive" ? 512
                                                                           : 2048);
            break;
    }
    std::vector<BenchCase> cases;
    for (std::int64_t n : sizes) {
        const GemmShape shape{.M = n, .N = n, .K = n};
        const std::string size = std::to_string(n);
        cases.push_back(
            {size + "x" + size + "x" + size, shape.flops(), {}, [shape](const Backend& b) {
                 const Tensor A = bench_tensor(b, shape.a_shape());
                 const Tensor B = bench_tensor(b, shape.b_shape());
                 Tensor C = b.allocate(shape.c_shape());
                 return Workload{[&b, shape, A, B, C]() mutable { b.gemm(shape, A, B, C); }, C, {}};
             }});
    }
    return cases;
}

// bias_add and bias_backward on (rows, 1024): a layer of 1024 outputs, wide enough for coalesced
// rows on a GPU, rows * 1024 being the stream sizes.
constexpr std::int64_t bias_cols = 1024;

std::vector<BenchCase> bias_add_cases(const BenchContext& c) {
    std::vector<BenchCase> cases;
    for (std::int64_t n : stream_sizes(c.kind, c.quick)) {
        const std::int64_t rows = n / bias_cols;
        cases.push_back(
            {RowsCols{rows, bias_cols}.str(),
             4.0 * (2.0 * double(n) + double(bias_cols)),
             {},
             [rows](const Backend& b) {
                 const Tensor x = bench_tensor(b, Shape{rows, bias_cols});
                 const Tensor bias = bench_tensor(b, Shape{bias_cols});
                 Tensor y = b.allocate(Shape{rows, bias_cols});
                 return Workload{[&b, x, bias, y]() mutable { b.bias_add(x, bias, y); }, y, {}};
             }});
    }
    return cases;
}

std::vector<BenchCase> bias_backward_cases(const BenchContext& c) {
    std::vector<BenchCase> cases;
    for (std::int64_t n : stream_sizes(c.kind, c.quick)) {
        const std::int64_t rows = n / bias_cols;
        cases.push_back(
            {RowsCols{rows, bias_cols}.str(),
             4.0 * (double(n) + double(bias_cols)),
             {},
             [rows](const Backend& b) {
                 const Tensor dy = bench_tensor(b, Shape{rows, bias_cols});
                 Tensor dbias = b.allocate(Shape{bias_cols});
                 return Workload{
                     [&b, dy, dbias]() mutable { b.bias_backward(dy, dbias); }, dbias, {}};
             }});
    }
    return cases;
}

// A row-wise op on the row shapes: softmax forward (x -> y) and backward (y, dy -> dx).
std::vector<BenchCase> softmax_forward_cases(const BenchContext& c) {
    std::vector<BenchCase> cases;
    for (const RowsCols m : row_shapes(c.kind, c.quick))
        cases.push_back(
            {m.str(), 8.0 * double(m.rows * m.cols), {}, [m](const Backend& b) {
                 const Tensor x = bench_tensor(b, Shape{m.rows, m.cols});
                 Tensor y = b.allocate(Shape{m.rows, m.cols});
                 return Workload{[&b, x, y]() mutable { b.softmax_forward(x, y); }, y, {}};
             }});
    return cases;
}

std::vector<BenchCase> softmax_backward_cases(const BenchContext& c) {
    std::vector<BenchCase> cases;
    for (const RowsCols m : row_shapes(c.kind, c.quick))
        cases.push_back(
            {m.str(), 12.0 * double(m.rows * m.cols), {}, [m](const Backend& b) {
                 const Tensor y = bench_tensor(b, Shape{m.rows, m.cols});
                 const Tensor dy = bench_tensor(b, Shape{m.rows, m.cols});
                 Tensor dx = b.allocate(Shape{m.rows, m.cols});
                 return Workload{
                     [&b, y, dy, dx]() mutable { b.softmax_backward(y, dy, dx); }, dx, {}};
             }});
    return cases;
}

std::vector<BenchCase> mse_loss_cases(const BenchContext& c) {
    std::vector<BenchCase> cases;
    for (std::int64_t n : stream_sizes(c.kind, c.quick))
        cases.push_back(
            {std::to_string(n), 12.0 * double(n), {}, [n](const Backend& b) {
                 const Tensor p = bench_tensor(b, Shape{n});
                 const Tensor t = bench_tensor(b, Shape{n});
                 Tensor grad = b.allocate(Shape{n});
                 return Workload{[&b, p, t, grad]() mutable { b.mse_loss(p, t, grad); }, grad, {}};
             }});
    return cases;
}

// One class index per row, uniform in [0, classes), held as floats, as the loss expects them.
std::vector<float> bench_labels(std::int64_t rows, std::int64_t classes) {
    std::vector<float> labels = bench_values(rows);
    for (float& label : labels) {
        const auto index = static_cast<std::int64_t>((label + 1.0f) / 2.0f * float(classes));
        label = static_cast<float>(std::clamp<std::int64_t>(index, 0, classes - 1));
    }
    return labels;
}

std::vector<BenchCase> cross_entropy_cases(const BenchContext& c) {
    std::vector<BenchCase> cases;
    for (const RowsCols m : row_shapes(c.kind, c.quick))
        cases.push_back(
            {m.str(),
             4.0 * (2.0 * double(m.rows * m.cols) + double(m.rows)),
             {},
             [m](const Backend& b) {
                 const Tensor logits = bench_tensor(b, Shape{m.rows, m.cols});
                 const Tensor labels = b.upload(Shape{m.rows}, bench_labels(m.rows, m.cols));
                 Tensor grad = b.allocate(Shape{m.rows, m.cols});
                 // The loss stays on the device, as in a training step: the form
                 // that returns it would time an allocation and a download as well.
                 Tensor result = b.allocate(Shape{cross_entropy_result_floats});
                 return Workload{[&b, logits, labels, grad, result]() mutable {
                                     b.softmax_cross_entropy(logits, labels, grad, result);
                                 },
                                 grad,
                                 {}};
             }});
    return cases;
}

// The sum of n floats in one mode: 4n bytes read, one number written (the result, checked).
std::function<std::vector<BenchCase>(const BenchContext&)> sum_rows(Reduction mode) {
    return [mode](const BenchContext& c) {
        std::vector<BenchCase> cases;
        for (std::int64_t n : stream_sizes(c.kind, c.quick))
            cases.push_back(
                {std::to_string(n), 4.0 * double(n), {}, [mode, n](const Backend& b) {
                     const Tensor x = bench_tensor(b, Shape{n});
                     return Workload{{}, Tensor{}, [&b, mode, x] { return b.sum(x, mode); }};
                 }});
        return cases;
    };
}

// The dense layer Y = act(X W^T + b): an MNIST layer (784 inputs), a mid-sized hidden layer, and on
// a GPU one large enough to fill it; cpu_naive stops at the first (at 256x1024->1024 its GEMM loops
// take a good part of a second a call, and fusing changes little when they dominate). The work is
// the GEMM's 2 batch in out flops, for both rows, so that they count the same work.
std::function<std::vector<BenchCase>(const BenchContext&)> dense_rows(DensePath path) {
    return [path](const BenchContext& c) {
        const DenseShape mnist{64, 784, 256, Activation::relu};
        const DenseShape hidden{256, 1024, 1024, Activation::relu};
        const DenseShape large{1024, 4096, 4096, Activation::relu};
        std::vector<DenseShape> shapes;
        switch (c.kind) {
            case DeviceKind::Gpu:
                shapes = c.quick ? std::vector{mnist, hidden} : std::vector{mnist, hidden, large};
                break;
            case DeviceKind::Simulator:
                shapes = {{32, 128, 64, Activation::relu}};
                break;
            case DeviceKind::Cpu:
                shapes = c.quick || c.backend.variant() == "cpu_naive" ? std::vector{mnist}
                                                                       : std::vector{mnist, hidden};
                break;
        }
        std::vector<BenchCase> cases;
        for (const DenseShape& s : shapes) {
            // "64x784->256_relu": DenseShape::str() without the space, one shell word.
            const std::string size = std::to_string(s.batch) + "x" + std::to_string(s.in) + "->" +
                                     std::to_string(s.out) + "_" + to_string(s.activation);
            cases.push_back({size, s.gemm().flops(), {}, [s, path](const Backend& b) {
                                 const Tensor X = bench_tensor(b, Shape{s.batch, s.in});
                                 const Tensor W = bench_tensor(b, Shape{s.out, s.in});
                                 const Tensor bias = bench_tensor(b, Shape{s.out});
                                 Tensor Y = b.allocate(Shape{s.batch, s.out});
                                 return Workload{
                                     [&b, s, path, X, W, bias, Y]() mutable {
                                         if (path == DensePath::fused)
                                             b.dense_forward(X, W, bias, s.activation, Y);
                                         else
                                             b.dense_forward_unfused(X, W, bias, s.activation, Y);
                                     },
                                     Y,
                                     {}};
                             }});
        }
        return cases;
    };
}

// The rows of a memory-bound op whose name is its kernel's (relu_forward, bias_add, ...).
BenchRows memory_rows(const std::string& op, const std::string& work,
                      std::function<std::vector<BenchCase>(const BenchContext&)> cases) {
    return {op, "bytes", work, "memory", std::move(cases), {op_named(op)}};
}

}  // namespace

// Default shapes: 1, primes and sizes that are not multiples of any tile (17, 33, 65, 257, 4099),
// the sizes the lessons and training use (64 x 1000 classes, 784 -> 256), batch 1, rows of
// length 1, and for the row-wise ops rows of 4099 and of 100 000: gpu_tiled's version 3 holds a row
// of up to 16 384 in a block's registers and reads longer ones twice, as version 2 does.
// Convolution and pooling come next, with their own shapes (conv_checks.cpp), then the optimizers
// (optimizer_checks.cpp).
const std::vector<OpDescription>& ops() {
    static const std::vector<OpDescription> all = [] {
        const std::string dims = "D1[,D2,...] (tensor dimensions)";
        const std::string rows_dims = "D1[,D2,...] (rows of the last size, e.g. ROWS,COLS)";
        const std::vector<std::string> elementwise = {"1", "7", "33,65", "4099", "64,4097"};
        const std::vector<std::string> row_wise = {"1,1",     "7,1",    "1,1000",  "17,33",
                                                   "64,1000", "5,4099", "3,100000"};
        const std::vector<std::string> reductions = {"1",     "7",      "1000",
                                                     "33,65", "100003", "1000,1001"};
        const std::vector<std::string> dense = {"1,1,1",    "1,784,10",   "17,33,5",
                                                "67,45,91", "64,784,256", "257,129,511"};
        std::vector<OpDescription> checks{
            {"gemm",
             "M,N,K[,NN|NT|TN|TT] (one transposition; all four if omitted)",
             {"1,1,1", "17,33,5", "67,45,91", "128,128,128", "257,129,511"},
             "128,128,128",
             run_gemm,
             {Op::gemm},
             {{"gemm", "flops", "2·M·N·K", "gemm", gemm_cases, {Op::gemm}}}},
            {"bias_add",
             rows_dims,
             {"1", "1,1", "7,13", "33,65", "64,1000", "3,5,257"},
             "64,1000",
             every_output("bias_add", check_bias_add),
             {Op::bias_add},
             {memory_rows("bias_add", "8·rows·cols + 4·cols", bias_add_cases)}},
            {"bias_backward",
             rows_dims,
             {"1", "1,1", "1,257", "257,1", "64,1000", "1000,33", "3,5,257"},
             "64,1000",
             both_values("bias_backward", check_bias_backward),
             {Op::bias_backward},
             {memory_rows("bias_backward", "4·rows·cols + 4·cols", bias_backward_cases)}},
            {"softmax_forward",
             rows_dims,
             row_wise,
             "64,1000",
             every_logits("softmax_forward", check_softmax_forward),
             {Op::softmax_forward},
             {memory_rows("softmax_forward", "8·rows·cols", softmax_forward_cases)}},
            {"softmax_backward",
             rows_dims,
             row_wise,
             "64,1000",
             every_logits("softmax_backward", check_softmax_backward),
             {Op::softmax_backward},
             {memory_rows("softmax_backward", "12·rows·cols", softmax_backward_cases)}},
            {"mse_loss",
             dims,
             {"1", "7", "33,65", "64,1000", "100003"},
             "64,1000",
             run_mse_loss,
             {Op::mse_loss},
             {memory_rows("mse_loss", "12n", mse_loss_cases)}},
            {"softmax_cross_entropy",
             "ROWS,CLASSES",
             {"1,1", "7,1", "1,1000", "17,33", "128,1000", "5,4099", "2,100000"},
             "128,1000",
             run_softmax_cross_entropy,
             {Op::softmax_cross_entropy},
             {memory_rows("softmax_cross_entropy", "8·rows·cols + 4·rows", cross_entropy_cases)}},
            // Both modes of sum, read 4n bytes (mean is sum / n: no rows of its own). The report
            // also sets each fast row against its deterministic twin.
            {"sum",
             dims,
             reductions,
             "1000,1001",
             run_sum,
             {Op::sum},
             {{"sum_deterministic",
               "bytes",
               "4n",
               "reduction",
               sum_rows(Reduction::deterministic),
               {Op::sum}},
              {"sum_fast", "bytes", "4n", "reduction", sum_rows(Reduction::fast), {Op::sum}}}},
            {"mean", dims, reductions, "1000,1001", run_mean, {Op::sum}, {}},
            {"dense_forward",
             "BATCH,IN,OUT[,ACT] (ACT: " + activation_names() + "; each if omitted)",
             dense,
             "64,784,256",
             dense_run("dense_forward", DensePath::fused),
             {Op::dense_forward},
             {{"dense_forward",
               "flops",
               "2·batch·in·out",
               "dense",
               dense_rows(DensePath::fused),
               {}}}},
            {"dense_forward_unfused",
             "BATCH,IN,OUT[,ACT] (as dense_forward)",
             dense,
             "64,784,256",
             dense_run("dense_forward_unfused", DensePath::unfused),
             {Op::gemm, Op::bias_add},
             {{"dense_forward_unfused",
               "flops",
               "2·batch·in·out",
               "dense",
               dense_rows(DensePath::unfused),
               {}}}},
        };
        for (OpDescription& c : activation_descriptions()) checks.push_back(std::move(c));
        for (OpDescription& c : conv_and_pool_descriptions()) checks.push_back(std::move(c));
        for (OpDescription& c : optimizer_descriptions()) checks.push_back(std::move(c));
        return checks;
    }();
    return all;
}

const OpDescription& op(const std::string& name) {
    std::string known;
    for (const OpDescription& o : ops()) {
        if (o.name == name) return o;
        known += (known.empty() ? "" : ", ") + o.name;
    }
    throw InvalidArgument("unknown op '" + name + "'; known ops: " + known);
}

std::vector<std::string> versions_to_check(const OpDescription& check, const std::string& variant) {
    std::vector<int> numbers;
    for (Op kernel : check.kernels)
        for (const KernelVersion& v : kernel_versions(variant, kernel))
            if (!v.is_default) numbers.push_back(v.number);
    std::sort(numbers.begin(), numbers.end());
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    std::vector<std::string> names{variant};
    for (int number : numbers) names.push_back(variant + "@" + std::to_string(number));
    return names;
}

bool runs_version_of(const OpDescription& check, const Backend& backend) {
    if (backend.pinned_version() == 0) return true;
    for (Op kernel : check.kernels)
        for (const KernelVersion& v : kernel_versions(backend.variant(), kernel))
            if (v.number == backend.pinned_version()) return true;
    return false;
}

void require_version_of(const OpDescription& check, const Backend& backend) {
    if (runs_version_of(check, backend)) return;
    std::string numbers;
    for (Op kernel : check.kernels)
        for (const KernelVersion& v : kernel_versions(backend.variant(), kernel))
            numbers += (numbers.empty() ? "" : ", ") + std::to_string(v.number);
    throw InvalidArgument(backend.variant() + " has no version " +
                          std::to_string(backend.pinned_version()) + " of " + check.name +
                          "; its versions: " + (numbers.empty() ? "none" : numbers) +
                          " (triptych versions lists them)");
}

}  // namespace triptych::check
