// gpu_naive pooling: cpu_naive's loops (cpu/naive/pool2d.hpp) with one thread per output.
//   max_pool2d_forward   x (N, C, H, W) -> y, argmax (N, C, P, Q)
//   max_pool2d_backward  dy, argmax     -> dx (N, C, H, W)
//   avg_pool2d_forward   x              -> y
//   avg_pool2d_backward  dy             -> dx
// Windows are clipped to the image (padding is never a candidate); see Pool2dShape.
//
// version 1 (gpu/tiled/pool2d.cu is version 2):
//   forward: a thread per y[n, c, p, q] walks its window in global memory, exactly as the
//     reference does for one output. Consecutive threads take consecutive q: they write consecutive
//     floats but read x stride_w floats apart, and where windows overlap (3x3 stride 2) an input is
//     loaded by up to four threads.
//   backward: a *scatter*, the reference's loop run in parallel. zero_kernel clears dx, then a
//     thread per output adds its dy to the input(s) it came from: max to x[argmax], average
//     dy / count to every element of its window. Overlapping windows send several outputs to the
//     same dx element from different threads, so the adds must be atomicAdd. The contention is
//     low (at most ceil(window_h / stride_h) * ceil(window_w / stride_w) threads per element, none
//     when windows do not overlap), but the adds land in whatever order the threads arrive, so the
//     last bits of dx can change from run to run, and dx costs an extra pass to zero.
//     Version 2 gathers instead: one thread per dx element, one writer, a fixed order.
#include "gpu/runtime/cuda.hpp"

#include <cstdint>

#include "common/kernels.hpp"
#include "common/pooling.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

// y = the largest input of the window, argmax = its index h * W + w in the plane; a later element
// replaces the best only when strictly larger, so ties keep the first in row-major order, or when
// it is the window's first NaN (replaces_max, common/pooling.hpp).
__global__ void max_pool2d_forward_kernel(Pool2dShape s, std::int64_t P, std::int64_t Q,
                                          const float* x, float* y, float* argmax) {
    const std::int64_t i = element_index();  // = (plane * P + p) * Q + q, plane = n * C + c
    if (i >= s.N * s.C * P * Q) return;
    const std::int64_t q = i % Q, p = i / Q % P, plane = i / (Q * P);
    const float* in = x + plane * s.H * s.W;
    const PoolWindow win = pool_window(s, p, q);
    std::int64_t best = win.h0 * s.W + win.w0;
    float best_value = in[best];
    for (std::int64_t h = win.h0; h < win.h1; ++h)
        for (std::int64_t w = win.w0; w < win.w1; ++w)
            if (replaces_max(in[h * s.W + w], best_value)) {
                best = h * s.W + w;
                best_value = in[best];
            }
    y[i] = best_value;
    argmax[i] = float(best);
}

// y = the mean of the input elements the window covers.
__global__ void avg_pool2d_forward_kernel(Pool2dShape s, std::int64_t P, std::int64_t Q,
                                          const float* x, float* y) {
    const std::int64_t i = element_index();  // = (plane * P + p) * Q + q
    if (i >= s.N * s.C * P * Q) return;
    const std::int64_t q = i % Q, p = i / Q % P, plane = i / (Q * P);
    const float* in = x + plane * s.H * s.W;
    const PoolWindow win = pool_window(s, p, q);
    float total = 0.0f;
    for (std::int64_t h = win.h0; h < win.h1; ++h)
        for (std::int64_t w = win.w0; w < win.w1; ++w) total += in[h * s.W + w];
    y[i] = total / float(win.count());
}

__global__ void zero_kernel(std::int64_t n, float* out) {
    const std::int64_t i = element_index();
    if (i < n) out[i] = 0.0f;
}

// dx[argmax] += dy, one thread per output (dx zeroed before).
__global__ void max_pool2d_backward_kernel(Pool2dShape s, std::int64_t P, std::int64_t Q,
                                           const float* dy, const float* argmax, float* dx) {
    const std::int64_t i = element_index();  // = plane * P * Q + (p * Q + q)
    if (i >= s.N * s.C * P * Q) return;
    const std::int64_t plane = i / (P * Q);
    atomicAdd(&dx[plane * s.H * s.W + static_cast<std::int64_t>(argmax[i])], dy[i]);
}

// dx[h, w] += dy / count over the window, one thread per output (dx zeroed before).
__global__ void avg_pool2d_backward_kernel(Pool2dShape s, std::int64_t P, std::int64_t Q,
                                           const float* dy, float* dx) {
    const std::int64_t i = element_index();  // = (plane * P + p) * Q + q
    if (i >= s.N * s.C * P * Q) return;
    const std::int64_t q = i % Q, p = i / Q % P, plane = i / (Q * P);
    float* grad_in = dx + plane * s.H * s.W;
    const PoolWindow win = pool_window(s, p, q);
    const float share = dy[i] / float(win.count());
    for (std::int64_t h = win.h0; h < win.h1; ++h)
        for (std::int64_t w = win.w0; w < win.w1; ++w) atomicAdd(&grad_in[h * s.W + w], share);
}

// dx = 0, ahead of the atomic scatters.
void zero(std::int64_t n, float* dx) {
    gpu::launch(zero_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, dx);
}

void max_pool2d_forward(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    const std::int64_t n = s.y_shape().elements();
    gpu::launch(max_pool2d_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, s,
                s.P(), s.Q(), x, y, argmax);
}

void max_pool2d_backward(const Pool2dShape& s, const float* dy, const float* argmax, float* dx) {
    zero(s.x_shape().elements(), dx);
    const std::int64_t n = s.y_shape().elements();
    gpu::launch(max_pool2d_backward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, s,
                s.P(), s.Q(), dy, argmax, dx);
}

void avg_pool2d_forward(const Pool2dShape& s, const float* x, float* y) {
    const std::int64_t n = s.y_shape().elements();
    gpu::launch(avg_pool2d_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, s,
                s.P(), s.Q(), x, y);
}

void avg_pool2d_backward(const Pool2dShape& s, const float* dy, float* dx) {
    zero(s.x_shape().elements(), dx);
    const std::int64_t n = s.y_shape().elements();
    gpu::launch(avg_pool2d_backward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, s,
                s.P(), s.Q(), dy, dx);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel(
        "gpu_naive", ops::max_pool2d_forward,
        {1, "thread_per_output", "one thread per output scans its window", max_pool2d_forward}) &&
    register_kernel(
        "gpu_naive", ops::max_pool2d_backward,
        {1, "atomics", "dx zeroed, then one thread per output adds at its argmax (atomicAdd)",
         max_pool2d_backward, AdditionOrder::arrival}) &&
    register_kernel("gpu_naive", ops::avg_pool2d_forward,
                    {1, "thread_per_output", "one thread per output averages its window",
                     avg_pool2d_forward}) &&
    register_kernel(
        "gpu_naive", ops::avg_pool2d_backward,
        {1, "atomics", "dx zeroed, then one thread per output spreads its dy (atomicAdd)",
         avg_pool2d_backward, AdditionOrder::arrival});

}  // namespace triptych::gpu_naive
