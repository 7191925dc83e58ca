// gpu_tiled ReLU: y = max(x, 0), and its gradient dx = (x > 0 ? dy : 0), elementwise over n floats.
//
// version 2: relu_forward_kernel / relu_backward_kernel, float4 loads in a grid-stride loop
// (version 1 is gpu/naive/relu.cu).
//
// Why there is no shared-memory tiling here: tiling pays when a value loaded once is used many
// times (a GEMM uses each element of A N times). ReLU uses each input exactly once, one compare per
// 8 bytes moved (12 backward), so it is bound by memory bandwidth and no arithmetic trick helps.
// What remains is to move the bytes with as few instructions as possible:
//   - float4: one 16-byte load or store per thread instead of four 4-byte ones;
//   - a grid-stride loop: a fixed grid that fills the GPU a few times over, each thread looping
//     over several float4s, instead of one thread (and its index arithmetic) per element.
// The next gain would be fusion: applying ReLU as the producing op writes its output saves a whole
// round trip through memory.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "common/math.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int block_threads = 256;
// 4096 blocks of 256 threads: about four waves of resident blocks on an H100/H200 (132 SMs, 8 such
// blocks each). More blocks would only add scheduling; larger tensors loop instead.
constexpr std::int64_t max_blocks = 4096;

// Runs scalar(i) or vector(i) (for elements i..i+3) over [0, n), split into three parts:
//   [0, head)                      scalar, until every pointer is 16-byte aligned (see launch_grid)
//   [head, head + 4 * n4)          float4s
//   [head + 4 * n4, n)             scalar, the 0 to 3 elements that do not fill a float4
// each as a grid-stride loop: thread t of T takes t, t + T, t + 2T, ...
template <typename Scalar, typename Vector>
__device__ void for_each_float4(std::int64_t n, std::int64_t head, Scalar scalar, Vector vector) {
    const std::int64_t first = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
    const std::int64_t n4 = (n - head) / 4;
    for (std::int64_t i = first; i < head; i += stride) scalar(i);
    for (std::int64_t i = first; i < n4; i += stride) vector(head + 4 * i);
    for (std::int64_t i = head + 4 * n4 + first; i < n; i += stride) scalar(i);
}

__device__ float relu(float v) { return v > 0.0f ? v : 0.0f; }

__global__ void relu_forward_kernel(std::int64_t n, std::int64_t head, const float* x, float* y) {
    for_each_float4(
        n, head, [=](std::int64_t i) { y[i] = relu(x[i]); },
        [=](std::int64_t i) {
            const float4 v = *reinterpret_cast<const float4*>(x + i);
            *reinterpret_cast<float4*>(y + i) =
                make_float4(relu(v.x), relu(v.y), relu(v.z), relu(v.w));
        });
}

// At exactly x == 0 the gradient is taken as 0, as in cpu/naive/relu.hpp.
__global__ void relu_backward_kernel(std::int64_t n, std::int64_t head, const float* x,
                                     const float* dy, float* dx) {
    for_each_float4(
        n, head, [=](std::int64_t i) { dx[i] = x[i] > 0.0f ? dy[i] : 0.0f; },
        [=](std::int64_t i) {
            const float4 v = *reinterpret_cast<const float4*>(x + i);
            const float4 g = *reinterpret_cast<const float4*>(dy + i);
            *reinterpret_cast<float4*>(dx + i) =
                make_float4(v.x > 0.0f ? g.x : 0.0f, v.y > 0.0f ? g.y : 0.0f,
                            v.z > 0.0f ? g.z : 0.0f, v.w > 0.0f ? g.w : 0.0f);
        });
}

// The number of leading elements to handle one at a time so that every pointer is 16-byte aligned
// after them, as float4 accesses require. Buffers from device_allocate start aligned (cudaMalloc
// gives 256 bytes), but a caller may pass a pointer into the middle of one (one image of a batch):
// then up to 3 elements are peeled off. If the pointers sit at different offsets from a 16-byte
// boundary, no split aligns them all, and every element is handled one at a time (head = n).
std::int64_t scalar_head(std::int64_t n, std::initializer_list<const float*> pointers) {
    const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(*pointers.begin()) % 16;
    for (const float* p : pointers)
        if (reinterpret_cast<std::uintptr_t>(p) % 16 != offset) return n;
    return std::min<std::int64_t>(n, std::int64_t((16 - offset) % 16 / sizeof(float)));
}

dim3 grid_for(std::int64_t n) {
    return dim3(unsigned(
        std::clamp<std::int64_t>(ceil_div<std::int64_t>(n, 4 * block_threads), 1, max_blocks)));
}

}  // namespace

void relu_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(relu_forward_kernel, grid_for(n), dim3(block_threads), 0, n, scalar_head(n, {x, y}),
                x, y);
}

void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx) {
    gpu::launch(relu_backward_kernel, grid_for(n), dim3(block_threads), 0, n,
                scalar_head(n, {x, dy, dx}), x, dy, dx);
}

}  // namespace triptych::gpu_tiled
