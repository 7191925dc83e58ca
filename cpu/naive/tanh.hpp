// cpu_naive tanh: y = tanh(x), elementwise, and its gradient.
//
// The derivative is tanh'(x) = 1 - tanh(x)^2, so the backward pass needs only the forward's
// output y: dx = dy * (1 - y^2). Templates: float for the variant, double for the reference.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/activations.hpp"
#include "common/kernels.hpp"

namespace triptych::cpu_naive {

// y may be x (in place).
template <typename T>
void tanh_forward(std::int64_t n, const T* x, T* y) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = Tanh::forward(x[i]);
}

// y is the forward's output; dx may be dy (in place).
template <typename T>
void tanh_backward(std::int64_t n, const T* y, const T* dy, T* dx) {
    for (std::int64_t i = 0; i < n; ++i) dx[i] = Tanh::backward(y[i], dy[i]);
}

[[maybe_unused]] inline const bool tanh_registered =
    register_kernel("cpu_naive", ops::tanh_forward,
                    {1, "loop", "the definition, one element after the other", tanh_forward<float>}) &&
    register_kernel("cpu_naive", ops::tanh_backward,
                    {1, "loop", "the definition, one element after the other", tanh_backward<float>});

}  // namespace triptych::cpu_naive
