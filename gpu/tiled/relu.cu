// gpu_tiled ReLU: y = max(x, 0), and its gradient dx = (x > 0 ? dy : 0), elementwise over n floats.
//
// version 2: relu_forward_kernel / relu_backward_kernel, float4 loads in a grid-stride loop
// (version 1 is gpu/naive/relu.cu).
//
// Why there is no shared-memory tiling here: tiling pays when a value loaded once is used many
// times (a GEMM uses each element of A N times). ReLU uses each input exactly once, one compare per
// 8 bytes moved (12 backward), so it is bound by memory bandwidth and no arithmetic trick helps.
// What remains is to move the bytes with as few instructions as possible:
//   - float4: one 16-byte load or store per thread instead of four 4-byte ones;
//   - a grid-stride loop: a fixed grid that fills the GPU a few times over, each thread looping
//     over several float4s, instead of one thread (and its index arithmetic) per element.
// The next gain would be fusion: applying ReLU as the producing op writes its output saves a whole
// round trip through memory.
//
// The float4 loop, its alignment split and the grid size live in elementwise.hpp, shared with the
// other elementwise kernels (sigmoid.cu, tanh.cu, bias.cu).
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

__global__ void relu_forward_kernel(std::int64_t n, std::int64_t head, const float* x, float* y) {
    for_each_float4(
        n, head, [=](std::int64_t i) { y[i] = relu(x[i]); },
        [=](std::int64_t i) { store_float4(y + i, map_float4(load_float4(x + i), relu)); });
}

// At exactly x == 0 the gradient is taken as 0, as in cpu/naive/relu.hpp.
__global__ void relu_backward_kernel(std::int64_t n, std::int64_t head, const float* x,
                                     const float* dy, float* dx) {
    for_each_float4(
        n, head, [=](std::int64_t i) { dx[i] = x[i] > 0.0f ? dy[i] : 0.0f; },
        [=](std::int64_t i) {
            const float4 v = load_float4(x + i);
            const float4 g = load_float4(dy + i);
            store_float4(dx + i, make_float4(v.x > 0.0f ? g.x : 0.0f, v.y > 0.0f ? g.y : 0.0f,
                                             v.z > 0.0f ? g.z : 0.0f, v.w > 0.0f ? g.w : 0.0f));
        });
}

}  // namespace

void relu_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(relu_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n,
                scalar_head(n, {x, y}), x, y);
}

void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx) {
    gpu::launch(relu_backward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n,
                scalar_head(n, {x, dy, dx}), x, dy, dx);
}

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::relu_forward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", relu_forward}) &&
    register_kernel("gpu_tiled", ops::relu_backward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", relu_backward});

}  // namespace triptych::gpu_tiled
