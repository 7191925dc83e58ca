// The activations as formulas for one element, host and device code: the one place each is
// written. cpu_naive loops over them (in double they are the reference), gpu_naive and gpu_tiled
// apply them in their kernels and in the fused GEMM epilogue; cpu_eigen_omp writes the same
// formulas as Eigen array expressions, so that they vectorise.
//
// Each activation has forward(x) and backward(in, dy) = dy * act'(...), where `in` is the
// forward's input x (ReLU) or its output y (sigmoid, tanh: their derivatives are functions of y,
// so the backward pass needs no exponential).
//
// NaN and infinities: a NaN input gives a NaN output, as in PyTorch; a NaN that an activation
// silently turned into a number would hide a diverging run. Infinities follow the formulas' limits:
// relu(+inf) = +inf, relu(-inf) = 0, sigmoid(+-inf) = 1 and 0, tanh(+-inf) = +-1.
#pragma once

#include <cmath>

#include "common/host_device.hpp"
#include "common/ops.hpp"

namespace triptych {

// y = max(x, 0); written x < 0 ? 0 : x so that NaN, which fails every comparison, stays NaN
// (max(x, 0) as fmaxf would return 0). dx = dy where x > 0, 0 where x <= 0 (at exactly 0 the
// gradient is taken as 0, as PyTorch does), and NaN where x is NaN (it fails both tests; PyTorch
// passes dy there).
struct Relu {
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T forward(T x) {
        return x < T(0) ? T(0) : x;
    }
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T backward(T x, T dy) {
        return x > T(0) ? dy : x <= T(0) ? T(0) : x;
    }
};

// y = 1 / (1 + e^-x). For x below about -88 (float), e^-x overflows to +inf and y = 1 / inf = 0,
// the right limit: no NaN. dx = dy * y * (1 - y), from the output.
struct Sigmoid {
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T forward(T x) {
        using std::exp;
        return T(1) / (T(1) + exp(-x));
    }
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T backward(T y, T dy) {
        return dy * y * (T(1) - y);
    }
};

// y = tanh(x); dx = dy * (1 - y^2), from the output.
struct Tanh {
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T forward(T x) {
        using std::tanh;
        return tanh(x);
    }
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T backward(T y, T dy) {
        return dy * (T(1) - y * y);
    }
};

// act(v) for an activation known at compile time, so that a kernel templated on it (the fused
// dense layer's epilogue) has no branch.
template <Activation activation, typename T>
TRIPTYCH_HOST_DEVICE T activate(T v) {
    if constexpr (activation == Activation::relu)
        return Relu::forward(v);
    else if constexpr (activation == Activation::sigmoid)
        return Sigmoid::forward(v);
    else if constexpr (activation == Activation::tanh)
        return Tanh::forward(v);
    else
        return v;
}

}  // namespace triptych
