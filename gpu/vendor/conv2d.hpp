// gpu_vendor conv2d: the three passes through cuDNN (conv2d.cpp says how each ConvAlgorithm maps
// to cuDNN's algorithms). Shapes as in Conv2dShape; every pointer is device memory; outputs are
// overwritten. An algorithm cuDNN lacks for the shape throws Unsupported naming both.
// The backend's kernels (registered in conv2d.cpp) run them on the process's cuDNN state.
#pragma once

#include "common/ops.hpp"
#include "gpu/vendor/cudnn.hpp"

namespace triptych::gpu_vendor {

// y = conv(x, w) + b.
void conv2d_forward(Cudnn& cudnn, const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                    const float* w, const float* b, float* y);
// dx from dy and w.
void conv2d_backward_data(Cudnn& cudnn, const Conv2dShape& s, ConvAlgorithm algorithm,
                          const float* dy, const float* w, float* dx);
// dw from x and dy; db, the sums of dy over n, p, q.
void conv2d_backward_weights(Cudnn& cudnn, const Conv2dShape& s, ConvAlgorithm algorithm,
                             const float* x, const float* dy, float* dw, float* db);

}  // namespace triptych::gpu_vendor
