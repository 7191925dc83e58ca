// gpu_naive activations: every activation of common/activations.hpp (ReLU, sigmoid, tanh, GELU),
// forward and backward, elementwise over n floats (x, y, dy, dx all hold n elements; the shape
// does not matter to an elementwise op). y may be x, dx may be dy (in place).
//
// version 1: activation_forward_kernel<Act> / activation_backward_kernel<Act>, one thread per
// element, applying the activation's formula (Act::forward, Act::backward: NaN rule included).
// Thread i touches element i, so a warp reads and writes 32 consecutive floats: coalesced for free.
// gpu/tiled/activations.cu is the optimised version (float4 loads, grid-stride loop). The
// backward pass of sigmoid and tanh reads y rather than x: their derivatives are functions of y,
// with no exponential to recompute.
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"

namespace triptych::gpu_naive {
namespace {

template <typename Act>
__global__ void activation_forward_kernel(std::int64_t n, const float* x, float* y) {
    const std::int64_t i = element_index();
    if (i < n) y[i] = Act::forward(x[i]);
}

// `in` is the forward's input or its output, as Act::backward takes it.
template <typename Act>
__global__ void activation_backward_kernel(std::int64_t n, const float* in, const float* dy,
                                           float* dx) {
    const std::int64_t i = element_index();
    if (i < n) dx[i] = Act::backward(in[i], dy[i]);
}

template <typename Act>
void activation_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(activation_forward_kernel<Act>, elementwise_grid(n), dim3(elementwise_threads), 0,
                n, x, y);
}

template <typename Act>
void activation_backward(std::int64_t n, const float* in, const float* dy, float* dx) {
    gpu::launch(activation_backward_kernel<Act>, elementwise_grid(n), dim3(elementwise_threads), 0,
                n, in, dy, dx);
}

}  // namespace

[[maybe_unused]] const bool registered = [] {
    for_each_activation([](auto act) {
        using Act = decltype(act);
        register_kernel("gpu_naive", forward_op(Act::kind),
                        {1, "thread_per_element", "one thread per element, coalesced",
                         activation_forward<Act>});
        register_kernel("gpu_naive", backward_op(Act::kind),
                        {1, "thread_per_element", "one thread per element, coalesced",
                         activation_backward<Act>});
    });
    return true;
}();

}  // namespace triptych::gpu_naive
