// gpu_tiled conv2d by FFT (conv_fft.cu): the three passes with ConvAlgorithm::fft. Called by
// conv2d.cu, which handles the other algorithms. Every pointer is device memory.
#pragma once

#include "common/ops.hpp"

namespace triptych::gpu_tiled {

void conv2d_forward_fft(const Conv2dShape& s, const float* x, const float* w, const float* b,
                        float* y);
void conv2d_backward_data_fft(const Conv2dShape& s, const float* dy, const float* w, float* dx);
void conv2d_backward_weights_fft(const Conv2dShape& s, const float* x, const float* dy, float* dw,
                                 float* db);

}  // namespace triptych::gpu_tiled
