// What gpu_tiled's elementwise kernels share (activations.cu, bias.cu, and the sum and MSE
// kernels, which stream their input the same way):
//   - for_each_float4: a grid-stride loop over n floats that uses 16-byte (float4) accesses for all
//     but a few edge elements, correct for any n and any pointer alignment;
//   - scalar_head / elementwise_grid: the host side of that loop (alignment split, grid size);
// For .cu files of gpu/tiled only: it holds device code.
#pragma once

#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "common/activations.hpp"
#include "common/math.hpp"
#include "common/ops.hpp"

namespace triptych::gpu_tiled {

constexpr int elementwise_threads = 256;
// 4096 blocks of 256 threads: about four waves of resident blocks on an H100/H200 (132 SMs, 8 such
// blocks each). More blocks would only add scheduling; larger tensors loop instead.
constexpr std::int64_t elementwise_max_blocks = 4096;

// Runs scalar(i) or vector(i) (for elements i..i+3) over [0, n), split into three parts:
//   [0, head)                      scalar, until every pointer is 16-byte aligned (see scalar_head)
//   [head, head + 4 * n4)          float4s
//   [head + 4 * n4, n)             scalar, the 0 to 3 elements that do not fill a float4
// each as a grid-stride loop: thread t of T takes t, t + T, t + 2T, ... Consecutive threads take
// consecutive float4s, so a warp moves 512 contiguous bytes per instruction.
template <typename Scalar, typename Vector>
__device__ void for_each_float4(std::int64_t n, std::int64_t head, Scalar scalar, Vector vector) {
    const std::int64_t first = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
    const std::int64_t n4 = (n - head) / 4;
    for (std::int64_t i = first; i < head; i += stride) scalar(i);
    for (std::int64_t i = first; i < n4; i += stride) vector(head + 4 * i);
    for (std::int64_t i = head + 4 * n4 + first; i < n; i += stride) scalar(i);
}

// 16-byte load and store; p must be 16-byte aligned (for_each_float4 guarantees it for its vector
// part).
__device__ inline float4 load_float4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ inline void store_float4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }

// f applied to each of the four lanes of v.
template <typename F>
__device__ float4 map_float4(float4 v, F f) {
    return make_float4(f(v.x), f(v.y), f(v.z), f(v.w));
}

// The number of leading elements to handle one at a time so that every pointer is 16-byte aligned
// after them, as float4 accesses require. Buffers from device_allocate start aligned (cudaMalloc
// gives 256 bytes), but a caller may pass a pointer into the middle of one (one image of a batch):
// then up to 3 elements are peeled off. If the pointers sit at different offsets from a 16-byte
// boundary, no split aligns them all, and every element is handled one at a time (head = n).
inline std::int64_t scalar_head(std::int64_t n, std::initializer_list<const float*> pointers) {
    const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(*pointers.begin()) % 16;
    for (const float* p : pointers)
        if (reinterpret_cast<std::uintptr_t>(p) % 16 != offset) return n;
    return std::min<std::int64_t>(n, std::int64_t((16 - offset) % 16 / sizeof(float)));
}

// Enough blocks for one float4 per thread, at most elementwise_max_blocks. It depends on n only,
// so a reduction that follows this split adds in the same order on every run and every GPU.
inline dim3 elementwise_grid(std::int64_t n) {
    return dim3(unsigned(std::clamp<std::int64_t>(
        ceil_div<std::int64_t>(n, 4 * elementwise_threads), 1, elementwise_max_blocks)));
}

// ---- the activations (common/activations.hpp has the formulas) --------------------------------

// y = Act::forward(x) over n floats, float4 at a time.
template <typename Act>
__global__ void activation_forward_kernel(std::int64_t n, std::int64_t head, const float* x,
                                          float* y) {
    const auto forward = [](float v) { return Act::forward(v); };
    for_each_float4(
        n, head, [=](std::int64_t i) { y[i] = forward(x[i]); },
        [=](std::int64_t i) { store_float4(y + i, map_float4(load_float4(x + i), forward)); });
}

// dx = Act::backward(in, dy) over n floats, float4 at a time; `in` is the forward's input or
// output.
template <typename Act>
__global__ void activation_backward_kernel(std::int64_t n, std::int64_t head, const float* in,
                                           const float* dy, float* dx) {
    for_each_float4(
        n, head, [=](std::int64_t i) { dx[i] = Act::backward(in[i], dy[i]); },
        [=](std::int64_t i) {
            const float4 v = load_float4(in + i);
            const float4 g = load_float4(dy + i);
            store_float4(dx + i, make_float4(Act::backward(v.x, g.x), Act::backward(v.y, g.y),
                                             Act::backward(v.z, g.z), Act::backward(v.w, g.w)));
        });
}

template <typename Act>
void activation_forward(std::int64_t n, const float* x, float* y) {
    gpu::launch(activation_forward_kernel<Act>, elementwise_grid(n), dim3(elementwise_threads), 0,
                n, scalar_head(n, {x, y}), x, y);
}

template <typename Act>
void activation_backward(std::int64_t n, const float* in, const float* dy, float* dx) {
    gpu::launch(activation_backward_kernel<Act>, elementwise_grid(n), dim3(elementwise_threads), 0,
                n, scalar_head(n, {in, dy, dx}), in, dy, dx);
}

}  // namespace triptych::gpu_tiled
