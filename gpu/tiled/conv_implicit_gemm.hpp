// gpu_tiled conv2d by implicit GEMM (conv_implicit_gemm.cu): the passes with
// ConvAlgorithm::implicit_gemm. Called by conv2d.cu, which handles the other algorithms and
// computes db for this one. Every pointer is device memory.
#pragma once

#include "common/ops.hpp"

namespace triptych::gpu_tiled {

void conv2d_forward_implicit_gemm(const Conv2dShape& s, const float* x, const float* w,
                                  const float* b, float* y);
void conv2d_backward_data_implicit_gemm(const Conv2dShape& s, const float* dy, const float* w,
                                        float* dx);
// dw only (overwritten).
void conv2d_backward_weights_implicit_gemm(const Conv2dShape& s, const float* x, const float* dy,
                                           float* dw);

}  // namespace triptych::gpu_tiled
