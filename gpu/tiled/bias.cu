// gpu_tiled bias: the bias of a dense layer, broadcast over the batch, and its gradient.
//   bias_add:      y[i, j] = x[i, j] + bias[j];  x, y are (rows, cols), bias is (cols); y may be x.
//   bias_backward: dbias[j] = sum_i dy[i, j];    dy is (rows, cols), dbias is (cols).
//
// version 2 (version 1 is gpu/naive/bias.cu):
//   bias_add_kernel: float4 loads in a grid-stride loop, as every elementwise kernel
//     (activations.cu says why no tiling helps); the bias is tiny and stays in cache, so x and y
//     are the traffic. Where the columns come in fours, the bias is read as float4s too.
//   bias_backward_kernel: a block of 32 x 32 threads per 32 columns. A warp reads 32 consecutive
//     columns of one row (coalesced); 32 warps cover 32 rows at a time, then the 32 partial sums of
//     each column are added through shared memory and warp shuffles. Version 1 gives each column
//     one thread, which loops over every row alone.
// bias_backward adds in a fixed order (no atomics): the same dy gives the same bits on every run.
// Its limit is few columns: a 65536 x 10 output layer is a single block; splitting the rows over
// several blocks, with a second pass over their partial sums, would lift it. Its figures measured
// on a GPU: lessons/04_dense_layer/README.md, "On a GPU".
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "gpu/tiled/block_reduce.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

// x and y seen as n = rows * cols floats; element i is in column i % cols. bias_as_float4: every
// float4 of x starts at a multiple of 4 columns, and bias is 16-byte aligned (bias_add below), so
// its four bias values are one float4 of bias: one request per warp, as x's. Otherwise they are
// loaded one at a time: four requests, in each of which the lanes' floats lie 16 bytes apart,
// spread over several times the sectors they fill.
__global__ void bias_add_kernel(std::int64_t n, std::int64_t cols, std::int64_t head,
                                bool bias_as_float4, const float* x, const float* bias, float* y) {
    for_each_float4(
        n, head, [=](std::int64_t i) { y[i] = x[i] + bias[i % cols]; },
        [=](std::int64_t i) {
            // One 64-bit modulo per float4 is cheap next to the 32 bytes it moves.
            std::int64_t col = i % cols;
            float4 b;
            if (bias_as_float4) {
                b = __ldg(reinterpret_cast<const float4*>(bias + col));
            } else {
                // The four elements may run past the end of a row: the column wraps to 0.
                float scalar[4];
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    scalar[k] = __ldg(bias + col);
                    col = col + 1 == cols ? 0 : col + 1;
                }
                b = make_float4(scalar[0], scalar[1], scalar[2], scalar[3]);
            }
            const float4 v = load_float4(x + i);
            store_float4(y + i, make_float4(v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w));
        });
}

constexpr int columns_per_block = 32;  // threadIdx.x: one warp across 32 columns
constexpr int row_lanes = 32;          // threadIdx.y: 32 rows summed side by side

// Block (32, 32) for columns col0 .. col0 + 31. Thread (tx, ty) sums rows ty, ty + 32, ... of
// column col0 + tx; then partial[ty][tx] holds 32 partial sums per column, which warp ty reads
// back transposed (column col0 + ty) and adds with shuffles.
__global__ void bias_backward_kernel(std::int64_t rows, std::int64_t cols, const float* dy,
                                     float* dbias) {
    // The extra column puts partial[0..31][c] in 32 different banks, so the transposed read is
    // conflict-free (without it, a column of a 32-wide float array lies in one bank).
    __shared__ float partial[row_lanes][columns_per_block + 1];
    const std::int64_t col0 = std::int64_t(blockIdx.x) * columns_per_block;
    const std::int64_t col = col0 + threadIdx.x;

    float sum = 0.0f;
    if (col < cols)
        for (std::int64_t row = threadIdx.y; row < rows; row += row_lanes)
            sum += dy[row * cols + col];
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();

    const float total = warp_sum(partial[threadIdx.x][threadIdx.y]);
    if (threadIdx.x == 0 && col0 + threadIdx.y < cols) dbias[col0 + threadIdx.y] = total;
}

void bias_add(std::int64_t rows, std::int64_t cols, const float* x, const float* bias, float* y) {
    const std::int64_t n = rows * cols;
    const std::int64_t head = scalar_head(n, {x, y});
    // With head 0 the float4s of x start at elements 0, 4, 8, ...: at a multiple of 4 columns
    // into their row when cols is a multiple of 4.
    const bool bias_as_float4 =
        head == 0 && cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(bias) % 16 == 0;
    gpu::launch(bias_add_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, cols, head,
                bias_as_float4, x, bias, y);
}

void bias_backward(std::int64_t rows, std::int64_t cols, const float* dy, float* dbias) {
    const dim3 grid(unsigned(ceil_div<std::int64_t>(cols, columns_per_block)));
    gpu::launch(bias_backward_kernel, grid, dim3(columns_per_block, row_lanes), 0, rows, cols, dy,
                dbias);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel(
        "gpu_tiled", ops::bias_add,
        {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", bias_add}) &&
    register_kernel(
        "gpu_tiled", ops::bias_backward,
        {2, "block_columns",
         "a block of threads per strip of columns, partial sums in shared memory", bias_backward});

}  // namespace triptych::gpu_tiled
