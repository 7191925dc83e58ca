// PLACEHOLDER (being written): conv2d for gpu_tiled.
#include "common/errors.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {

void conv2d_forward(const Conv2dShape&, ConvAlgorithm, const float*, const float*, const float*,
                    float*) {
    throw Unsupported("gpu_tiled conv2d_forward: not written yet");
}
void conv2d_backward_data(const Conv2dShape&, ConvAlgorithm, const float*, const float*, float*) {
    throw Unsupported("gpu_tiled conv2d_backward_data: not written yet");
}
void conv2d_backward_weights(const Conv2dShape&, ConvAlgorithm, const float*, const float*,
                             float*, float*) {
    throw Unsupported("gpu_tiled conv2d_backward_weights: not written yet");
}

}  // namespace triptych::gpu_tiled
