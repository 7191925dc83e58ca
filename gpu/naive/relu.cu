// gpu_naive ReLU: y = max(x, 0), and its gradient dx = (x > 0 ? dy : 0), elementwise over n floats
// (x, y, dy, dx all hold n elements; the shape does not matter to an elementwise op). The formulas,
// NaN rule included, are Relu's (common/activations.hpp).
//
// version 1: relu_forward_kernel / relu_backward_kernel, one thread per element.
// Thread i touches element i, so a warp reads and writes 32 consecutive floats: coalesced for free.
// gpu/tiled/relu.cu is the optimised version (float4 loads, grid-stride loop).
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

__global__ void relu_forward_kernel(std::int64_t n, const float* x, float* y) {
    const std::int64_t i = element_index();
    if (i < n) y[i] = Relu::forward(x[i]);
}

__global__ void relu_backward_kernel(std::int64_t n, const float* x, const float* dy, float* dx) {
    const std::int64_t i = element_index();
    if (i < n) dx[i] = Relu::backward(x[i], dy[i]);
}

void relu_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(relu_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, x, y);
}

void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx) {
    gpu::launch(relu_backward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, x, dy,
                dx);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("gpu_naive", ops::relu_forward,
                    {1, "thread_per_element", "one thread per element, coalesced", relu_forward}) &&
    register_kernel("gpu_naive", ops::relu_backward,
                    {1, "thread_per_element", "one thread per element, coalesced", relu_backward});

}  // namespace triptych::gpu_naive
