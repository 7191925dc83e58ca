// gpu_naive: the first, direct CUDA port. One thread per output element, global memory only,
// consecutive threads on consecutive addresses (coalesced) where that costs nothing.
// Host launchers, one op per .cu file (gemm.cu, relu.cu); every pointer is device memory.
#pragma once

#include <cstdint>

#include "common/ops.hpp"

namespace triptych::gpu_naive {

void gemm(const GemmShape& s, const float* A, const float* B, float* C);
void relu_forward(std::int64_t n, const float* x, float* y);
void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx);

}  // namespace triptych::gpu_naive
