// cpu_naive dense forward: Y = act(X * W^T + b), as three loops one after the other (see
// DenseShape: X is (batch, in), W is (out, in), b is (out), Y is (batch, out)).
//
// cpu_naive does not fuse: this is the definition, and the reference for the fused kernels.
// apply_activation (activations.hpp) is also how the reference applies a dense layer's activation.
#pragma once

#include <cstdint>

#include "common/kernels.hpp"
#include "common/ops.hpp"
#include "cpu/naive/activations.hpp"
#include "cpu/naive/bias.hpp"
#include "cpu/naive/gemm.hpp"

namespace triptych::cpu_naive {

template <typename T>
void dense_forward(const DenseShape& s, const T* X, const T* W, const T* b, T* Y) {
    gemm(s.gemm(), X, W, Y);            // Y = X * W^T, (batch, out)
    bias_add(s.batch, s.out, Y, b, Y);  // Y += b, on every row
    apply_activation(s.activation, s.batch * s.out, Y);
}

[[maybe_unused]] inline const bool dense_registered = register_kernel(
    "cpu_naive", ops::dense_forward,
    {1, "steps", "gemm, bias_add and the activation, one after the other", dense_forward<float>});

}  // namespace triptych::cpu_naive
