// cpu_eigen_omp gemm: C = alpha * op(A) * op(B) + beta * C with Eigen.
//
// The raw row-major buffers are wrapped in Eigen::Map (no copy); `.transpose()` is free, it only
// swaps strides. Eigen turns `c.noalias() = alpha * a * b` into one blocked, vectorised GEMM; with
// EIGEN_USE_BLAS (CMake option TRIPTYCH_EIGEN_BLAS, on by default) that GEMM is OpenBLAS's sgemm.
// Measured on a 2-core machine (bench, medians of 5): Eigen over BLAS ran at 98-105% of the
// openblas row at 1024^3 and 2048^3; pure Eigen at 73-99% on a quiet machine but 52-81% while
// other work held a core, its OpenMP-parallel GEMM stalling. Hence BLAS by default; see
// lessons/02_matmul_naive to measure it yourself.
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// c = alpha * opA * opB + beta * c, never reading c when beta == 0 (it may hold NaN).
template <typename OpA, typename OpB>
void multiply(const OpA& opA, const OpB& opB, Eigen::Map<Matrix>& c, float alpha, float beta) {
    if (beta == 0.0f) {
        c.noalias() = alpha * opA * opB;
        return;
    }
    if (beta != 1.0f) c *= beta;
    c.noalias() += alpha * opA * opB;
}

}  // namespace

void gemm(const GemmShape& s, const float* A, const float* B, float* C) {
    // A is stored (M, K) or (K, M); B is stored (K, N) or (N, K); C is (M, N).
    Eigen::Map<const Matrix> a(A, s.trans_a ? s.K : s.M, s.trans_a ? s.M : s.K);
    Eigen::Map<const Matrix> b(B, s.trans_b ? s.N : s.K, s.trans_b ? s.K : s.N);
    Eigen::Map<Matrix> c(C, s.M, s.N);
    if (!s.trans_a && !s.trans_b) multiply(a, b, c, s.alpha, s.beta);
    if (!s.trans_a && s.trans_b) multiply(a, b.transpose(), c, s.alpha, s.beta);
    if (s.trans_a && !s.trans_b) multiply(a.transpose(), b, c, s.alpha, s.beta);
    if (s.trans_a && s.trans_b) multiply(a.transpose(), b.transpose(), c, s.alpha, s.beta);
}

}  // namespace triptych::cpu_eigen_omp
