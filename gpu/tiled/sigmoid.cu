// gpu_tiled sigmoid: y = 1 / (1 + e^-x), and its gradient from the forward's output,
// dx = dy * y * (1 - y), elementwise over n floats. y may be x, dx may be dy (in place).
//
// version 2: sigmoid_forward_kernel / sigmoid_backward_kernel, float4 loads in a grid-stride loop
// (version 1 is gpu/naive/sigmoid.cu).
//
// Like ReLU (see relu.cu), sigmoid uses each input once: one exponential and a division per 8 bytes
// moved is still far below what the GPU can compute in the time the bytes take, so the kernel is
// bound by memory bandwidth, and the gain over version 1 comes from moving the bytes in 16-byte
// accesses (elementwise.hpp). The backward pass reads y rather than x so that it needs no
// exponential at all.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

__device__ float sigmoid_gradient(float y, float dy) {
    return dy * y * (1.0f - y);
}

__global__ void sigmoid_forward_kernel(std::int64_t n, std::int64_t head, const float* x,
                                       float* y) {
    for_each_float4(
        n, head, [=](std::int64_t i) { y[i] = sigmoid(x[i]); },
        [=](std::int64_t i) { store_float4(y + i, map_float4(load_float4(x + i), sigmoid)); });
}

__global__ void sigmoid_backward_kernel(std::int64_t n, std::int64_t head, const float* y,
                                        const float* dy, float* dx) {
    for_each_float4(
        n, head, [=](std::int64_t i) { dx[i] = sigmoid_gradient(y[i], dy[i]); },
        [=](std::int64_t i) {
            const float4 v = load_float4(y + i);
            const float4 g = load_float4(dy + i);
            store_float4(dx + i,
                         make_float4(sigmoid_gradient(v.x, g.x), sigmoid_gradient(v.y, g.y),
                                     sigmoid_gradient(v.z, g.z), sigmoid_gradient(v.w, g.w)));
        });
}

}  // namespace

void sigmoid_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(sigmoid_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n,
                scalar_head(n, {x, y}), x, y);
}

void sigmoid_backward(std::int64_t n, const float* y, const float* dy, float* dx) {
    gpu::launch(sigmoid_backward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n,
                scalar_head(n, {y, dy, dx}), y, dy, dx);
}

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::sigmoid_forward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", sigmoid_forward}) &&
    register_kernel("gpu_tiled", ops::sigmoid_backward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", sigmoid_backward});

}  // namespace triptych::gpu_tiled
