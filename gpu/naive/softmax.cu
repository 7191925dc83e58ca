// gpu_naive softmax, row-wise over a (rows, cols) matrix:
//   forward:  y[i, j] = e^(x[i, j] - m_i) / s_i,  m_i = max_j x[i, j],  s_i = sum_j e^(x[i, j] -
//   m_i) backward: dx[i, j] = y[i, j] * (dy[i, j] - sum_k dy[i, k] * y[i, k])   (from the output y)
// x, y, dy, dx are (rows, cols); y may be x.
//
// version 1: softmax_forward_kernel / softmax_backward_kernel, one thread per row, which walks its
// row three times (max, sum, write; backward: dot product, write). Simple, but threads of a warp
// read addresses cols floats apart (32 rows, one float each: uncoalesced), and a batch of 64 rows
// keeps only 64 threads busy. gpu/tiled/softmax.cu gives each row a warp or a block instead.
// Subtracting the row max keeps every exponent <= 0: nothing overflows, even for logits of 1e4.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

__global__ void softmax_forward_kernel(std::int64_t rows, std::int64_t cols, const float* x,
                                       float* y) {
    const std::int64_t row = element_index();
    if (row >= rows) return;
    const float* in = x + row * cols;
    float* out = y + row * cols;
    float max = in[0];
    for (std::int64_t j = 1; j < cols; ++j) max = fmaxf(max, in[j]);
    float sum = 0.0f;
    for (std::int64_t j = 0; j < cols; ++j) sum += expf(in[j] - max);
    for (std::int64_t j = 0; j < cols; ++j) out[j] = expf(in[j] - max) / sum;
}

__global__ void softmax_backward_kernel(std::int64_t rows, std::int64_t cols, const float* y,
                                        const float* dy, float* dx) {
    const std::int64_t row = element_index();
    if (row >= rows) return;
    const std::int64_t first = row * cols;
    float dot = 0.0f;
    for (std::int64_t j = 0; j < cols; ++j) dot += dy[first + j] * y[first + j];
    for (std::int64_t j = 0; j < cols; ++j) dx[first + j] = y[first + j] * (dy[first + j] - dot);
}

void softmax_forward(std::int64_t rows, std::int64_t cols, const float* x, float* y) {
    gpu::launch(softmax_forward_kernel, elementwise_grid(rows), dim3(elementwise_threads), 0, rows,
                cols, x, y);
}

void softmax_backward(std::int64_t rows, std::int64_t cols, const float* y, const float* dy,
                      float* dx) {
    gpu::launch(softmax_backward_kernel, elementwise_grid(rows), dim3(elementwise_threads), 0, rows,
                cols, y, dy, dx);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel(
        "gpu_naive", ops::softmax_forward,
        {1, "thread_per_row", "one thread per row, three passes over it", softmax_forward}) &&
    register_kernel("gpu_naive", ops::softmax_backward,
                    {1, "thread_per_row", "one thread per row", softmax_backward});

}  // namespace triptych::gpu_naive
