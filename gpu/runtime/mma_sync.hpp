// Tensor cores without the wrapper: PTX's warp-wide mma.sync instruction, for gemm version 11
// (gpu/tiled/gemm_v9_tensor_cores.cu). Include it after gpu/runtime/cuda.hpp.
//
// wmma (gpu/runtime/tensor_cores.hpp) hides where a fragment's elements live; mma.sync states
// it. For mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, the PTX ISA ("Matrix Fragments for
// mma.m16n8k8", .tf32) gives each lane, with g = lane / 4 and t = lane % 4:
//   a[4]  A (16 x 8, row-major):  a[e] = A(g + 8 * (e % 2), t + 4 * (e / 2))
//   b[2]  B (8 x 8, "col"):       b[e] = B(t + 4 * e, g)
//   d[4]  C and D (16 x 8):       d[e] = D(g + 8 * (e / 2), 2 * t + e % 2)
// A kernel that knows this can load its fragments from shared memory itself, choose a layout in
// which those loads have no bank conflicts, and write D to global memory straight from its
// registers. A and B are TF32 bit patterns in 32-bit registers: to_tf32 rounds a float to one.
//
// Under nvcc these are the instructions themselves (compute capability 8.0 and later); in the
// simulator the multiply is one warp operation (gpu/runtime/sim/sim.cpp, MmaLayout::m16n8k8_ptx)
// that reads every lane's elements where the layout above puts them, and adds each output's 8
// products in k order with fused multiply-adds. The tensor core reads the top 19 bits of each
// input; a GPU may add in another order, so the last bits may differ, within the tolerance the
// checks derive for TF32 inputs.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)

namespace triptych::gpu {

// float -> TF32, rounded to nearest with ties away from zero (cvt.rna.tf32.f32).
__device__ inline std::uint32_t to_tf32(float value) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    std::uint32_t bits;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(value));
    return bits;
#else
    __trap();  // TF32 needs compute capability 8.0
    return 0;
#endif
}

// d = A * B + d for the warp: every lane of the warp calls it, with its own fragments.
__device__ inline void mma_m16n8k8_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                                        const std::uint32_t (&b)[2]) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap();  // mma.sync on TF32 needs compute capability 8.0
#endif
}

}  // namespace triptych::gpu

#else

#include <bit>
#include <source_location>

#include "gpu/runtime/sim/wmma.hpp"

namespace triptych::gpu {

inline std::uint32_t to_tf32(float value) {
    return std::bit_cast<std::uint32_t>(nvcuda::wmma::__float_to_tf32(value));
}

inline void mma_m16n8k8_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                             const std::uint32_t (&b)[2],
                             std::source_location where = std::source_location::current()) {
    nvcuda::wmma::detail::require_whole_warp("mma.sync", where);
    float a_values[4], b_values[2];
    for (int e = 0; e < 4; ++e)
        a_values[e] = nvcuda::wmma::detail::as_tf32(std::bit_cast<float>(a[e]));
    for (int e = 0; e < 2; ++e)
        b_values[e] = nvcuda::wmma::detail::as_tf32(std::bit_cast<float>(b[e]));
    const sim::MmaRequest request{16, 8, 8, a_values, b_values, d, d, sim::MmaLayout::m16n8k8_ptx};
    sim::warp_exchange(sim::WarpOp::mma, 0xffffffffu, reinterpret_cast<std::uintptr_t>(&request), 0,
                       32, where);
}

}  // namespace triptych::gpu

#endif
