// gpu_naive sigmoid: y = 1 / (1 + e^-x), and its gradient from the forward's output,
// dx = dy * y * (1 - y), elementwise over n floats. y may be x, dx may be dy (in place).
//
// version 1: sigmoid_forward_kernel / sigmoid_backward_kernel, one thread per element (coalesced:
// thread i touches element i). gpu/tiled/sigmoid.cu is the optimised version (float4 loads,
// grid-stride loop). The backward pass reads y rather than x: y * (1 - y) is the derivative, with
// no exponential to recompute.
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

__global__ void sigmoid_forward_kernel(std::int64_t n, const float* x, float* y) {
    const std::int64_t i = element_index();
    if (i < n) y[i] = Sigmoid::forward(x[i]);
}

__global__ void sigmoid_backward_kernel(std::int64_t n, const float* y, const float* dy,
                                        float* dx) {
    const std::int64_t i = element_index();
    if (i < n) dx[i] = Sigmoid::backward(y[i], dy[i]);
}

void sigmoid_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(sigmoid_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, x, y);
}

void sigmoid_backward(std::int64_t n, const float* y, const float* dy, float* dx) {
    gpu::launch(sigmoid_backward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, y,
                dy, dx);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("gpu_naive", ops::sigmoid_forward,
                    {1, "thread_per_element", "one thread per element, coalesced", sigmoid_forward}) &&
    register_kernel("gpu_naive", ops::sigmoid_backward,
                    {1, "thread_per_element", "one thread per element, coalesced", sigmoid_backward});

}  // namespace triptych::gpu_naive
