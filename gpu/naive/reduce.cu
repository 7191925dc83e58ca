// gpu_naive sum (and mean, which is sum / n): the total of n floats, returned to the host.
//
// version 1 (gpu/tiled/reduce.cu has versions 2 to 4), by mode:
//   fast: sum_atomic_kernel, one thread per element, each atomicAdd-ing its element to one total.
//     The most direct port, and the slowest: n atomics on a single address, which the GPU
//     serialises, in an order that changes from run to run (so do the last bits of the result).
//     And one float total that grows term by term stops growing at 2^24, where adding a value
//     below 1 rounds to no change (lessons/06_losses_reductions/README.md, "On a GPU", has what
//     this kernel measured on an H200).
//   deterministic: two launches, global memory only.
//     sum_strided_kernel: thread t of T (T = 8192, fewer for small n) adds x[t], x[t + T],
//       x[t + 2T], ... in that order (each step, a warp reads 32 consecutive floats) and writes
//       partials[t];
//     sum_in_order_kernel: a single thread adds partials[0], partials[1], ... in index order.
//     The grid depends on n only, so the same x gives the same bits on every run and every GPU.
//     The losses (losses.cu) use this mode.
// The result travels to the host through a small device buffer (the partials and the total) in
// the calling thread's workspace (device.hpp). gpu_tiled's versions replace the serial and atomic
// steps with tree reductions in shared memory and warp shuffles.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>

#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/runtime/stream.hpp"

namespace triptych::gpu_naive {
namespace {

// 32 blocks of 256 threads: T = 8192 partial sums, few enough for one thread to add them in well
// under a millisecond, and enough threads for many loads in flight.
constexpr std::int64_t max_partials = 32 * elementwise_threads;

__global__ void sum_atomic_kernel(std::int64_t n, const float* x, float* total) {
    const std::int64_t i = element_index();
    if (i < n) atomicAdd(total, x[i]);
}

__global__ void sum_strided_kernel(std::int64_t n, const float* x, float* partials) {
    const std::int64_t t = element_index();
    const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
    float sum = 0.0f;
    for (std::int64_t i = t; i < n; i += stride) sum += x[i];
    partials[t] = sum;
}

// *total = (partials[0] + partials[1] + ...) / divisor (1 for a sum, the count for a mean).
__global__ void sum_in_order_kernel(std::int64_t count, const float* partials, float divisor,
                                    float* total) {
    float sum = 0.0f;
    for (std::int64_t i = 0; i < count; ++i) sum += partials[i];
    *total = sum / divisor;
}

dim3 strided_grid(std::int64_t n) { return elementwise_grid(std::min(n, max_partials)); }

}  // namespace

std::int64_t sum_scratch_floats(std::int64_t n) {
    return std::int64_t(strided_grid(n).x) * elementwise_threads;
}

void sum_into(std::int64_t n, const float* x, float divisor, float* total, float* scratch) {
    const dim3 grid = strided_grid(n);
    gpu::launch(sum_strided_kernel, grid, dim3(elementwise_threads), 0, n, x, scratch);
    gpu::launch(sum_in_order_kernel, dim3(1), dim3(1), 0, sum_scratch_floats(n), scratch, divisor,
                total);
}

// The scratch is the calling thread's workspace: no call pays a cudaMalloc and a cudaFree.
float sum(std::int64_t n, const float* x, Reduction mode) {
    float result = 0.0f;
    if (mode == Reduction::fast) {
        float* total = gpu::workspace(1);
        gpu::fill_bytes_async(total, 0, sizeof(float));  // the total starts at 0.0f
        gpu::launch(sum_atomic_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, x,
                    total);
        gpu::copy_to_host(&result, total, 1);
        return result;
    }
    // The workspace: one partial sum per thread of sum_strided_kernel, then the total.
    const std::int64_t partials = sum_scratch_floats(n);
    float* scratch = gpu::workspace(partials + 1);
    float* total = scratch + partials;
    sum_into(n, x, 1.0f, total, scratch);
    gpu::copy_to_host(&result, total, 1);
    return result;
}

[[maybe_unused]] const bool registered = register_kernel(
    "gpu_naive", ops::sum,
    {1, "atomics_or_serial",
     "fast: an atomicAdd per element; deterministic: strided partials added by one thread", sum,
     AdditionOrder::arrival});  // in the fast mode

}  // namespace triptych::gpu_naive
