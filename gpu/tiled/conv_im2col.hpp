// gpu_tiled conv2d by im2col + GEMM (conv_im2col.cu): the passes with ConvAlgorithm::im2col.
// Called by conv2d.cu, which handles the other algorithms and computes db for this one (the bias
// gradient is the same for every algorithm). Every pointer is device memory.
#pragma once

#include "common/ops.hpp"

namespace triptych::gpu_tiled {

void conv2d_forward_im2col(const Conv2dShape& s, const float* x, const float* w, const float* b,
                           float* y);
void conv2d_backward_data_im2col(const Conv2dShape& s, const float* dy, const float* w, float* dx);
// dw only (overwritten).
void conv2d_backward_weights_im2col(const Conv2dShape& s, const float* x, const float* dy,
                                    float* dw);

}  // namespace triptych::gpu_tiled
