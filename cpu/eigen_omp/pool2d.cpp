// PLACEHOLDER (being written): pooling for cpu_eigen_omp.
#include "common/errors.hpp"
#include "cpu/eigen_omp/ops.hpp"

namespace triptych::cpu_eigen_omp {

void max_pool2d_forward(const Pool2dShape&, const float*, float*, float*) {
    throw Unsupported("cpu_eigen_omp max_pool2d_forward: not written yet");
}
void max_pool2d_backward(const Pool2dShape&, const float*, const float*, float*) {
    throw Unsupported("cpu_eigen_omp max_pool2d_backward: not written yet");
}
void avg_pool2d_forward(const Pool2dShape&, const float*, float*) {
    throw Unsupported("cpu_eigen_omp avg_pool2d_forward: not written yet");
}
void avg_pool2d_backward(const Pool2dShape&, const float*, float*) {
    throw Unsupported("cpu_eigen_omp avg_pool2d_backward: not written yet");
}

}  // namespace triptych::cpu_eigen_omp
