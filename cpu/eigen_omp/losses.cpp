// cpu_eigen_omp losses: mean squared error and softmax cross-entropy (math in
// cpu/naive/losses.hpp), each one pass that writes the gradient and sums the loss.
//
// Both sum their loss in the deterministic mode of Reduction (see reduce.cpp):
// sum_in_fixed_chunks (parallel.hpp) gives every chunk of elements (MSE) or of rows
// (cross-entropy) its own partial sum and adds them in chunk order, in double, so the loss has the
// same bits on every run and for any thread count.
#include <cmath>

#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {

namespace {

float mse_loss(std::int64_t n, const float* prediction, const float* target, float* grad) {
    const float scale = 2.0f / static_cast<float>(n);
    const double sum_of_squares =
        sum_in_fixed_chunks(n, 1, [&](std::int64_t begin, std::int64_t count) {
            Eigen::Map<const Array> p(prediction + begin, count);
            Eigen::Map<const Array> t(target + begin, count);
            Eigen::Map<Array>(grad + begin, count) = (p - t) * scale;
            return double((p - t).square().sum());
        });
    return static_cast<float>(sum_of_squares / static_cast<double>(n));
}

// The labels are checked first, in order, so the first bad one is found and no row is ever
// indexed by a bad label.
void softmax_cross_entropy(std::int64_t rows, std::int64_t classes, const float* logits,
                           const float* labels, float* grad, CrossEntropyResult* result) {
    result->loss = 0.0f;
    result->first_bad_row = no_bad_row;
    for (std::int64_t i = 0; i < rows; ++i) {
        if (!is_class_index(labels[i], classes)) {
            result->first_bad_row = static_cast<std::uint64_t>(i);
            return;
        }
    }
    const double total =
        sum_in_fixed_chunks(rows, classes, [&](std::int64_t begin, std::int64_t count) {
            double loss = 0.0;
            for (std::int64_t i = begin; i < begin + count; ++i) {
                const auto label = static_cast<std::int64_t>(labels[i]);
                Eigen::Map<const Array> z(logits + i * classes, classes);
                Eigen::Map<Array> g(grad + i * classes, classes);
                const float max = z.maxCoeff();
                g = (z - max).exp();
                const float sum = g.sum();
                // logsumexp(z) - z[label], with (max - z[label]) formed first (see the naive
                // loops).
                loss += static_cast<double>(max - z[label]) + std::log(static_cast<double>(sum));
                g /= sum;          // softmax(z)
                g[label] -= 1.0f;  // - one_hot(label)
                g /= static_cast<float>(rows);
            }
            return loss;
        });
    result->loss = static_cast<float>(total / static_cast<double>(rows));
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel(
        "cpu_eigen_omp", ops::mse_loss,
        {2, "simd_threads", "one pass writing the gradient and summing fixed chunks", mse_loss}) &&
    register_kernel("cpu_eigen_omp", ops::softmax_cross_entropy,
                    {2, "simd_threads", "one pass per row, rows in fixed chunks over the threads",
                     softmax_cross_entropy});

}  // namespace triptych::cpu_eigen_omp
