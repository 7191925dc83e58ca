#include "check/crosscheck.hpp"

#include <cmath>
#include <cstdio>

#include "common/errors.hpp"
#include "common/random.hpp"
#include "common/timer.hpp"
#include "cpu/naive/gemm.hpp"
#include "cpu/naive/relu.hpp"

namespace triptych::check {
namespace {

constexpr double unit_roundoff = 0x1p-24;  // u: float32's relative rounding error

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::vector<float> random_values(std::int64_t count, Rng& rng) {
    std::vector<float> v(static_cast<std::size_t>(count));
    rng.uniform(v);
    return v;
}

std::string format(const char* pattern, double value) {
    char text[64];
    std::snprintf(text, sizeof text, pattern, value);
    return text;
}

// Times `op` on `backend`, including a synchronize so GPU work is finished.
template <typename Op>
double timed(const Backend& backend, Op op) {
    Timer timer;
    op();
    backend.synchronize();
    return timer.seconds();
}

CaseResult result_for(const Backend& backend, std::string op, std::string shape) {
    CaseResult r;
    r.op = std::move(op);
    r.variant = backend.name();
    r.device = backend.device();
    r.shape = std::move(shape);
    return r;
}

}  // namespace

std::vector<std::int64_t> parse_sizes(const std::string& op, const std::string& text) {
    std::vector<std::int64_t> sizes;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string part = text.substr(start, comma - start);
        std::size_t used = 0;
        long long value = 0;
        try {
            value = std::stoll(part, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (part.empty() || used != part.size())
            throw InvalidArgument(op + ": shape '" + text + "' is not a list of integers");
        sizes.push_back(value);
        start = comma + 1;
    }
    return sizes;
}

// gemm. Tolerance: a float32 dot product of K terms, summed in any order (loops, tiles, FMA),
// is within gamma_K * sum_k |a_k * b_k| of the exact value, gamma_K ~ K*u (Higham, Accuracy and
// Stability of Numerical Algorithms, 3.1). Scaling by alpha and adding beta*C costs two more
// roundings; we allow twice that: |out - ref| <= 2 (K + 2) u (|alpha| sum|a*b| + |beta c|).
CaseResult check_gemm(const Backend& backend, const GemmShape& s, std::uint64_t seed) {
    s.validate();
    Rng rng(seed);
    const std::vector<float> a = random_values(s.a_shape().elements(), rng);
    const std::vector<float> b = random_values(s.b_shape().elements(), rng);
    const std::vector<float> c = random_values(s.c_shape().elements(), rng);

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
    // beta == 0: C stays NaN, so reading it (instead of ignoring it) fails the check.
    Tensor C = s.beta == 0 ? backend.allocate(s.c_shape()) : backend.upload(s.c_shape(), c);

    CaseResult r = result_for(backend, "gemm",
                              s.str() + format(" a=%g", s.alpha) + format(" b=%g", s.beta));
    r.seconds = timed(backend, [&] { backend.gemm(s, A, B, C); });
    const double rtol = 2.0 * double(s.K + 2) * unit_roundoff;
    r.tolerance = format("%.2g * sum|a*b|", rtol);
    r.comparison = compare(backend.download(C), ref, Tolerance{rtol, 0.0}, scale);
    return r;
}

// ReLU inputs: uniform in [-1, 1) with every 7th value exactly 0, where the convention (gradient
// 0 at 0) matters. Both directions are exact in float32: max and select do not round.
namespace {
std::vector<float> relu_input(std::int64_t count, Rng& rng) {
    std::vector<float> x = random_values(count, rng);
    for (std::size_t i = 0; i < x.size(); i += 7) x[i] = 0.0f;
    return x;
}
}  // namespace

CaseResult check_relu_forward(const Backend& backend, const Shape& shape, std::uint64_t seed) {
    Rng rng(seed);
    const std::vector<float> x = relu_input(shape.elements(), rng);
    std::vector<double> ref(x.size());
    cpu_naive::relu_forward<double>(shape.elements(), widen(x).data(), ref.data());

    const Tensor X = backend.upload(shape, x);
    Tensor Y = backend.allocate(shape);
    CaseResult r = result_for(backend, "relu_forward", shape.str());
    r.seconds = timed(backend, [&] { backend.relu_forward(X, Y); });
    r.tolerance = "exact";
    r.comparison = compare(backend.download(Y), ref, Tolerance{});
    return r;
}

CaseResult check_relu_backward(const Backend& backend, const Shape& shape, std::uint64_t seed) {
    Rng rng(seed);
    const std::vector<float> x = relu_input(shape.elements(), rng);
    const std::vector<float> dy = random_values(shape.elements(), rng);
    std::vector<double> ref(x.size());
    cpu_naive::relu_backward<double>(shape.elements(), widen(x).data(), widen(dy).data(),
                                     ref.data());

    const Tensor X = backend.upload(shape, x);
    const Tensor dY = backend.upload(shape, dy);
    Tensor dX = backend.allocate(shape);
    CaseResult r = result_for(backend, "relu_backward", shape.str());
    r.seconds = timed(backend, [&] { backend.relu_backward(X, dY, dX); });
    r.tolerance = "exact";
    r.comparison = compare(backend.download(dX), ref, Tolerance{});
    return r;
}

namespace {

// The four transpositions of one gemm shape, each with its own alpha and beta, so that the
// beta == 0 path (C not read) and the beta != 0 path are both covered.
std::vector<CaseResult> run_gemm(const Backend& backend, const std::string& text,
                                 std::uint64_t seed) {
    const std::vector<std::int64_t> sizes = parse_sizes("gemm", text);
    if (sizes.size() != 3)
        throw InvalidArgument("gemm: --shape takes M,N,K (3 sizes), got '" + text + "'");
    struct Variant {
        bool trans_a, trans_b;
        float alpha, beta;
    };
    const Variant variants[] = {
        {false, false, 1.0f, 0.0f}, {false, true, 1.5f, 0.0f},
        {true, false, 1.0f, 0.5f}, {true, true, -0.75f, 1.25f}};
    std::vector<CaseResult> results;
    for (const Variant& v : variants) {
        GemmShape s{sizes[0], sizes[1], sizes[2], v.trans_a, v.trans_b, v.alpha, v.beta};
        results.push_back(check_gemm(backend, s, seed));
    }
    return results;
}

Shape relu_shape(const std::string& op, const std::string& text) {
    const std::vector<std::int64_t> sizes = parse_sizes(op, text);
    for (std::int64_t d : sizes)
        if (d < 1) throw InvalidArgument(op + ": every size must be >= 1, got '" + text + "'");
    return Shape(sizes);
}

}  // namespace

const std::vector<OpCheck>& ops() {
    static const std::vector<OpCheck> all = {
        {"gemm", "M,N,K",
         {"1,1,1", "17,33,5", "67,45,91", "128,128,128", "257,129,511"},
         run_gemm},
        {"relu_forward", "D1[,D2,...] (tensor dimensions)",
         {"1", "7", "33,65", "4099", "64,4097"},
         [](const Backend& b, const std::string& shape, std::uint64_t seed) {
             return std::vector{check_relu_forward(b, relu_shape("relu_forward", shape), seed)};
         }},
        {"relu_backward", "D1[,D2,...] (tensor dimensions)",
         {"1", "7", "33,65", "4099", "64,4097"},
         [](const Backend& b, const std::string& shape, std::uint64_t seed) {
             return std::vector{check_relu_backward(b, relu_shape("relu_backward", shape), seed)};
         }},
    };
    return all;
}

const OpCheck& op(const std::string& name) {
    std::string known;
    for (const OpCheck& o : ops()) {
        if (o.name == name) return o;
        known += (known.empty() ? "" : ", ") + o.name;
    }
    throw InvalidArgument("unknown op '" + name + "'; known ops: " + known);
}

}  // namespace triptych::check
