// gpu_tiled softmax, row-wise over a (rows, cols) matrix:
//   forward:  y[i, j] = e^(x[i, j] - m_i) / s_i,
//             m_i = max_j x[i, j],  s_i = sum_j e^(x[i, j] - m_i)
//   backward: dx[i, j] = y[i, j] * (dy[i, j] - sum_k dy[i, k] * y[i, k])   (from the output y)
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
// version 3, the default: the row read once, kept in registers.
//   softmax_forward_registers_kernel<Group>: version 2's groups, column layout and reductions, but
//     the first pass also copies each thread's columns into a local array of
//     row_values_per_thread = 32 floats (block_reduce.hpp), and the second pass computes y from
//     that array instead of loading x again. Each element is loaded from global memory once where
//     version 2 loads it twice: half the load requests, and the second pass no longer depends on
//     the row still being in cache. The array stays in registers because its size is fixed and
//     its loops are unrolled; that bounds the row: up to 1024 columns for a warp (32 values per
//     lane), 16 384 for a block of 512 threads (32 each). Longer rows run version 2's two passes.
//   softmax_backward_registers_kernel<Group>: the same with two arrays, y and dy, each loaded once
//     for the dot product and used again for dx.
//   Each thread adds its values in version 2's order and the reductions are version 2's: the
//   same error bound holds.
// Its figures measured on a GPU: lessons/05_activations_softmax/README.md, "On a GPU".
// Subtracting the max keeps every exponent <= 0, so nothing overflows: logits of +-1e4 or rows of
// equal values give finite outputs. Any row length from 1 works: version 2's threads loop over
// their columns, version 3's skip the slots of their array past the end of the row.
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

// Version 3: values[k] holds column lane + k * threads of the row (block_reduce.hpp, "a row held
// in registers"): every loop over k is unrolled, so each values[k] is a register and each offset
// k * threads a constant. The slots past the end of the row are never read.
template <typename Group>
__global__ void __launch_bounds__(row_block_threads)
    softmax_forward_registers_kernel(std::int64_t rows, std::int64_t cols, const float* x,
                                     float* y) {
    for (std::int64_t row = Group::first_row(); row < rows; row += Group::row_stride()) {
        const std::int64_t first = row * cols + Group::lane();  // this thread's first column
        const std::int64_t columns = cols - Group::lane();      // the row's columns from there
        float values[row_values_per_thread];
        const MaxSum total = load_row_max_sum<Group>(x + first, columns, values);
        const float inverse_sum = 1.0f / total.sum;  // s >= 1: the max contributes e^0
#pragma unroll
        for (int k = 0; k < row_values_per_thread; ++k) {
            const int offset = k * Group::threads;
            if (offset < columns) y[first + offset] = expf(values[k] - total.max) * inverse_sum;
        }
    }
}

template <typename Group>
__global__ void __launch_bounds__(row_block_threads)
    softmax_backward_registers_kernel(std::int64_t rows, std::int64_t cols, const float* y,
                                      const float* dy, float* dx) {
    for (std::int64_t row = Group::first_row(); row < rows; row += Group::row_stride()) {
        const std::int64_t first = row * cols + Group::lane();
        const std::int64_t columns = cols - Group::lane();
        float y_values[row_values_per_thread], dy_values[row_values_per_thread];
        float partial = 0.0f;
#pragma unroll
        for (int k = 0; k < row_values_per_thread; ++k) {
            const int offset = k * Group::threads;
            y_values[k] = offset < columns ? y[first + offset] : 0.0f;
            dy_values[k] = offset < columns ? dy[first + offset] : 0.0f;
            if (offset < columns) partial += dy_values[k] * y_values[k];
        }
        const float dot = Group::sum(partial);
#pragma unroll
        for (int k = 0; k < row_values_per_thread; ++k) {
            const int offset = k * Group::threads;
            if (offset < columns) dx[first + offset] = y_values[k] * (dy_values[k] - dot);
        }
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

// Rows longer than register_row_max_cols do not fit in the group's registers: version 2.
void softmax_forward_registers(std::int64_t rows, std::int64_t cols, const float* x, float* y) {
    if (cols > register_row_max_cols) return softmax_forward(rows, cols, x, y);
    launch_per_row(rows, cols, [&](auto group, dim3 grid, dim3 block) {
        gpu::launch(softmax_forward_registers_kernel<decltype(group)>, grid, block, 0, rows, cols,
                    x, y);
    });
}

void softmax_backward_registers(std::int64_t rows, std::int64_t cols, const float* y,
                                const float* dy, float* dx) {
    if (cols > register_row_max_cols) return softmax_backward(rows, cols, y, dy, dx);
    launch_per_row(rows, cols, [&](auto group, dim3 grid, dim3 block) {
        gpu::launch(softmax_backward_registers_kernel<decltype(group)>, grid, block, 0, rows, cols,
                    y, dy, dx);
    });
}

}  // namespace

[[maybe_unused]] const bool forward_registered = register_kernels(
    "gpu_tiled", ops::softmax_forward,
    {{2, "warp_or_block_per_row",
      "a warp (short rows) or a block per row, shuffles for the max and the sum", softmax_forward},
     {3, "row_in_registers",
      "the row read once into registers (rows up to 16 384), y written from them",
      softmax_forward_registers}},
    /*default_version=*/3);
[[maybe_unused]] const bool backward_registered = register_kernels(
    "gpu_tiled", ops::softmax_backward,
    {{2, "warp_or_block_per_row", "a warp or a block per row, shuffles for the dot product",
      softmax_backward},
     {3, "row_in_registers",
      "y and dy read once into registers (rows up to 16 384), dx written from them",
      softmax_backward_registers}},
    /*default_version=*/3);

}  // namespace triptych::gpu_tiled
