// gpu_naive tanh: y = tanh(x), and its gradient from the forward's output, dx = dy * (1 - y^2),
// elementwise over n floats. y may be x, dx may be dy (in place).
//
// version 1: tanh_forward_kernel / tanh_backward_kernel, one thread per element (coalesced:
// thread i touches element i). gpu/tiled/tanh.cu is the optimised version (float4 loads,
// grid-stride loop).
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

__global__ void tanh_forward_kernel(std::int64_t n, const float* x, float* y) {
    const std::int64_t i = element_index();
    if (i < n) y[i] = Tanh::forward(x[i]);
}

__global__ void tanh_backward_kernel(std::int64_t n, const float* y, const float* dy, float* dx) {
    const std::int64_t i = element_index();
    if (i < n) dx[i] = Tanh::backward(y[i], dy[i]);
}

void tanh_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(tanh_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, x, y);
}

void tanh_backward(std::int64_t n, const float* y, const float* dy, float* dx) {
    gpu::launch(tanh_backward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, y, dy,
                dx);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("gpu_naive", ops::tanh_forward,
                    {1, "thread_per_element", "one thread per element, coalesced", tanh_forward}) &&
    register_kernel("gpu_naive", ops::tanh_backward,
                    {1, "thread_per_element", "one thread per element, coalesced", tanh_backward});

}  // namespace triptych::gpu_naive
