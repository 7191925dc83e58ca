// The reductions gpu_tiled's kernels share (bias.cu, softmax.cu, losses.cu, reduce.cu):
//   - warp_sum / block_sum: a sum over the 32 lanes of a warp with shuffles, and over a whole block
//     (shuffles inside each warp, then one value per warp through shared memory);
//   - MaxSum: the running (max, sum of e^(x - max)) of the online softmax, and its warp/block
//     reductions;
//   - WarpPerRow / BlockPerRow and launch_per_row: a row of a (rows, cols) matrix reduced by one
//     warp (short rows) or one block (long rows), for softmax and cross-entropy;
//   - row_values_per_thread / register_row_max_cols: how much of a row each thread of its group
//     holds in registers in the versions that read the row once.
// Every reduction here adds in a fixed order: the same input gives the same bits on every run.
// For .cu files of gpu/tiled only: it holds device code.
#pragma once

#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cfloat>
#include <cstdint>

#include "common/math.hpp"

namespace triptych::gpu_tiled {

constexpr unsigned full_warp = 0xffffffffu;

// The sum of v over the 32 lanes, in every lane. A butterfly: at each step lane i adds the value of
// lane i ^ offset, so after log2(32) = 5 steps every lane has added all 32. Lanes i and i ^ offset
// add the same two numbers (in swapped order, which float addition does not notice), so every
// lane ends with the same bits.
__device__ inline float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(full_warp, v, offset);
    return v;
}

// The sum of v over the block, in every thread. blockDim.x must be a multiple of 32 (the block is
// one-dimensional). Every thread of the block must call it: it contains barriers.
__device__ inline float block_sum(float v) {
    __shared__ float warp_totals[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_sum(v);
    __syncthreads();  // a previous call's readers are done with warp_totals
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    // Every warp reduces the warp totals itself: no third barrier to broadcast one warp's result.
    return warp_sum(lane < warps ? warp_totals[lane] : 0.0f);
}

// ---- online softmax statistics
// -------------------------------------------------------------------
//
// Softmax needs the row max m (subtracted so that no e^x overflows) and s = sum_j e^(x_j - m). The
// online form (Milakov & Gimelshein 2018) gets both in one pass over the row: when a new value
// exceeds the running max, the sum so far is rescaled by e^(old max - new max). Two partial results
// combine the same way, which makes (m, s) a reduction like any sum.
struct MaxSum {
    float max;  // -FLT_MAX (not -inf) when empty: then x - max is never -inf - -inf = NaN
    float sum;

    __device__ static MaxSum empty() { return {-FLT_MAX, 0.0f}; }

    __device__ void add(float x) {
        if (x > max) {
            sum = sum * expf(max - x) + 1.0f;
            max = x;
        } else {
            sum += expf(x - max);
        }
    }
};

__device__ inline MaxSum combine(MaxSum a, MaxSum b) {
    const float max = fmaxf(a.max, b.max);
    return {max, a.sum * expf(a.max - max) + b.sum * expf(b.max - max)};
}

// (max, sum) over the 32 lanes. Shuffles move 4-byte values, so max and sum travel separately. The
// compiler may contract combine's a*x + b*y into a fused multiply-add, which rounds lanes i and
// i ^ offset differently; lane 0's result is broadcast so that the whole warp uses the same bits.
__device__ inline MaxSum warp_max_sum(MaxSum v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        v = combine(v, {__shfl_xor_sync(full_warp, v.max, offset),
                        __shfl_xor_sync(full_warp, v.sum, offset)});
    return {__shfl_sync(full_warp, v.max, 0), __shfl_sync(full_warp, v.sum, 0)};
}

// (max, sum) over the block, in every thread; the same contract as block_sum.
__device__ inline MaxSum block_max_sum(MaxSum v) {
    __shared__ float warp_maxes[32];
    __shared__ float warp_sums[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_max_sum(v);
    __syncthreads();  // a previous call's readers are done with the arrays
    if (lane == 0) {
        warp_maxes[warp] = v.max;
        warp_sums[warp] = v.sum;
    }
    __syncthreads();
    return warp_max_sum(lane < warps ? MaxSum{warp_maxes[lane], warp_sums[lane]} : MaxSum::empty());
}

// ---- one row per warp, or one row per block
// ------------------------------------------------------
//
// A row-wise kernel is written once against a "group" of threads that owns one row at a time:
// its threads stride over the row (thread `lane()` takes columns lane, lane + size, ...), then
// reduce with the group's sum / max_sum. Rows are taken with a grid-stride loop, the same for all
// threads of a group, so a group's barriers and shuffles are always reached by all its threads.

constexpr std::int64_t warp_row_max_cols = 1024;
constexpr int rows_per_warp_block = 8;  // blocks of 8 warps, a row each
constexpr int row_block_threads = 512;  // BlockPerRow: 16 warps on one row
// More blocks than the GPU holds at once gain nothing; the row loop covers the rest (and
// gpu::grid_rows caps them at 65535, or lower in the simulator to test that loop).
constexpr std::int64_t max_row_blocks = 65536;

// A warp per row: no shared memory and no barrier, only shuffles. For short rows (up to
// warp_row_max_cols, 32 values per lane), where a whole block per row would leave most threads
// idle.
struct WarpPerRow {
    __device__ static std::int64_t first_row() {
        return std::int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    }
    __device__ static std::int64_t row_stride() {
        return std::int64_t(gridDim.x) * (blockDim.x / 32);
    }
    __device__ static int lane() { return threadIdx.x % 32; }
    __device__ static int size() { return 32; }
    static constexpr int threads = 32;  // size(), for version 3 (see "a row held in registers")
    __device__ static float sum(float v) { return warp_sum(v); }
    __device__ static MaxSum max_sum(MaxSum v) { return warp_max_sum(v); }
};

// A block per row: for long rows (up to 100 000 and beyond), so that many warps stream one row.
struct BlockPerRow {
    __device__ static std::int64_t first_row() { return blockIdx.x; }
    __device__ static std::int64_t row_stride() { return gridDim.x; }
    __device__ static int lane() { return threadIdx.x; }
    __device__ static int size() { return blockDim.x; }
    static constexpr int threads = row_block_threads;  // blockDim.x as launch_per_row launches it
    __device__ static float sum(float v) { return block_sum(v); }
    __device__ static MaxSum max_sum(MaxSum v) { return block_max_sum(v); }
};

// ---- a row held in registers
// -------------------------------------------------------------------
//
// Version 3 of softmax.cu and losses.cu reads a row once: thread `lane()` of the group copies its
// columns lane + k * threads, k = 0 .. row_values_per_thread - 1, into a local array, reduces over
// that array and writes the output from it. The array stays in registers only if every index into
// it is a compile-time constant: its size is fixed and every loop over it is unrolled (an index
// known only at run time would put it in local memory, which lives in DRAM). The kernels step by
// the compile-time `threads`, not size() (a block's blockDim.x is known only at run time), and
// test offset k * threads against the row's columns left from the thread's first: each offset is
// then a constant, carried by the load or store itself, where 32 column indices would each hold
// registers. 32 values per thread cover rows of up to 32 * 32 = 1024 columns for a warp
// (warp_row_max_cols) and 32 * 512 = 16 384 for a block; a longer row falls back to version 2's
// two passes. The kernels carry __launch_bounds__(row_block_threads): a block of 512 threads fits
// on an SM (65 536 registers) only if each thread uses at most 128, and the bound makes ptxas hold
// to that.
constexpr int row_values_per_thread = 32;
constexpr std::int64_t register_row_max_cols =
    std::int64_t(row_block_threads) * row_values_per_thread;

// The first pass of the row-in-registers kernels: this thread's columns of the row, from
// `first` (its first column's element) while `columns` are left, into values[0 ..], the slots past
// the end of the row set to 0 and left out; returns the row's (max, sum of e^(x - max)), reduced
// over the whole group (every thread of it must call this).
template <typename Group>
__device__ inline MaxSum load_row_max_sum(const float* first, std::int64_t columns,
                                          float (&values)[row_values_per_thread]) {
    MaxSum partial = MaxSum::empty();
#pragma unroll
    for (int k = 0; k < row_values_per_thread; ++k) {
        const int offset = k * Group::threads;
        values[k] = offset < columns ? first[offset] : 0.0f;
        if (offset < columns) partial.add(values[k]);
    }
    return Group::max_sum(partial);
}

// Calls run(WarpPerRow{} or BlockPerRow{}, grid, block) with the launch shape for (rows, cols);
// `run` launches the kernel instantiated for that group:
//   launch_per_row(rows, cols, [&](auto group, dim3 grid, dim3 block) {
//       gpu::launch(my_kernel<decltype(group)>, grid, block, 0, ...); });
template <typename Run>
void launch_per_row(std::int64_t rows, std::int64_t cols, Run run) {
    if (cols <= warp_row_max_cols) {
        const std::int64_t blocks = ceil_div<std::int64_t>(rows, rows_per_warp_block);
        run(WarpPerRow{}, dim3(gpu::grid_rows(std::min(blocks, max_row_blocks))),
            dim3(32 * rows_per_warp_block));
    } else {
        run(BlockPerRow{}, dim3(gpu::grid_rows(std::min(rows, max_row_blocks))),
            dim3(row_block_threads));
    }
}

}  // namespace triptych::gpu_tiled
