// cpu_eigen_omp: what a good CPU implementation looks like. Eigen for dense algebra (its products
// call OpenBLAS's sgemm when built with TRIPTYCH_EIGEN_BLAS, the default; see lessons/02), OpenMP
// for the loops Eigen does not parallelise (parallel.hpp: how the work is split). One op per file:
// gemm.cpp, relu.cpp, bias.cpp, sigmoid.cpp, tanh.cpp, softmax.cpp, losses.cpp, reduce.cpp,
// dense.cpp, conv2d.cpp, pool2d.cpp, optimizer.cpp. Shapes and math as in the Backend methods of
// the same names (common/backend.hpp).
#pragma once

#include <cstdint>
#include <span>

#include "common/kernels.hpp"
#include "common/ops.hpp"
#include "common/optimizer_rule.hpp"

namespace triptych::cpu_eigen_omp {

void gemm(const GemmShape& s, const float* A, const float* B, float* C);
// Keeps OpenBLAS on one thread, so that OpenMP's team is the only pool of threads (gemm.cpp says
// why); the backend calls it when it is made.
void use_one_thread_pool();
void relu_forward(std::int64_t n, const float* x, float* y);
void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx);

void bias_add(std::int64_t rows, std::int64_t cols, const float* x, const float* bias, float* y);
void bias_backward(std::int64_t rows, std::int64_t cols, const float* dy, float* dbias);
void sigmoid_forward(std::int64_t n, const float* x, float* y);
void sigmoid_backward(std::int64_t n, const float* y, const float* dy, float* dx);
void tanh_forward(std::int64_t n, const float* x, float* y);
void tanh_backward(std::int64_t n, const float* y, const float* dy, float* dx);
void softmax_forward(std::int64_t rows, std::int64_t cols, const float* x, float* y);
void softmax_backward(std::int64_t rows, std::int64_t cols, const float* y, const float* dy,
                      float* dx);

float mse_loss(std::int64_t n, const float* prediction, const float* target, float* grad);
// Returns the mean loss; first_bad_label is the first row whose label is not a class index (then
// nothing is computed and 0 is returned), or -1.
float softmax_cross_entropy(std::int64_t rows, std::int64_t classes, const float* logits,
                            const float* labels, float* grad, std::int64_t& first_bad_label);
float sum(std::int64_t n, const float* x, Reduction mode);

void dense_forward(const DenseShape& s, const float* X, const float* W, const float* b, float* Y);

// conv2d.cpp / conv2d.cu: the three conv2d passes with `algorithm` one of the variant's
// conv2d_algorithms(); shapes as in Backend::conv2d_forward (common/backend.hpp).
void conv2d_forward(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x, const float* w,
                    const float* b, float* y);
void conv2d_backward_data(const Conv2dShape& s, ConvAlgorithm algorithm, const float* dy,
                          const float* w, float* dx);
void conv2d_backward_weights(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                             const float* dy, float* dw, float* db);

// pool2d.cpp / pool2d.cu: max and average pooling, as Backend::max_pool2d_forward and friends.
void max_pool2d_forward(const Pool2dShape& s, const float* x, float* y, float* argmax);
void max_pool2d_backward(const Pool2dShape& s, const float* dy, const float* argmax, float* dx);
void avg_pool2d_forward(const Pool2dShape& s, const float* x, float* y);
void avg_pool2d_backward(const Pool2dShape& s, const float* dy, float* dx);

// optimizer.cpp: one step of `rule` over every tensor, one after the other.
void optimizer_step(const OptimizerRule<float>& rule, std::span<const OptimizerSlot> tensors);

}  // namespace triptych::cpu_eigen_omp
