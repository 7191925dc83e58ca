// cpu_naive sigmoid: y = 1 / (1 + e^-x), elementwise, and its gradient.
//
// The derivative is sigma'(x) = sigma(x) (1 - sigma(x)), so the backward pass needs only the
// forward's output y: dx = dy * y * (1 - y). For x below about -88 (float), e^-x overflows to
// +inf and y = 1 / inf = 0, which is the right limit: no NaN. Templates: float for the variant,
// double for the reference.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/activations.hpp"
#include "common/kernels.hpp"

namespace triptych::cpu_naive {

// y may be x (in place).
template <typename T>
void sigmoid_forward(std::int64_t n, const T* x, T* y) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = Sigmoid::forward(x[i]);
}

// y is the forward's output; dx may be dy (in place).
template <typename T>
void sigmoid_backward(std::int64_t n, const T* y, const T* dy, T* dx) {
    for (std::int64_t i = 0; i < n; ++i) dx[i] = Sigmoid::backward(y[i], dy[i]);
}

[[maybe_unused]] inline const bool sigmoid_registered =
    register_kernel("cpu_naive", ops::sigmoid_forward,
                    {1, "loop", "the definition, one element after the other",
                     sigmoid_forward<float>}) &&
    register_kernel("cpu_naive", ops::sigmoid_backward,
                    {1, "loop", "the definition, one element after the other",
                     sigmoid_backward<float>});

}  // namespace triptych::cpu_naive
