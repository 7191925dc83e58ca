// gpu_naive conv2d: the definition (cpu/naive/conv2d.hpp) with one thread per output element.
//   forward          x (N, C, H, W), w (K, C, R, S), b (K)  ->  y (N, K, P, Q)
//   backward_data    dy (N, K, P, Q), w                     ->  dx (N, C, H, W)
//   backward_weights x, dy                                  ->  dw (K, C, R, S), db (K)
// with h = p*stride_h + r - pad_h and w = q*stride_w + s - pad_w linking an input position to an
// output position and a filter tap (Conv2dShape, common/ops.hpp).
//
// version 1 (lesson 08; gpu/tiled/conv2d.cu is version 2), ConvAlgorithm::direct only:
//   conv2d_forward_kernel: a thread per y[n, k, p, q] sums its C x R x S terms from global memory.
//     Consecutive threads take consecutive q: they write consecutive floats, read x stride_w
//     floats apart and all read the same filter value (a broadcast).
//   conv2d_backward_data_kernel: a thread per dx[n, c, h, w] *gathers* the terms that reach it.
//     The reference scatters instead (each term adds dy * w to one dx element), but in parallel a
//     scatter has many threads adding to the same dx element: it needs atomicAdd, which is slow
//     and adds in a different order on every run. In the gather each dx element has one writer
//     and a fixed order of terms. The price: for each tap (r, s) the thread must find the output
//     (p, q) that read its input through that tap, p = (h + pad_h - r) / stride_h, and skip the
//     tap when the division is not exact or p falls outside the output.
//   conv2d_backward_weights_kernel: a thread per dw[k, c, r, s] sums its N x P x Q terms alone;
//     conv2d_backward_bias_kernel: a thread per db[k]. Few threads (K C R S and K) do long serial
//     loops; version 2 gives each weight a block and reduces in shared memory.
// In the kernels (h, col) is a position in x: w names the filters.
// Every output element is written exactly once (no atomics, no zero-fill), so the results are the
// same bits on every run.
#include "gpu/runtime/cuda.hpp"

#include <cstdint>

#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

// y[n, k, p, q] = b[k] + sum_{c, r, s} x[n, c, h, w] * w[k, c, r, s], padding skipped.
__global__ void conv2d_forward_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                                      const float* x, const float* w, const float* b, float* y) {
    const std::int64_t i = element_index();  // = ((n * K + k) * P + p) * Q + q
    if (i >= shape.N * shape.K * P * Q) return;
    const std::int64_t q = i % Q, p = i / Q % P, k = i / (Q * P) % shape.K,
                       n = i / (Q * P * shape.K);
    float sum = b[k];
    for (std::int64_t c = 0; c < shape.C; ++c)
        for (std::int64_t r = 0; r < shape.R; ++r) {
            const std::int64_t h = p * shape.stride_h + r - shape.pad_h;
            if (h < 0 || h >= shape.H) continue;
            for (std::int64_t s = 0; s < shape.S; ++s) {
                const std::int64_t col = q * shape.stride_w + s - shape.pad_w;
                if (col < 0 || col >= shape.W) continue;
                sum += x[((n * shape.C + c) * shape.H + h) * shape.W + col] *
                       w[((k * shape.C + c) * shape.R + r) * shape.S + s];
            }
        }
    y[i] = sum;
}

// dx[n, c, h, w] = sum over the (k, p, q, r, s) with p*stride_h + r - pad_h = h and
// q*stride_w + s - pad_w = w of dy[n, k, p, q] * w[k, c, r, s]: the gather described above.
__global__ void conv2d_backward_data_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                                            const float* dy, const float* w, float* dx) {
    const std::int64_t i = element_index();  // = ((n * C + c) * H + h) * W + col
    if (i >= shape.N * shape.C * shape.H * shape.W) return;
    const std::int64_t col = i % shape.W, h = i / shape.W % shape.H,
                       c = i / (shape.W * shape.H) % shape.C, n = i / (shape.W * shape.H * shape.C);
    float sum = 0.0f;
    for (std::int64_t r = 0; r < shape.R; ++r) {
        // Output row p read input row h through tap r when p * stride_h = h + pad_h - r.
        const std::int64_t p_strided = h + shape.pad_h - r;
        if (p_strided < 0 || p_strided % shape.stride_h != 0) continue;
        const std::int64_t p = p_strided / shape.stride_h;
        if (p >= P) continue;
        for (std::int64_t s = 0; s < shape.S; ++s) {
            const std::int64_t q_strided = col + shape.pad_w - s;
            if (q_strided < 0 || q_strided % shape.stride_w != 0) continue;
            const std::int64_t q = q_strided / shape.stride_w;
            if (q >= Q) continue;
            for (std::int64_t k = 0; k < shape.K; ++k)
                sum += dy[((n * shape.K + k) * P + p) * Q + q] *
                       w[((k * shape.C + c) * shape.R + r) * shape.S + s];
        }
    }
    dx[i] = sum;
}

// dw[k, c, r, s] = sum_{n, p, q} dy[n, k, p, q] * x[n, c, h, w], padding skipped.
__global__ void conv2d_backward_weights_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                                               const float* x, const float* dy, float* dw) {
    const std::int64_t i = element_index();  // = ((k * C + c) * R + r) * S + s
    if (i >= shape.K * shape.C * shape.R * shape.S) return;
    const std::int64_t s = i % shape.S, r = i / shape.S % shape.R,
                       c = i / (shape.S * shape.R) % shape.C, k = i / (shape.S * shape.R * shape.C);
    float sum = 0.0f;
    for (std::int64_t n = 0; n < shape.N; ++n)
        for (std::int64_t p = 0; p < P; ++p) {
            const std::int64_t h = p * shape.stride_h + r - shape.pad_h;
            if (h < 0 || h >= shape.H) continue;
            for (std::int64_t q = 0; q < Q; ++q) {
                const std::int64_t col = q * shape.stride_w + s - shape.pad_w;
                if (col < 0 || col >= shape.W) continue;
                sum += dy[((n * shape.K + k) * P + p) * Q + q] *
                       x[((n * shape.C + c) * shape.H + h) * shape.W + col];
            }
        }
    dw[i] = sum;
}

// db[k] = sum_{n, p, q} dy[n, k, p, q].
__global__ void conv2d_backward_bias_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                                            const float* dy, float* db) {
    const std::int64_t k = element_index();
    if (k >= shape.K) return;
    const std::int64_t PQ = P * Q;
    float sum = 0.0f;
    for (std::int64_t n = 0; n < shape.N; ++n)
        for (std::int64_t pq = 0; pq < PQ; ++pq) sum += dy[(n * shape.K + k) * PQ + pq];
    db[k] = sum;
}

// `algorithm` is always direct: the only one gpu_naive offers (backend.cpp), checked by Backend.
void conv2d_forward(const Conv2dShape& s, ConvAlgorithm, const float* x, const float* w,
                    const float* b, float* y) {
    const std::int64_t n = s.y_shape().elements();
    gpu::launch(conv2d_forward_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, s, s.P(),
                s.Q(), x, w, b, y);
}

void conv2d_backward_data(const Conv2dShape& s, ConvAlgorithm, const float* dy, const float* w,
                          float* dx) {
    const std::int64_t n = s.x_shape().elements();
    gpu::launch(conv2d_backward_data_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, s,
                s.P(), s.Q(), dy, w, dx);
}

void conv2d_backward_weights(const Conv2dShape& s, ConvAlgorithm, const float* x, const float* dy,
                             float* dw, float* db) {
    const std::int64_t n = s.w_shape().elements();
    gpu::launch(conv2d_backward_weights_kernel, elementwise_grid(n), dim3(elementwise_threads), 0,
                s, s.P(), s.Q(), x, dy, dw);
    gpu::launch(conv2d_backward_bias_kernel, elementwise_grid(s.K), dim3(elementwise_threads), 0, s,
                s.P(), s.Q(), dy, db);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel(
        "gpu_naive", ops::conv2d_forward,
        {1, "thread_per_output", "one thread per output, the sum straight from global memory",
         conv2d_forward}) &&
    register_kernel("gpu_naive", ops::conv2d_backward_data,
                    {1, "thread_per_input", "one thread per input element gathers its outputs",
                     conv2d_backward_data}) &&
    register_kernel("gpu_naive", ops::conv2d_backward_weights,
                    {1, "thread_per_weight", "one thread per weight sums over the batch",
                     conv2d_backward_weights});

}  // namespace triptych::gpu_naive
