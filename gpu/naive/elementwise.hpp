// What gpu_naive's one-thread-per-element kernels share (activations.cu, bias.cu,
// reduce.cu, losses.cu): the thread's element index and the grid that gives every element a thread.
// For .cu files of gpu/naive only: it holds device code.
#pragma once

#include "gpu/runtime/cuda.hpp"

#include <cstdint>

#include "common/math.hpp"

namespace triptych::gpu_naive {

constexpr int elementwise_threads = 256;

// Element indices are 64-bit: blockIdx.x * blockDim.x is unsigned 32-bit arithmetic, which wraps
// for a tensor of more than 2^32 floats (16 GiB, which fits on an H200) long before gridDim.x
// (2^31 - 1) runs out; widening one side first keeps the product exact.
__device__ inline std::int64_t element_index() {
    return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}

// One thread per element: ceil(n / 256) blocks of 256.
inline dim3 elementwise_grid(std::int64_t n) {
    return dim3(unsigned(ceil_div<std::int64_t>(n, elementwise_threads)));
}

}  // namespace triptych::gpu_naive
