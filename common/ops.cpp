#include "common/ops.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "common/errors.hpp"

namespace triptych {

namespace {

// InvalidArgument naming `op` when a * b, the elements of an `a` x `b` matrix, does not fit in 64
// bits (checked before any of the op's tensors is made).
void check_matrix_elements(const std::string& op, const char* name, std::int64_t a,
                           std::int64_t b) {
    std::int64_t elements;
    if (__builtin_mul_overflow(a, b, &elements))
        throw InvalidArgument(op + ": " + name + " of " + std::to_string(a) + " x " +
                              std::to_string(b) + " has more than 2^63 - 1 elements");
}

}  // namespace

void GemmShape::validate() const {
    if (M < 1 || N < 1 || K < 1)
        throw InvalidArgument("gemm: sizes must be >= 1, got M=" + std::to_string(M) +
                              ", N=" + std::to_string(N) + ", K=" + std::to_string(K));
    check_matrix_elements("gemm", "A", M, K);
    check_matrix_elements("gemm", "B", K, N);
    check_matrix_elements("gemm", "C", M, N);
    if (!std::isfinite(alpha) || !std::isfinite(beta))
        throw InvalidArgument("gemm: alpha and beta must be finite, got alpha=" +
                              std::to_string(alpha) + ", beta=" + std::to_string(beta));
}

std::string GemmShape::str() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " +
           (trans_a ? "T" : "N") + (trans_b ? "T" : "N");
}

std::string to_string(Activation activation) {
    switch (activation) {
        case Activation::none:
            return "none";
#define TRIPTYCH_ACTIVATION_NAME(name, Type) \
    case Activation::name:                   \
        return #name;
            TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_NAME)
#undef TRIPTYCH_ACTIVATION_NAME
    }
    return "?";
}

bool activation_named(std::string_view name, Activation& activation) {
    for (Activation a : all_activations)
        if (to_string(a) == name) {
            activation = a;
            return true;
        }
    if (name != "none") return false;
    activation = Activation::none;
    return true;
}

void DenseShape::validate() const {
    if (batch < 1 || in < 1 || out < 1)
        throw InvalidArgument(
            "dense_forward: sizes must be >= 1, got batch=" + std::to_string(batch) +
            ", in=" + std::to_string(in) + ", out=" + std::to_string(out));
    check_matrix_elements("dense_forward", "X", batch, in);
    check_matrix_elements("dense_forward", "W", out, in);
    check_matrix_elements("dense_forward", "Y", batch, out);
}

std::string DenseShape::str() const {
    return std::to_string(batch) + "x" + std::to_string(in) + "->" + std::to_string(out) + " " +
           to_string(activation);
}

std::string to_string(ConvAlgorithm algorithm) {
    switch (algorithm) {
        case ConvAlgorithm::direct:
            return "direct";
        case ConvAlgorithm::im2col:
            return "im2col";
        case ConvAlgorithm::fft:
            return "fft";
        case ConvAlgorithm::implicit_gemm:
            return "implicit_gemm";
        case ConvAlgorithm::winograd:
            return "winograd";
    }
    return "?";
}

namespace {
std::string pair(std::int64_t a, std::int64_t b) {
    return std::to_string(a) + "," + std::to_string(b);
}

// InvalidArgument unless the padded input, H + 2 pad_h by W + 2 pad_w, has fewer than 2^31 rows
// and columns: the GPU kernels index a plane's rows and columns in 32 bits. Computed without
// overflow for any padding; P(), Q() and every index into the padded input then fit in 32 bits.
void check_padded_extent(const std::string& op, std::int64_t H, std::int64_t W, std::int64_t pad_h,
                         std::int64_t pad_w) {
    const auto padded = [](std::int64_t extent, std::int64_t pad) {
        std::int64_t twice = 0, sum = 0;
        const bool overflow =
            __builtin_mul_overflow(pad, 2, &twice) || __builtin_add_overflow(extent, twice, &sum);
        return overflow ? std::numeric_limits<std::int64_t>::max() : sum;
    };
    constexpr std::int64_t limit = std::numeric_limits<std::int32_t>::max();
    if (padded(H, pad_h) > limit || padded(W, pad_w) > limit)
        throw InvalidArgument(op + ": the padded input (H " + std::to_string(H) + " + 2 x " +
                              std::to_string(pad_h) + ", W " + std::to_string(W) + " + 2 x " +
                              std::to_string(pad_w) +
                              ") has more than 2^31 - 1 rows or columns, which the GPU kernels "
                              "index in 32 bits");
}
}  // namespace

void Conv2dShape::validate() const {
    const std::string op = "conv2d " + str();
    if (N < 1 || C < 1 || H < 1 || W < 1 || K < 1 || R < 1 || S < 1)
        throw InvalidArgument(op + ": sizes must be >= 1, got N=" + std::to_string(N) +
                              ", C=" + std::to_string(C) + ", H=" + std::to_string(H) +
                              ", W=" + std::to_string(W) + ", K=" + std::to_string(K) +
                              ", R=" + std::to_string(R) + ", S=" + std::to_string(S));
    if (stride_h < 1 || stride_w < 1)
        throw InvalidArgument(op + ": stride must be >= 1, got " + pair(stride_h, stride_w));
    if (pad_h < 0 || pad_w < 0)
        throw InvalidArgument(op + ": padding must be >= 0, got " + pair(pad_h, pad_w));
    check_padded_extent(op, H, W, pad_h, pad_w);
    if (R > H + 2 * pad_h || S > W + 2 * pad_w)
        throw InvalidArgument(op + ": filter " + std::to_string(R) + "x" + std::to_string(S) +
                              " is larger than the padded input " + std::to_string(H + 2 * pad_h) +
                              "x" + std::to_string(W + 2 * pad_w));
}

// The smallest stride that leaves one window along an axis: the padded extent less the window,
// plus 1 (so that P = (padded - window) / stride + 1 stays 1).
Conv2dShape Conv2dShape::with_unused_strides_small() const {
    Conv2dShape same = *this;
    if (P() == 1) same.stride_h = H + 2 * pad_h - R + 1;
    if (Q() == 1) same.stride_w = W + 2 * pad_w - S + 1;
    return same;
}

std::string Conv2dShape::str() const {
    return "N" + std::to_string(N) + " C" + std::to_string(C) + " H" + std::to_string(H) + " W" +
           std::to_string(W) + " K" + std::to_string(K) + " R" + std::to_string(R) + " S" +
           std::to_string(S) + " stride " + pair(stride_h, stride_w) + " pad " + pair(pad_h, pad_w);
}

void Pool2dShape::validate(const std::string& op_name) const {
    const std::string op = op_name + " " + str();
    if (N < 1 || C < 1 || H < 1 || W < 1)
        throw InvalidArgument(op + ": sizes must be >= 1, got N=" + std::to_string(N) +
                              ", C=" + std::to_string(C) + ", H=" + std::to_string(H) +
                              ", W=" + std::to_string(W));
    if (window_h < 1 || window_w < 1)
        throw InvalidArgument(op + ": window must be >= 1, got " + pair(window_h, window_w));
    if (stride_h < 1 || stride_w < 1)
        throw InvalidArgument(op + ": stride must be >= 1, got " + pair(stride_h, stride_w));
    if (pad_h < 0 || pad_w < 0)
        throw InvalidArgument(op + ": padding must be >= 0, got " + pair(pad_h, pad_w));
    if (pad_h > window_h / 2 || pad_w > window_w / 2)
        throw InvalidArgument(op + ": padding " + pair(pad_h, pad_w) +
                              " is more than half the window " + pair(window_h, window_w));
    check_padded_extent(op, H, W, pad_h, pad_w);
    if (window_h > H + 2 * pad_h || window_w > W + 2 * pad_w)
        throw InvalidArgument(op + ": window " + pair(window_h, window_w) +
                              " is larger than the padded input " +
                              pair(H + 2 * pad_h, W + 2 * pad_w));
    std::int64_t plane;
    if (__builtin_mul_overflow(H, W, &plane) || plane > (std::int64_t(1) << 24))
        throw InvalidArgument(op + ": a plane of " + std::to_string(H) + " x " + std::to_string(W) +
                              " elements is more than 2^24 (argmax indices are floats)");
}

Pool2dShape Pool2dShape::with_unused_strides_small() const {
    Pool2dShape same = *this;
    if (P() == 1) same.stride_h = H + 2 * pad_h - window_h + 1;
    if (Q() == 1) same.stride_w = W + 2 * pad_w - window_w + 1;
    return same;
}

std::string Pool2dShape::str() const {
    return "N" + std::to_string(N) + " C" + std::to_string(C) + " H" + std::to_string(H) + " W" +
           std::to_string(W) + " window " + std::to_string(window_h) + "x" +
           std::to_string(window_w) + " stride " + pair(stride_h, stride_w) + " pad " +
           pair(pad_h, pad_w);
}

std::string to_string(OptimizerKind kind) {
    switch (kind) {
        case OptimizerKind::sgd:
            return "sgd";
        case OptimizerKind::adam:
            return "adam";
        case OptimizerKind::rmsprop:
            return "rmsprop";
    }
    return "?";
}

void OptimizerConfig::validate() const {
    const auto in_unit = [](float v) { return v >= 0.0f && v < 1.0f; };
    const bool valid = lr > 0.0f && std::isfinite(lr) && weight_decay >= 0.0f &&
                       std::isfinite(weight_decay) && in_unit(momentum) &&
                       !(nesterov && momentum == 0.0f) && in_unit(beta1) && in_unit(beta2) &&
                       in_unit(alpha) && eps > 0.0f;
    if (valid) return;  // the common case, once per training step: no message to build
    const std::string op = "optimizer " + str();
    if (!(lr > 0.0f) || !std::isfinite(lr))
        throw InvalidArgument(op + ": lr must be > 0 and finite, got " + std::to_string(lr));
    if (!(weight_decay >= 0.0f) || !std::isfinite(weight_decay))
        throw InvalidArgument(op + ": weight_decay must be >= 0, got " +
                              std::to_string(weight_decay));
    if (!in_unit(momentum))
        throw InvalidArgument(op + ": momentum must be in [0, 1), got " + std::to_string(momentum));
    if (nesterov && momentum == 0.0f) throw InvalidArgument(op + ": nesterov needs momentum > 0");
    if (!in_unit(beta1) || !in_unit(beta2))
        throw InvalidArgument(op + ": betas must be in [0, 1), got " + std::to_string(beta1) +
                              ", " + std::to_string(beta2));
    if (!in_unit(alpha))
        throw InvalidArgument(op + ": alpha must be in [0, 1), got " + std::to_string(alpha));
    if (!(eps > 0.0f)) throw InvalidArgument(op + ": eps must be > 0, got " + std::to_string(eps));
}

int OptimizerConfig::state_tensors() const {
    switch (kind) {
        case OptimizerKind::sgd:
            return momentum > 0.0f ? 1 : 0;
        case OptimizerKind::adam:
            return 2;
        case OptimizerKind::rmsprop:
            return momentum > 0.0f ? 2 : 1;
    }
    return 0;
}

std::string OptimizerConfig::str() const {
    std::ostringstream out;
    out << to_string(kind) << " lr=" << lr;
    if (kind == OptimizerKind::sgd && momentum > 0.0f)
        out << " momentum=" << momentum << (nesterov ? " nesterov" : "");
    if (kind == OptimizerKind::adam)
        out << " betas=" << beta1 << "," << beta2 << " eps=" << eps
            << (decoupled_weight_decay ? " decoupled" : "");
    if (kind == OptimizerKind::rmsprop) {
        out << " alpha=" << alpha << " eps=" << eps;
        if (momentum > 0.0f) out << " momentum=" << momentum;
    }
    if (weight_decay > 0.0f) out << " weight_decay=" << weight_decay;
    return out.str();
}

}  // namespace triptych
