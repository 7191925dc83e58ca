// What gpu_naive's one-thread-per-element kernels share (activations.cu, bias.cu,
// reduce.cu, losses.cu): the thread's element index and the grid that gives every element a thread.
// For .cu files of gpu/naive only: it holds device code.
#pragma once

#include "gpu/runtime/cuda.hpp"

#include <cstdint>

#include "common/math.hpp"

namespace triptych::gpu_naive {

constexpr int elementwise_threads = 256;

// Element indices are 64-bit: a tensor may hold more than 2^31 floats (8 GiB), and
// blockIdx.x * blockDim.x would overflow a 32-bit int long before gridDim.x (2^31 - 1) runs out.
__device__ inline std::int64_t element_index() {
    return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}

// One thread per element: ceil(n / 256) blocks of 256.
inline dim3 elementwise_grid(std::int64_t n) {
    return dim3(unsigned(ceil_div<std::int64_t>(n, elementwise_threads)));
}

}  // namespace triptych::gpu_naive
