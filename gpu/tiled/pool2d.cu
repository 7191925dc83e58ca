// PLACEHOLDER (being written): pooling for gpu_tiled.
#include "common/errors.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {

void max_pool2d_forward(const Pool2dShape&, const float*, float*, float*) {
    throw Unsupported("gpu_tiled max_pool2d_forward: not written yet");
}
void max_pool2d_backward(const Pool2dShape&, const float*, const float*, float*) {
    throw Unsupported("gpu_tiled max_pool2d_backward: not written yet");
}
void avg_pool2d_forward(const Pool2dShape&, const float*, float*) {
    throw Unsupported("gpu_tiled avg_pool2d_forward: not written yet");
}
void avg_pool2d_backward(const Pool2dShape&, const float*, float*) {
    throw Unsupported("gpu_tiled avg_pool2d_backward: not written yet");
}

}  // namespace triptych::gpu_tiled
