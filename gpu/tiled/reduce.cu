// gpu_tiled sum (and mean, which is sum / n): the total of n floats, returned to the host.
//
// Three versions (version 1 is gpu/naive/reduce.cu, one atomicAdd per element). Each thread first
// adds its share of x in registers; they differ in how a block then adds its 256 partial sums:
//
// version 2, interleaved_tree: the textbook first tree, in shared memory. At step s (1, 2, 4, ...)
//   thread t adds partial[t + s] into partial[t] when t is a multiple of 2s. Half of the lanes of
//   every warp drop out at the first step, three quarters at the second: every warp keeps issuing
//   each step's instructions for fewer and fewer active lanes (divergence). `triptych profile --op
//   sum --backend gpu_tiled@2` counts it: few active lanes per shared-memory request.
// version 3, sequential_tree: the same tree with the work packed into the low threads. At step s
//   (128, 64, ..., 1) thread t < s adds partial[t + s]: whole warps drop out together, so a warp is
//   either fully active or not issued at all until the last five steps (fewer requests, 32 active
//   lanes in most).
// version 4, block_tree: each thread adds its share of x in a grid-stride float4 loop
// (elementwise.hpp), in
//   registers; the block adds its 256 partial sums with warp shuffles, then one value per warp
//   through shared memory (block_sum in block_reduce.hpp). Then, by mode:
//     fast:          thread 0 of each block atomicAdds the block's total to the result: one atomic
//                    per block instead of one per element. The blocks finish in any order, so the
//                    last bits of the result may differ between runs.
//     deterministic: each block writes its total to partials[block]; a second launch of the same
//                    kernel, one block over the partials, adds them in a fixed order. The grid
//                    depends on n only (elementwise_grid), so the same x gives the same bits on
//                    every run and every GPU. The losses (losses.cu) use this mode.
// The result travels to the host through a small device buffer (the partials and the total) in
// the calling thread's workspace: for a small n the copy back, not the kernels, is most of the
// time. sum_into (ops.hpp) is version 4's deterministic mode without it: its caller gives the
// scratch, and the total stays in device memory (the losses use it). Its
// figures measured on a GPU: lessons/06_losses_reductions/README.md, "On a GPU".
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/runtime/stream.hpp"
#include "gpu/tiled/block_reduce.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

// This thread's share of x: elements t, t + T, ... of the grid-stride loop, added in registers.
__device__ inline float thread_partial(std::int64_t n, std::int64_t head, const float* x) {
    float partial = 0.0f;
    for_each_float4(
        n, head, [&](std::int64_t i) { partial += x[i]; },
        [&](std::int64_t i) {
            const float4 v = load_float4(x + i);
            partial += (v.x + v.y) + (v.z + v.w);
        });
    return partial;
}

// Called by thread 0 of the block: out[blockIdx.x] = the block's total / divisor (1, or the count
// for a mean), or, when `accumulate`, out[0] += the total.
__device__ inline void write_block_total(float block_total, float* out, bool accumulate,
                                         float divisor) {
    if (accumulate)
        atomicAdd(out, block_total);
    else
        out[blockIdx.x] = block_total / divisor;
}

// Version 2. blockDim.x = elementwise_threads, a power of two.
__global__ void sum_interleaved_kernel(std::int64_t n, std::int64_t head, const float* x,
                                       float* out, bool accumulate, float divisor) {
    __shared__ float partials[elementwise_threads];
    const unsigned t = threadIdx.x;
    partials[t] = thread_partial(n, head, x);
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (t % (2 * s) == 0) partials[t] += partials[t + s];  // divergent: t = 0, 2s, 4s, ...
        __syncthreads();
    }
    if (t == 0) write_block_total(partials[0], out, accumulate, divisor);
}

// Version 3. blockDim.x = elementwise_threads, a power of two.
__global__ void sum_sequential_kernel(std::int64_t n, std::int64_t head, const float* x, float* out,
                                      bool accumulate, float divisor) {
    __shared__ float partials[elementwise_threads];
    const unsigned t = threadIdx.x;
    partials[t] = thread_partial(n, head, x);
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) partials[t] += partials[t + s];  // convergent: threads 0 .. s-1
        __syncthreads();
    }
    if (t == 0) write_block_total(partials[0], out, accumulate, divisor);
}

// Version 4.
__global__ void sum_kernel(std::int64_t n, std::int64_t head, const float* x, float* out,
                           bool accumulate, float divisor) {
    const float block_total = block_sum(thread_partial(n, head, x));
    if (threadIdx.x == 0) write_block_total(block_total, out, accumulate, divisor);
}

using SumKernel = void(std::int64_t n, std::int64_t head, const float* x, float* out,
                       bool accumulate, float divisor);

// Deterministic mode: one launch per block of elements writes the block totals to partials, then
// a one-block launch adds them in a fixed order and divides by `divisor`.
void sum_in_two_launches(SumKernel* kernel, std::int64_t n, const float* x, float divisor,
                         float* total, float* partials) {
    const dim3 grid = elementwise_grid(n);
    const dim3 block(elementwise_threads);
    const std::int64_t blocks = grid.x;
    gpu::launch(kernel, grid, block, 0, n, scalar_head(n, {x}), x, partials, false, 1.0f);
    gpu::launch(kernel, dim3(1), block, 0, blocks, scalar_head(blocks, {partials}), partials, total,
                false, divisor);
}

// The host side every version shares: one launch per block of elements and, in deterministic
// mode, a second one-block launch over the block totals. The scratch is the calling thread's
// workspace, so no call pays a cudaMalloc and a cudaFree (each waits for the whole device).
float sum_with(SumKernel* kernel, std::int64_t n, const float* x, Reduction mode) {
    // The workspace: the per-block partial sums, then the total.
    const std::int64_t blocks = sum_scratch_floats(n);
    float* partials = gpu::workspace(blocks + 1);
    float* total = partials + blocks;
    if (mode == Reduction::fast) {
        gpu::fill_bytes_async(total, 0, sizeof(float));  // 0.0f: all its bytes zero
        gpu::launch(kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n,
                    scalar_head(n, {x}), x, total, true, 1.0f);
    } else {
        sum_in_two_launches(kernel, n, x, 1.0f, total, partials);
    }
    float result = 0.0f;
    gpu::copy_to_host(&result, total, 1);
    return result;
}

float sum_interleaved(std::int64_t n, const float* x, Reduction mode) {
    return sum_with(sum_interleaved_kernel, n, x, mode);
}
float sum_sequential(std::int64_t n, const float* x, Reduction mode) {
    return sum_with(sum_sequential_kernel, n, x, mode);
}

}  // namespace

float sum(std::int64_t n, const float* x, Reduction mode) {
    return sum_with(sum_kernel, n, x, mode);
}

std::int64_t sum_scratch_floats(std::int64_t n) { return elementwise_grid(n).x; }

void sum_into(std::int64_t n, const float* x, float divisor, float* total, float* scratch) {
    sum_in_two_launches(sum_kernel, n, x, divisor, total, scratch);
}

// AdditionOrder::arrival: in the fast mode the blocks' totals meet in one atomicAdd each.
[[maybe_unused]] const bool registered = register_kernels(
    "gpu_tiled", ops::sum,
    {{2, "interleaved_tree",
      "a shared-memory tree over the block's partial sums, thread t adding at step s when t is a "
      "multiple of 2s: divergent warps",
      sum_interleaved, AdditionOrder::arrival},
     {3, "sequential_tree",
      "the same tree with threads 0 .. s-1 adding at step s: whole warps drop out together",
      sum_sequential, AdditionOrder::arrival},
     {4, "block_tree",
      "float4 loads, a shared-memory and shuffle tree per block, then the block sums", sum,
      AdditionOrder::arrival}},
    /*default_version=*/4);

}  // namespace triptych::gpu_tiled
