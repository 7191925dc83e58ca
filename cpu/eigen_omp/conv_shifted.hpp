// cpu_eigen_omp conv2d by im2col + GEMM without building col, for stride 1 (conv_shifted.cpp):
// called by conv2d.cpp's im2col dispatch when shifted_gemm_fits. Shapes as in
// cpu/naive/conv2d.hpp; db is conv2d.cpp's.
#pragma once

#include "common/ops.hpp"

namespace triptych::cpu_eigen_omp {

// Whether the im2col passes take the shifted form: stride 1, and at least 16 channels in and out
// (each tap's GEMM sums over C in the forward pass and over K in backward_data; sgemm runs
// slowly on sums shorter than that, and explicit im2col's single GEMM over C*R*S wins).
bool shifted_gemm_fits(const Conv2dShape& s);

void conv2d_forward_shifted(const Conv2dShape& s, const float* x, const float* w, const float* b,
                            float* y);
void conv2d_backward_data_shifted(const Conv2dShape& s, const float* dy, const float* w, float* dx);
void conv2d_backward_weights_shifted(const Conv2dShape& s, const float* x, const float* dy,
                                     float* dw);

}  // namespace triptych::cpu_eigen_omp
