// cpu_naive softmax: row-wise, over the last dimension, and its gradient.
//
//   forward:  y[i, j] = e^(x[i, j] - m_i) / sum_k e^(x[i, k] - m_i),   m_i = max_k x[i, k]
//   backward: dx[i, j] = y[i, j] * (dy[i, j] - sum_k dy[i, k] * y[i, k])
//
// Subtracting the row max changes nothing mathematically (it cancels between numerator and
// denominator) but keeps every exponent <= 0: without it e^x overflows float for x > 88.7, and a
// row of logits near 1e4 gives inf / inf = NaN. With it the largest term is e^0 = 1, so the sum is
// at least 1 and never 0. x and y are (rows, cols). Templates: float for the variant, double for
// the reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/kernels.hpp"

namespace triptych::cpu_naive {

// Three passes over each row: its max, the exponentials and their sum, the division.
template <typename T>
void softmax_forward(std::int64_t rows, std::int64_t cols, const T* x, T* y) {
    for (std::int64_t i = 0; i < rows; ++i) {
        const T* in = x + i * cols;
        T* out = y + i * cols;
        T max = in[0];
        for (std::int64_t j = 1; j < cols; ++j) max = std::max(max, in[j]);
        T sum = 0;
        for (std::int64_t j = 0; j < cols; ++j) {
            out[j] = std::exp(in[j] - max);
            sum += out[j];
        }
        for (std::int64_t j = 0; j < cols; ++j) out[j] /= sum;
    }
}

// The Jacobian of one row is diag(y) - y y^T; multiplying dy by it gives the formula above, with
// the dot product dy . y computed once per row.
template <typename T>
void softmax_backward(std::int64_t rows, std::int64_t cols, const T* y, const T* dy, T* dx) {
    for (std::int64_t i = 0; i < rows; ++i) {
        const T* out = y + i * cols;
        const T* grad_out = dy + i * cols;
        T* grad_in = dx + i * cols;
        T dot = 0;
        for (std::int64_t j = 0; j < cols; ++j) dot += grad_out[j] * out[j];
        for (std::int64_t j = 0; j < cols; ++j) grad_in[j] = out[j] * (grad_out[j] - dot);
    }
}

[[maybe_unused]] inline const bool softmax_registered =
    register_kernel("cpu_naive", ops::softmax_forward,
                    {1, "loops", "three passes over each row: max, sum of exponentials, divide",
                     softmax_forward<float>}) &&
    register_kernel(
        "cpu_naive", ops::softmax_backward,
        {1, "loops", "the dot product dy . y per row, then the gradient", softmax_backward<float>});

}  // namespace triptych::cpu_naive
