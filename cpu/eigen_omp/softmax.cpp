// cpu_eigen_omp softmax, row-wise over the last dimension (see cpu/naive/softmax.hpp for the math).
//
// Each thread takes a slice of rows; within a row Eigen vectorises the max, the exponentials, the
// sum and the division, the same three passes as the loops of cpu_naive. A row is short enough
// (a 100 000-class row is 400 KB) to stay in L2 between its passes.
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {

namespace {

void softmax_forward(std::int64_t rows, std::int64_t cols, const float* x, float* y) {
    for_each_slice(rows, cols, [&](std::int64_t begin, std::int64_t count) {
        for (std::int64_t i = begin; i < begin + count; ++i) {
            Eigen::Map<const Array> in(x + i * cols, cols);
            Eigen::Map<Array> out(y + i * cols, cols);
            const float max = in.maxCoeff();
            out = (in - max).exp();  // every exponent <= 0: no overflow
            out /= out.sum();
        }
    });
}

// dx = y * (dy - dy . y), row by row.
void softmax_backward(std::int64_t rows, std::int64_t cols, const float* y, const float* dy,
                      float* dx) {
    for_each_slice(rows, cols, [&](std::int64_t begin, std::int64_t count) {
        for (std::int64_t i = begin; i < begin + count; ++i) {
            Eigen::Map<const Array> out(y + i * cols, cols);
            Eigen::Map<const Array> grad_out(dy + i * cols, cols);
            Eigen::Map<Array> grad_in(dx + i * cols, cols);
            const float dot = (grad_out * out).sum();
            grad_in = out * (grad_out - dot);
        }
    });
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel(
        "cpu_eigen_omp", ops::softmax_forward,
        {2, "simd_threads", "Eigen's SIMD passes over each row, a slice of rows per thread",
         softmax_forward}) &&
    register_kernel(
        "cpu_eigen_omp", ops::softmax_backward,
        {2, "simd_threads", "Eigen's SIMD dot product per row, a slice of rows per thread",
         softmax_backward});

}  // namespace triptych::cpu_eigen_omp
