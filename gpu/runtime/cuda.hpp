// The first include of every .cu file. It makes the same kernel source build two ways:
//   - under nvcc (__CUDACC__): the real CUDA runtime;
//   - under the host compiler: the CPU simulator (gpu/runtime/sim/sim.hpp), which supplies dim3,
//     threadIdx, __shared__, __syncthreads, shuffles, atomics, float4 ... as host code.
//
// Kernels are written as textbook CUDA, with two exceptions that macros cannot express on the host:
//   - launches go through `launch(kernel, grid, block, shared_bytes, args...)` (launch.hpp), which
//     checks the launch and throws CudaError naming the call site;
//   - dynamic shared memory is declared with TRIPTYCH_DYNAMIC_SHARED(float, tile) instead of
//     `extern __shared__ float tile[];`.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#define TRIPTYCH_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#else
#include "gpu/runtime/sim/sim.hpp"
#define TRIPTYCH_DYNAMIC_SHARED(type, name) \
    type* name = reinterpret_cast<type*>(::triptych::sim::dynamic_shared_memory())
#endif

#include "gpu/runtime/launch.hpp"
