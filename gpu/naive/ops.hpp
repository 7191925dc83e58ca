// gpu_naive: the first, direct CUDA port. One thread per output element (per row for softmax and
// cross-entropy, per column for bias_backward), global memory only, consecutive threads on
// consecutive addresses (coalesced) where that costs nothing. One op per .cu file, each registering
// its kernel at its bottom (common/kernels.hpp); every pointer is device memory.
//
// dense_forward has no kernel of its own here: gpu_naive runs the Backend's unfused default (gemm,
// bias_add, activation as three launches); gpu_tiled fuses them (gpu/tiled/gemm.cu).
//
// This header declares what one file of the panel calls in another.
#pragma once

#include <cstdint>

#include "common/ops.hpp"

namespace triptych::gpu_naive {

// reduce.cu: the sum of n floats, returned to the host (the losses reduce with it).
float sum(std::int64_t n, const float* x, Reduction mode);
// reduce.cu: the deterministic sum of n floats divided by `divisor` (1, or n for a mean), written
// to *total in device memory by launches on the current stream; nothing waits for it, nothing is
// allocated. `scratch` holds sum_scratch_floats(n) floats.
std::int64_t sum_scratch_floats(std::int64_t n);
void sum_into(std::int64_t n, const float* x, float divisor, float* total, float* scratch);

}  // namespace triptych::gpu_naive
