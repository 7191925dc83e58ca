// gpu_tiled tanh: y = tanh(x), and its gradient from the forward's output, dx = dy * (1 - y^2),
// elementwise over n floats. y may be x, dx may be dy (in place).
//
// version 2: tanh_forward_kernel / tanh_backward_kernel, float4 loads in a grid-stride loop
// (version 1 is gpu/naive/tanh.cu). Bound by memory bandwidth like every elementwise op: see
// relu.cu for why, and sigmoid.cu, its twin.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

__device__ float tanh_gradient(float y, float dy) {
    return dy * (1.0f - y * y);
}

__global__ void tanh_forward_kernel(std::int64_t n, std::int64_t head, const float* x, float* y) {
    for_each_float4(
        n, head, [=](std::int64_t i) { y[i] = activate<Activation::tanh>(x[i]); },
        [=](std::int64_t i) {
            store_float4(y + i, map_float4(load_float4(x + i), activate<Activation::tanh>));
        });
}

__global__ void tanh_backward_kernel(std::int64_t n, std::int64_t head, const float* y,
                                     const float* dy, float* dx) {
    for_each_float4(
        n, head, [=](std::int64_t i) { dx[i] = tanh_gradient(y[i], dy[i]); },
        [=](std::int64_t i) {
            const float4 v = load_float4(y + i);
            const float4 g = load_float4(dy + i);
            store_float4(dx + i, make_float4(tanh_gradient(v.x, g.x), tanh_gradient(v.y, g.y),
                                             tanh_gradient(v.z, g.z), tanh_gradient(v.w, g.w)));
        });
}

}  // namespace

void tanh_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(tanh_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n,
                scalar_head(n, {x, y}), x, y);
}

void tanh_backward(std::int64_t n, const float* y, const float* dy, float* dx) {
    gpu::launch(tanh_backward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n,
                scalar_head(n, {y, dy, dx}), y, dy, dx);
}

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::tanh_forward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", tanh_forward}) &&
    register_kernel("gpu_tiled", ops::tanh_backward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", tanh_backward});

}  // namespace triptych::gpu_tiled
