// gpu_tiled: the optimised hand-written kernels. GEMM stages tiles of A and B in shared memory and
// gives each thread an 8x8 block of C in registers (versions 3-8 of the ladder, gemm.cu); the
// fused dense forward is that GEMM with bias and activation applied before the store. Elementwise
// ops, which have no data to reuse, use float4 loads and a grid-stride loop instead
// (elementwise.hpp); reductions use shared-memory trees and warp shuffles (block_reduce.hpp). One
// op per .cu file, each registering its kernels at its bottom (common/kernels.hpp); every pointer
// is device memory. See each .cu file for why.
//
// This header declares what one file of the panel calls in another.
#pragma once

#include <cstdint>

#include "common/ops.hpp"

namespace triptych::gpu_tiled {

// gemm.cu: the default GEMM (version 8 of the ladder), which the im2col convolution runs.
void gemm(const GemmShape& s, const float* A, const float* B, float* C);

// gemm_v3_shared_tiles.cu: version 3 without its tiles' padding column, which is not a step of the
// ladder but what lesson 03 compares it with (its transposing stores hit one bank 32 times).
void gemm_shared_tiles_unpadded(const GemmShape& s, const float* A, const float* B, float* C);

// conv2d.cu: out[i] = the sum of partial[split * count + i] over the splits, in split order (plus
// out[i] when `accumulate`): the partial sums of a weight gradient split over blocks.
void sum_splits(std::int64_t count, std::int64_t splits, const float* partial, float* out,
                bool accumulate);
// reduce.cu: the sum of n floats, returned to the host (the losses reduce with it).
float sum(std::int64_t n, const float* x, Reduction mode);
// reduce.cu: the deterministic sum of n floats divided by `divisor` (1, or n for a mean), written
// to *total in device memory by launches on the current stream (version 4's kernel); nothing
// waits for it, nothing is allocated. `scratch` holds sum_scratch_floats(n) floats.
std::int64_t sum_scratch_floats(std::int64_t n);
void sum_into(std::int64_t n, const float* x, float divisor, float* total, float* scratch);

}  // namespace triptych::gpu_tiled
