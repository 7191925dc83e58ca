// gpu_tiled sum (and mean, which is sum / n): the total of n floats, returned to the host.
//
// version 2 (version 1 is gpu/naive/reduce.cu, one atomicAdd per element):
//   sum_kernel: each thread adds its share of x in a grid-stride float4 loop (elementwise.hpp), in
//   registers; the block adds its 256 partial sums with warp shuffles, then one value per warp
//   through shared memory (block_sum in block_reduce.hpp). Then, by mode:
//     fast:          thread 0 of each block atomicAdds the block's total to the result: one atomic
//                    per block instead of one per element. The blocks finish in any order, so the
//                    last bits of the result may differ between runs.
//     deterministic: each block writes its total to partials[block]; a second launch of the same
//                    kernel, one block over the partials, adds them in a fixed order. The grid
//                    depends on n only (elementwise_grid), so the same x gives the same bits on
//                    every run and every GPU. The losses (losses.cu) use this mode.
// The result travels to the host through a small device buffer (the partials and the total),
// allocated per call. Measured on an H200: 2^26 floats in 153 us (1.76 TB/s) in either mode; for
// 1000 floats, 28 us, nearly all of it that allocation and the copy back, not the kernels.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/tiled/block_reduce.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

// out[blockIdx.x] = this block's share of the sum, or, when `accumulate`, out[0] += it (atomic).
__global__ void sum_kernel(std::int64_t n, std::int64_t head, const float* x, float* out,
                           bool accumulate) {
    float partial = 0.0f;
    for_each_float4(
        n, head, [&](std::int64_t i) { partial += x[i]; },
        [&](std::int64_t i) {
            const float4 v = load_float4(x + i);
            partial += (v.x + v.y) + (v.z + v.w);
        });
    const float block_total = block_sum(partial);
    if (threadIdx.x != 0) return;
    if (accumulate)
        atomicAdd(out, block_total);
    else
        out[blockIdx.x] = block_total;
}

}  // namespace

float sum(std::int64_t n, const float* x, Reduction mode) {
    const dim3 grid = elementwise_grid(n);
    const dim3 block(elementwise_threads);
    // scratch[0, blocks): the per-block partial sums; scratch[elementwise_max_blocks]: the total.
    const std::shared_ptr<float> scratch = gpu::device_allocate(elementwise_max_blocks + 1);
    float* partials = scratch.get();
    float* total = partials + elementwise_max_blocks;
    if (mode == Reduction::fast) {
        const float zero = 0.0f;
        gpu::copy_to_device(total, &zero, 1);
        gpu::launch(sum_kernel, grid, block, 0, n, scalar_head(n, {x}), x, total, true);
    } else {
        const std::int64_t blocks = grid.x;
        gpu::launch(sum_kernel, grid, block, 0, n, scalar_head(n, {x}), x, partials, false);
        gpu::launch(sum_kernel, dim3(1), block, 0, blocks, scalar_head(blocks, {partials}),
                    partials, total, false);
    }
    float result = 0.0f;
    gpu::copy_to_host(&result, total, 1);
    return result;
}

[[maybe_unused]] const bool registered = register_kernel(
    "gpu_tiled", ops::sum,
    {2, "block_tree",
     "float4 loads, a shared-memory and shuffle tree per block, then the block sums", sum});

}  // namespace triptych::gpu_tiled
