// What every check in this folder shares (crosscheck.cpp: gemm and the dense-layer ops;
// activations.cpp: the activations; conv_checks.cpp: convolution and pooling): the float32 rounding
// constants the tolerances are written in, random inputs, a timer around one op, and the start of a
// CaseResult. Internal to check/; users of the cross-check include check/crosscheck.hpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/random.hpp"
#include "common/timer.hpp"

namespace triptych::check {

inline constexpr double unit_roundoff = 0x1p-24;  // u: float32's relative rounding error
// The smallest normal float. Below it float keeps fewer digits (subnormals), or none where a
// variant flushes them to zero, so ops whose outputs can underflow get it as an absolute floor.
inline constexpr double smallest_normal = 0x1p-126;

inline std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

inline std::vector<double> absolute(std::vector<double> v) {
    for (double& x : v) x = std::abs(x);
    return v;
}

inline std::vector<float> random_values(std::int64_t count, Rng& rng, float low = -1.0f,
                                        float high = 1.0f) {
    std::vector<float> v(static_cast<std::size_t>(count));
    rng.uniform(v, low, high);
    return v;
}

inline std::string format(const char* pattern, double value) {
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

// NaN, +inf and -inf, in turn, in place of every 7th value from index 3: the inputs of the checks
// of each op's rule for non-finite numbers (Values::non_finite; common/backend.hpp states the
// rules).
inline void plant_non_finite(std::vector<float>& values) {
    constexpr float special[] = {std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity()};
    for (std::size_t i = 3, k = 0; i < values.size(); i += 7, ++k) values[i] = special[k % 3];
}

// The non-finite inputs of the checks of a product (gemm, conv2d): +inf at the first element (a
// corner, beside any padding), -inf at the last, NaN at one in between, chosen by `rng`. Few, so
// that most outputs stay finite and the check can tell which ones each special value reaches
// (planted every 7th value, nearly every dot product would hold one).
inline void plant_three_non_finite(std::vector<float>& values, Rng& rng) {
    const std::size_t n = values.size();
    values[0] = std::numeric_limits<float>::infinity();
    if (n > 1) values[n - 1] = -std::numeric_limits<float>::infinity();
    if (n > 2) values[1 + rng.next() % (n - 2)] = std::numeric_limits<float>::quiet_NaN();
}

// The output of a non-finite case: a fresh tensor filled with a finite marker instead of NaN, so
// that an element whose reference is NaN still fails when nobody writes it.
inline Tensor marked_output(const Backend& backend, const Shape& shape) {
    return backend.upload(
        shape, std::vector<float>(static_cast<std::size_t>(shape.elements()), -12345.0f));
}

// A separate output: NaN everywhere (allocate), or the finite marker of a non-finite case.
inline Tensor fresh_output(const Backend& backend, const Shape& shape, Values values) {
    return values == Values::non_finite ? marked_output(backend, shape) : backend.allocate(shape);
}

// "D1[,D2,...]" -> Shape{D1, D2, ...}, every size >= 1 and their product within 64 bits;
// InvalidArgument naming `op` otherwise.
inline Shape tensor_shape(const std::string& op, const std::string& text) {
    const std::vector<std::int64_t> sizes = parse_sizes(op, text);
    for (std::int64_t d : sizes)
        if (d < 1) throw InvalidArgument(op + ": every size must be >= 1, got '" + text + "'");
    Shape shape(sizes);
    shape.elements();  // throws for a product past 2^63 - 1
    return shape;
}

// Refuses, with an InvalidArgument naming `op` and --shape `shape`, a check whose cases need more
// than `bytes` (at least: the inputs, the outputs and the float64 reference that one case holds
// at once) where the machine has less available (available_memory). Each run calls it once the
// shape is parsed and before anything is allocated: a shape too large then fails in a moment,
// where it used to fill the memory with random inputs for a minute before an allocation failed.
void require_memory(const std::string& op, const std::string& shape, double bytes);

// The cases of an elementwise op for one --shape: writing to a fresh tensor, then over its input,
// then NaN and infinities among its inputs. check(backend, shape, output, seed, values) runs one.
// A case holds at least x and y (floats, on the host and the backend) and the reference (doubles).
template <typename Check>
CheckRun every_output(const std::string& op, Check check) {
    return [op, check](const Backend& b, const std::string& text, std::uint64_t seed) {
        const Shape shape = tensor_shape(op, text);
        require_memory(op, text, 16.0 * double(shape.elements()));
        return std::vector{check(b, shape, Output::separate, seed, Values::finite),
                           check(b, shape, Output::in_place, seed, Values::finite),
                           check(b, shape, Output::separate, seed, Values::non_finite)};
    };
}

inline CaseResult result_for(const Backend& backend, std::string op, std::string shape) {
    CaseResult r;
    r.op = std::move(op);
    r.variant = backend.name();
    r.device = backend.device();
    r.shape = std::move(shape);
    return r;
}

// For the dense layer's check, from the activations' (activations.cpp): the bound of an
// activation's own rounding at input x and output y (|out - ref| <= it + 2^-126; 0 for none and
// ReLU, which are exact), and the largest |act'| anywhere, which an error in the input is
// multiplied by at most.
double activation_forward_bound(Activation activation, double x, double y);
double activation_max_slope(Activation activation);

// The descriptions of every activation's forward and backward pass (activations.cpp), for ops().
std::vector<OpDescription> activation_descriptions();
// The descriptions of conv2d, max_pool2d and avg_pool2d (conv_checks.cpp), for ops().
std::vector<OpDescription> conv_and_pool_descriptions();
// The descriptions of sgd, adam and rmsprop (optimizer_checks.cpp), for ops().
std::vector<OpDescription> optimizer_descriptions();

}  // namespace triptych::check
