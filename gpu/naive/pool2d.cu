// PLACEHOLDER (being written): pooling for gpu_naive.
#include "common/errors.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {

void max_pool2d_forward(const Pool2dShape&, const float*, float*, float*) {
    throw Unsupported("gpu_naive max_pool2d_forward: not written yet");
}
void max_pool2d_backward(const Pool2dShape&, const float*, const float*, float*) {
    throw Unsupported("gpu_naive max_pool2d_backward: not written yet");
}
void avg_pool2d_forward(const Pool2dShape&, const float*, float*) {
    throw Unsupported("gpu_naive avg_pool2d_forward: not written yet");
}
void avg_pool2d_backward(const Pool2dShape&, const float*, float*) {
    throw Unsupported("gpu_naive avg_pool2d_backward: not written yet");
}

}  // namespace triptych::gpu_naive
