// PLACEHOLDER (being written): conv2d for cpu_eigen_omp.
#include "common/errors.hpp"
#include "cpu/eigen_omp/ops.hpp"

namespace triptych::cpu_eigen_omp {

void conv2d_forward(const Conv2dShape&, ConvAlgorithm, const float*, const float*, const float*,
                    float*) {
    throw Unsupported("cpu_eigen_omp conv2d_forward: not written yet");
}
void conv2d_backward_data(const Conv2dShape&, ConvAlgorithm, const float*, const float*, float*) {
    throw Unsupported("cpu_eigen_omp conv2d_backward_data: not written yet");
}
void conv2d_backward_weights(const Conv2dShape&, ConvAlgorithm, const float*, const float*,
                             float*, float*) {
    throw Unsupported("cpu_eigen_omp conv2d_backward_weights: not written yet");
}

}  // namespace triptych::cpu_eigen_omp
