// cpu_eigen_omp: what a good CPU implementation looks like. Eigen for dense algebra (its products
// call OpenBLAS's sgemm when built with TRIPTYCH_EIGEN_BLAS, the default; see lessons/02), OpenMP
// for the loops Eigen does not parallelise. One op per file: gemm.cpp, relu.cpp.
#pragma once

#include <cstdint>

#include "common/ops.hpp"

namespace triptych::cpu_eigen_omp {

void gemm(const GemmShape& s, const float* A, const float* B, float* C);
void relu_forward(std::int64_t n, const float* x, float* y);
void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx);

}  // namespace triptych::cpu_eigen_omp
