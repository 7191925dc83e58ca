// gpu_naive bias: the bias of a dense layer, broadcast over the batch, and its gradient.
//   bias_add:      y[i, j] = x[i, j] + bias[j];  x, y are (rows, cols), bias is (cols); y may be x.
//   bias_backward: dbias[j] = sum_i dy[i, j];    dy is (rows, cols), dbias is (cols).
//
// version 1 (gpu/tiled/bias.cu is version 2):
//   bias_add_kernel: one thread per element of y.
//   bias_backward_kernel: one thread per column, looping over every row. Consecutive threads take
//     consecutive columns, so each step of the loop is one coalesced read of a row segment; but
//     only `cols` threads work (10 for a 10-class output layer), each through `rows` dependent
//     adds. Version 2 puts a block of threads on each group of columns.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

// Element i of the (rows, cols) matrix is in column i % cols.
__global__ void bias_add_kernel(std::int64_t n, std::int64_t cols, const float* x,
                                const float* bias, float* y) {
    const std::int64_t i = element_index();
    if (i < n) y[i] = x[i] + bias[i % cols];
}

__global__ void bias_backward_kernel(std::int64_t rows, std::int64_t cols, const float* dy,
                                     float* dbias) {
    const std::int64_t col = element_index();
    if (col >= cols) return;
    float sum = 0.0f;
    for (std::int64_t row = 0; row < rows; ++row) sum += dy[row * cols + col];
    dbias[col] = sum;
}

void bias_add(std::int64_t rows, std::int64_t cols, const float* x, const float* bias, float* y) {
    const std::int64_t n = rows * cols;
    gpu::launch(bias_add_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, cols, x,
                bias, y);
}

void bias_backward(std::int64_t rows, std::int64_t cols, const float* dy, float* dbias) {
    gpu::launch(bias_backward_kernel, elementwise_grid(cols), dim3(elementwise_threads), 0, rows,
                cols, dy, dbias);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("gpu_naive", ops::bias_add,
                    {1, "thread_per_element", "one thread per element", bias_add}) &&
    register_kernel(
        "gpu_naive", ops::bias_backward,
        {1, "thread_per_column", "one thread per column sums it top to bottom", bias_backward});

}  // namespace triptych::gpu_naive
