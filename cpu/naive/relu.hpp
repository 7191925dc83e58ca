// cpu_naive ReLU: y = max(x, 0); its gradient passes dy where x > 0 and is 0 elsewhere (at
// x == 0 exactly we take 0, as PyTorch does); NaN stays NaN. The formulas are Relu's
// (common/activations.hpp). Templates: float for the variant, double for the reference.
#pragma once

#include <cstdint>

#include "common/activations.hpp"
#include "common/kernels.hpp"

namespace triptych::cpu_naive {

template <typename T>
void relu_forward(std::int64_t n, const T* x, T* y) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = Relu::forward(x[i]);
}

template <typename T>
void relu_backward(std::int64_t n, const T* x, const T* dy, T* dx) {
    for (std::int64_t i = 0; i < n; ++i) dx[i] = Relu::backward(x[i], dy[i]);
}

[[maybe_unused]] inline const bool relu_registered =
    register_kernel("cpu_naive", ops::relu_forward,
                    {1, "loop", "the definition, one element after the other", relu_forward<float>}) &&
    register_kernel("cpu_naive", ops::relu_backward,
                    {1, "loop", "the definition, one element after the other", relu_backward<float>});

}  // namespace triptych::cpu_naive
