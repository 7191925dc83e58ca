// cpu_eigen_omp conv2d by Winograd's minimal filtering, F(2x2, 3x3) for 3x3 filters and F(4, 5)
// down the columns for 5x5 ones (conv_winograd.cpp): the three passes with
// ConvAlgorithm::winograd, called by conv2d.cpp's dispatch. 3x3 and 5x5 filters at stride 1 only
// (winograd_applies); any other shape gets Unsupported. Shapes as in
// cpu/naive/conv2d.hpp; db is conv2d.cpp's (it needs no transform).
#pragma once

#include "common/ops.hpp"

namespace triptych::cpu_eigen_omp {

void conv2d_forward_winograd(const Conv2dShape& s, const float* x, const float* w, const float* b,
                             float* y);
void conv2d_backward_data_winograd(const Conv2dShape& s, const float* dy, const float* w,
                                   float* dx);
void conv2d_backward_weights_winograd(const Conv2dShape& s, const float* x, const float* dy,
                                      float* dw);

}  // namespace triptych::cpu_eigen_omp
