// cpu_naive losses: each returns the mean loss and writes its gradient.
//
//   mse_loss:              loss = (1/n) sum_i (p_i - t_i)^2,      grad_i = 2 (p_i - t_i) / n
//   softmax_cross_entropy: logits z are (rows, classes), labels (rows) hold class indices;
//                          loss = (1/rows) sum_i (logsumexp(z_i) - z_i[label_i])
//                          grad = (softmax(z_i) - one_hot(label_i)) / rows
//
// Cross-entropy is computed from the logits, fused with its softmax, never as log(softmax(z)):
// softmax underflows to 0 for a logit far below the max, and log(0) = -inf, while
// logsumexp(z) - z[label] = (max - z[label]) + log(sum_j e^(z_j - max)) stays finite and exact to
// a few ulp. (max - z[label]) is formed first: for logits near 1e4, max + log(sum) would round
// away the digits of a small loss before z[label] is subtracted.
//
// Templates: float for the variant, double for the reference. Both sum in T, one term after the
// other: the deterministic mode of Reduction.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/kernels.hpp"
#include "common/ops.hpp"

namespace triptych::cpu_naive {

template <typename T>
T mse_loss(std::int64_t n, const T* prediction, const T* target, T* grad) {
    T sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const T diff = prediction[i] - target[i];
        sum += diff * diff;
        grad[i] = T(2) * diff / T(n);
    }
    return sum / T(n);
}

// Returns the mean loss. A label that is not a class index (is_class_index) is never used to index
// a row: the loop stops there, sets first_bad_label to its row and returns 0; otherwise
// first_bad_label is -1.
template <typename T>
T softmax_cross_entropy(std::int64_t rows, std::int64_t classes, const T* logits, const T* labels,
                        T* grad, std::int64_t& first_bad_label) {
    first_bad_label = -1;
    T total = 0;
    for (std::int64_t i = 0; i < rows; ++i) {
        if (!is_class_index(labels[i], classes)) {
            first_bad_label = i;
            return T(0);
        }
        const auto label = static_cast<std::int64_t>(labels[i]);
        const T* z = logits + i * classes;
        T* g = grad + i * classes;

        T max = z[0];
        for (std::int64_t j = 1; j < classes; ++j) max = std::max(max, z[j]);
        T sum = 0;  // sum_j e^(z_j - max), at least 1
        for (std::int64_t j = 0; j < classes; ++j) {
            g[j] = std::exp(z[j] - max);
            sum += g[j];
        }
        total += (max - z[label]) + std::log(sum);
        for (std::int64_t j = 0; j < classes; ++j)
            g[j] = (g[j] / sum - (j == label ? T(1) : T(0))) / T(rows);
    }
    return total / T(rows);
}

// The kernel cpu_naive registers: the loops above in float, their loss and bad row written to
// *result.
inline void softmax_cross_entropy_into(std::int64_t rows, std::int64_t classes, const float* logits,
                                       const float* labels, float* grad,
                                       CrossEntropyResult* result) {
    std::int64_t first_bad_label = -1;
    result->loss = softmax_cross_entropy(rows, classes, logits, labels, grad, first_bad_label);
    result->first_bad_row =
        first_bad_label < 0 ? no_bad_row : static_cast<std::uint64_t>(first_bad_label);
}

[[maybe_unused]] inline const bool losses_registered =
    register_kernel("cpu_naive", ops::mse_loss,
                    {1, "loop", "the definition, one element after the other", mse_loss<float>}) &&
    register_kernel("cpu_naive", ops::softmax_cross_entropy,
                    {1, "loops", "log-sum-exp and the gradient, one row after the other",
                     softmax_cross_entropy_into});

}  // namespace triptych::cpu_naive
