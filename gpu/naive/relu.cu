// gpu_naive ReLU: y = max(x, 0), and its gradient dx = (x > 0 ? dy : 0), elementwise over n floats
// (x, y, dy, dx all hold n elements; the shape does not matter to an elementwise op).
//
// version 1: relu_forward_kernel / relu_backward_kernel, one thread per element.
// Thread i touches element i, so a warp reads and writes 32 consecutive floats: coalesced for free.
// gpu/tiled/relu.cu is the optimised version (float4 loads, grid-stride loop).
#include "gpu/runtime/cuda.hpp"

#include "common/math.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

constexpr int block_threads = 256;

// Element indices are 64-bit: a tensor may hold more than 2^31 floats (8 GiB), and
// blockIdx.x * blockDim.x would overflow a 32-bit int long before gridDim.x (2^31 - 1) runs out.
__device__ std::int64_t element_index() {
    return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}

__global__ void relu_forward_kernel(std::int64_t n, const float* x, float* y) {
    const std::int64_t i = element_index();
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

// At exactly x == 0 the gradient is taken as 0, as in cpu/naive/relu.hpp.
__global__ void relu_backward_kernel(std::int64_t n, const float* x, const float* dy, float* dx) {
    const std::int64_t i = element_index();
    if (i < n) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

dim3 grid_for(std::int64_t n) { return dim3(unsigned(ceil_div<std::int64_t>(n, block_threads))); }

}  // namespace

void relu_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(relu_forward_kernel, grid_for(n), dim3(block_threads), 0, n, x, y);
}

void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx) {
    gpu::launch(relu_backward_kernel, grid_for(n), dim3(block_threads), 0, n, x, dy, dx);
}

}  // namespace triptych::gpu_naive
