// cpu_eigen_omp conv2d by the direct algorithm (conv_direct.cpp): the three passes with
// ConvAlgorithm::direct, called by conv2d.cpp's dispatch. Shapes as in cpu/naive/conv2d.hpp; db is
// conv2d.cpp's (it is the same for every algorithm).
#pragma once

#include "common/ops.hpp"

namespace triptych::cpu_eigen_omp {

void conv2d_forward_direct(const Conv2dShape& s, const float* x, const float* w, const float* b,
                           float* y);
void conv2d_backward_data_direct(const Conv2dShape& s, const float* dy, const float* w, float* dx);
void conv2d_backward_weights_direct(const Conv2dShape& s, const float* x, const float* dy,
                                    float* dw);

}  // namespace triptych::cpu_eigen_omp
