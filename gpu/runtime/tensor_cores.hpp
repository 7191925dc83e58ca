// Tensor cores for the kernels that use them (gpu/tiled/gemm_v9_*.cu): CUDA's warp matrix
// functions, nvcuda::wmma, and its bfloat16 type. Under nvcc the real <mma.h> and <cuda_bf16.h>;
// in the simulator, gpu/runtime/sim/wmma.hpp, which says how it spreads a fragment over the lanes
// and how it rounds. Include it after gpu/runtime/cuda.hpp.
#pragma once

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <mma.h>
#else
#include "gpu/runtime/sim/wmma.hpp"
#endif
