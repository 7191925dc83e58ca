// gpu_tiled softmax, row-wise over a (rows, cols) matrix:
//   forward:  y[i, j] = e^(x[i, j] - m_i) / s_i,  m_i = max_j x[i, j],  s_i = sum_j e^(x[i, j] -
//   m_i) backward: dx[i, j] = y[i, j] * (dy[i, j] - sum_k dy[i, k] * y[i, k])   (from the output y)
// x, y, dy, dx are (rows, cols); y may be x.
//
// version 2 (version 1 is gpu/naive/softmax.cu, one thread per row):
//   softmax_forward_kernel<Group>: a warp per row when cols <= 1024, else a block of 512 threads
//     per row (block_reduce.hpp). Consecutive threads read consecutive columns (coalesced, where
//     version 1's thread-per-row reads are cols floats apart). One pass computes the row max and
//     the sum together (online softmax, MaxSum), reduced with warp shuffles and, for a block,
//     shared memory; a second pass writes y. The row is read twice, not three times.
//   softmax_backward_kernel<Group>: the same layout; one reduction (the dot product dy . y), then
//     the write.
// Measured on an H200, forward: 65536 x 1000 at 2.8 TB/s (version 1: 0.34 TB/s), 1024 x 100 000 at
// 1.7 TB/s (version 1: 12.5 GB/s).
// Subtracting the max keeps every exponent <= 0, so nothing overflows: logits of +-1e4 or rows of
// equal values give finite outputs. Any row length from 1 works: each thread loops over its
// columns.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/block_reduce.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

template <typename Group>
__global__ void softmax_forward_kernel(std::int64_t rows, std::int64_t cols, const float* x,
                                       float* y) {
    for (std::int64_t row = Group::first_row(); row < rows; row += Group::row_stride()) {
        const float* in = x + row * cols;
        float* out = y + row * cols;
        MaxSum partial = MaxSum::empty();
        for (std::int64_t j = Group::lane(); j < cols; j += Group::size()) partial.add(in[j]);
        const MaxSum total = Group::max_sum(partial);
        // s >= 1 (the max contributes e^0), so the reciprocal is finite.
        const float inverse_sum = 1.0f / total.sum;
        for (std::int64_t j = Group::lane(); j < cols; j += Group::size())
            out[j] = expf(in[j] - total.max) * inverse_sum;
    }
}

template <typename Group>
__global__ void softmax_backward_kernel(std::int64_t rows, std::int64_t cols, const float* y,
                                        const float* dy, float* dx) {
    for (std::int64_t row = Group::first_row(); row < rows; row += Group::row_stride()) {
        const float* y_row = y + row * cols;
        const float* dy_row = dy + row * cols;
        float partial = 0.0f;
        for (std::int64_t j = Group::lane(); j < cols; j += Group::size())
            partial += dy_row[j] * y_row[j];
        const float dot = Group::sum(partial);
        for (std::int64_t j = Group::lane(); j < cols; j += Group::size())
            dx[row * cols + j] = y_row[j] * (dy_row[j] - dot);
    }
}

void softmax_forward(std::int64_t rows, std::int64_t cols, const float* x, float* y) {
    launch_per_row(rows, cols, [&](auto group, dim3 grid, dim3 block) {
        gpu::launch(softmax_forward_kernel<decltype(group)>, grid, block, 0, rows, cols, x, y);
    });
}

void softmax_backward(std::int64_t rows, std::int64_t cols, const float* y, const float* dy,
                      float* dx) {
    launch_per_row(rows, cols, [&](auto group, dim3 grid, dim3 block) {
        gpu::launch(softmax_backward_kernel<decltype(group)>, grid, block, 0, rows, cols, y, dy,
                    dx);
    });
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::softmax_forward,
                    {2, "warp_or_block_per_row",
                     "a warp (short rows) or a block per row, shuffles for the max and the sum",
                     softmax_forward}) &&
    register_kernel("gpu_tiled", ops::softmax_backward,
                    {2, "warp_or_block_per_row",
                     "a warp or a block per row, shuffles for the dot product", softmax_backward});

}  // namespace triptych::gpu_tiled
