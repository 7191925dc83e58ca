// gpu_tiled: the optimised hand-written kernels. GEMM stages tiles of A and B in shared memory and
// gives each thread an 8x8 block of C in registers; ReLU, which has no data to reuse, uses float4
// loads and a grid-stride loop instead (see each .cu file for why).
// Host launchers, one op per .cu file; every pointer is device memory.
#pragma once

#include <cstdint>

#include "common/ops.hpp"

namespace triptych::gpu_tiled {

// Version 3 of lesson 03's GEMM (2D block tiling); the gpu_tiled variant.
void gemm(const GemmShape& s, const float* A, const float* B, float* C);
// Version 2 (32 x 32 shared-memory tiles), kept so that lesson 03 and the benchmarks can show
// the gain of each step: naive (gpu_naive::gemm), shared tiles, then 2D block tiling.
void gemm_shared_tiles(const GemmShape& s, const float* A, const float* B, float* C);
void relu_forward(std::int64_t n, const float* x, float* y);
void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx);

}  // namespace triptych::gpu_tiled
