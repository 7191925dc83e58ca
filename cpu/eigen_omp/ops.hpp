// cpu_eigen_omp: what a good CPU implementation looks like. Eigen for dense algebra (its products
// call OpenBLAS's sgemm when built with TRIPTYCH_EIGEN_BLAS, the default; see lessons/02), OpenMP
// for the loops Eigen does not parallelise (parallel.hpp: how the work is split). One op per file
// (gemm.cpp, relu.cpp, sigmoid.cpp, tanh.cpp, gelu.cpp, bias.cpp, softmax.cpp, losses.cpp,
// reduce.cpp, dense.cpp, conv2d.cpp, pool2d.cpp, optimizer.cpp), each registering its kernels at
// its bottom (common/kernels.hpp). Shapes and math as in the Backend methods of the same names
// (common/backend.hpp).
//
// This header declares what one file of the panel calls in another.
#pragma once

#include <cstdint>

#include "common/kernels.hpp"
#include "common/ops.hpp"

namespace triptych::cpu_eigen_omp {

// gemm.cpp (the im2col convolution and the dense layer run it).
void gemm(const GemmShape& s, const float* A, const float* B, float* C);
// Keeps OpenBLAS on one thread, so that OpenMP's team is the only pool of threads (gemm.cpp says
// why); the backend calls it when it is made.
void use_one_thread_pool();

// The dense layer's epilogue (dense.cpp) runs it on blocks of its output, with the activation's
// kernel of this variant (default_kernel, common/kernels.hpp).
void bias_add(std::int64_t rows, std::int64_t cols, const float* x, const float* bias, float* y);

// reduce.cpp (the losses, softmax's row sums and the convolutions' bias gradient run it).
float sum(std::int64_t n, const float* x, Reduction mode);

}  // namespace triptych::cpu_eigen_omp
