// CUDA's warp matrix functions (nvcuda::wmma, <mma.h>) and its bfloat16 type (<cuda_bf16.h>) in
// the simulator, for the tensor-core kernels (gpu/runtime/tensor_cores.hpp includes the real ones
// under nvcc, this file otherwise).
//
// A fragment is a warp's tile of a matrix, spread over its 32 lanes. CUDA leaves the spread
// unspecified ("opaque"), so this simulator chooses one and documents it: element i of the tile
// in row-major order (i = row * columns + column) is lane i % 32's x[i / 32]. A kernel that
// depends on the spread (that reads x[] as particular rows) is wrong on a GPU; one that applies
// the same function to every x[] (a conversion, a scale) is right on both. The shapes and element
// counts are CUDA's:
//   m16n16k8  tf32 A (16 x 8) and B (8 x 16): 4 elements per lane; float accumulator: 8
//   m16n16k16 bf16 A (16 x 16) and B: 8 elements per lane; float accumulator: 8
//
// Precision, as the hardware does it: a tf32 fragment stores floats, but the tensor core reads
// only their sign, exponent and the top 10 bits of the mantissa (the low 13 are ignored: a
// truncation); __float_to_tf32 rounds to nearest (ties away from zero) first, which kernels do
// when they stage a tile. bf16 keeps 8 bits of mantissa (__float2bfloat16 rounds to nearest even).
// Products and sums are in float: mma_sync adds each output's k products in k order with fused
// multiply-adds. A GPU's tensor cores add in another order (and may truncate), so the last bits
// may differ, within the tolerance the checks derive for the inputs' precision.
//
// load_matrix_sync and store_matrix_sync check CUDA's rules for the tile's address and stride
// (a CudaError naming the call's file:line where one is broken: see require_tile_rules).
// load_matrix_sync, store_matrix_sync and fill_fragment touch only the calling lane's elements;
// mma_sync waits until all 32 lanes of the warp have called it (warp_exchange), then computes
// every lane's D, so it counts as one warp operation. All four must be called by every lane of
// the warp with the same arguments, as in CUDA.
#pragma once

#include <bit>
#include <cstdint>
#include <source_location>
#include <string>
#include <type_traits>

#include "gpu/runtime/sim/sim.hpp"

// ---- bfloat16
// ------------------------------------------------------------------------------------

struct __nv_bfloat16 {
    std::uint16_t bits;
};

// Round to nearest, ties to even; NaN stays NaN (quiet).
inline __nv_bfloat16 __float2bfloat16(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return {std::uint16_t((bits >> 16) | 0x0040u)};
    const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
    return {std::uint16_t((bits + rounding) >> 16)};
}
inline float __bfloat162float(__nv_bfloat16 value) {
    return std::bit_cast<float>(std::uint32_t(value.bits) << 16);
}

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}  // namespace precision

// Round to nearest, ties away from zero, to 10 bits of mantissa (cvt.rna.tf32.f32); the low 13
// bits of the result are 0. Infinities and NaN pass unchanged.
inline float __float_to_tf32(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7f800000u) == 0x7f800000u) return value;
    return std::bit_cast<float>((bits + 0x1000u) & 0xffffe000u);
}

namespace detail {

// What the tensor core reads of a tf32 element: the top 19 bits.
inline float as_tf32(float value) {
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(value) & 0xffffe000u);
}

// The rows and columns of a fragment's tile, its element type, and how one becomes a float.
template <typename Use, int m, int n, int k>
struct tile_of;
template <int m, int n, int k>
struct tile_of<matrix_a, m, n, k> {
    static constexpr int rows = m, cols = k;
};
template <int m, int n, int k>
struct tile_of<matrix_b, m, n, k> {
    static constexpr int rows = k, cols = n;
};
template <int m, int n, int k>
struct tile_of<accumulator, m, n, k> {
    static constexpr int rows = m, cols = n;
};

template <typename T>
struct storage {
    using type = T;
    static float to_float(T v) { return float(v); }
};
template <>
struct storage<precision::tf32> {
    using type = float;
    static float to_float(float v) { return as_tf32(v); }
};
template <>
struct storage<__nv_bfloat16> {
    using type = __nv_bfloat16;
    static float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
};

// The calling thread's lane: its linear index in the block, modulo 32.
inline int lane() {
    return int(((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) % 32u);
}

}  // namespace detail

template <typename Use, int m, int n, int k, typename T, typename Layout = void>
struct fragment {
    using tile = detail::tile_of<Use, m, n, k>;
    using element_type = typename detail::storage<T>::type;
    static constexpr int rows = tile::rows, cols = tile::cols;
    static constexpr int num_elements = rows * cols / 32;
    static_assert(rows * cols % 32 == 0, "a fragment spreads its tile over 32 lanes");
    element_type x[num_elements];
};

template <typename Use, int m, int n, int k, typename T, typename Layout, typename V>
void fill_fragment(fragment<Use, m, n, k, T, Layout>& f, const V& value) {
    for (auto& element : f.x)
        element = typename fragment<Use, m, n, k, T, Layout>::element_type(value);
}

namespace detail {

// CUDA's rules for a tile in memory (the WMMA section of the CUDA C++ Programming Guide): its
// first element 32-byte aligned, and ldm, its stride in elements, a multiple of 16 bytes. A GPU
// breaks in its own ways where they are broken (a misaligned-address fault, or wrong values); the
// simulator, whose loads work at any address, says so instead.
template <typename P>
void require_tile_rules(const char* operation, const P* p, unsigned ldm,
                        const std::source_location& where) {
    const std::size_t past = reinterpret_cast<std::uintptr_t>(p) % 32;
    const std::size_t stride = std::size_t(ldm) * sizeof(P);
    if (past == 0 && stride % 16 == 0) return;
    const std::string call =
        std::string(operation) + " at " + where.file_name() + ":" + std::to_string(where.line());
    if (past != 0)
        throw triptych::CudaError(call + ": the tile starts " + std::to_string(past) +
                                  " bytes past a 32-byte boundary; it must start on one");
    throw triptych::CudaError(call + ": ldm " + std::to_string(ldm) + " (elements of " +
                              std::to_string(sizeof(P)) + " bytes) is " + std::to_string(stride) +
                              " bytes, not a multiple of 16");
}

// Element (r, c) of a tile stored at p with leading dimension ldm, row- or column-major.
template <typename P>
P* at(P* p, unsigned ldm, bool row_major_memory, int r, int c) {
    return row_major_memory ? p + std::size_t(r) * ldm + c : p + std::size_t(c) * ldm + r;
}

template <typename Fragment, typename P>
void load(Fragment& f, const P* p, unsigned ldm, bool row_major_memory,
          const std::source_location& where) {
    require_tile_rules("load_matrix_sync", p, ldm, where);
    const int l = lane();
    for (int e = 0; e < Fragment::num_elements; ++e) {
        const int i = e * 32 + l;
        f.x[e] = *at(p, ldm, row_major_memory, i / Fragment::cols, i % Fragment::cols);
    }
}

// A warp cut short by the block's size (the last warp of a block of 48 threads) cannot run a
// warp-wide multiply: each lane says so itself, before it waits for lanes that do not exist.
inline void require_whole_warp(const std::string& operation, const std::source_location& where) {
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned linear = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const unsigned warp_end = linear / 32u * 32u + 32u;  // one past this warp's last thread
    if (warp_end > threads)
        throw triptych::CudaError(
            operation + " at " + where.file_name() + ":" + std::to_string(where.line()) +
            ": a warp of " + std::to_string(32u - (warp_end - threads)) + " lanes (a block of " +
            std::to_string(threads) + " threads); it needs all 32");
}

}  // namespace detail

// A and B: the memory layout is the fragment's Layout parameter.
template <typename Use, int m, int n, int k, typename T, typename Layout, typename P>
void load_matrix_sync(fragment<Use, m, n, k, T, Layout>& f, const P* p, unsigned ldm,
                      std::source_location where = std::source_location::current()) {
    static_assert(!std::is_same_v<Use, accumulator>, "an accumulator's load names its layout");
    detail::load(f, p, ldm, std::is_same_v<Layout, row_major>, where);
}
// An accumulator: the memory layout is an argument.
template <int m, int n, int k, typename T>
void load_matrix_sync(fragment<accumulator, m, n, k, T>& f, const T* p, unsigned ldm,
                      layout_t layout,
                      std::source_location where = std::source_location::current()) {
    detail::load(f, p, ldm, layout == mem_row_major, where);
}

template <int m, int n, int k, typename T>
void store_matrix_sync(T* p, const fragment<accumulator, m, n, k, T>& f, unsigned ldm,
                       layout_t layout,
                       std::source_location where = std::source_location::current()) {
    detail::require_tile_rules("store_matrix_sync", p, ldm, where);
    using Fragment = fragment<accumulator, m, n, k, T>;
    const int l = detail::lane();
    for (int e = 0; e < Fragment::num_elements; ++e) {
        const int i = e * 32 + l;
        *detail::at(p, ldm, layout == mem_row_major, i / Fragment::cols, i % Fragment::cols) =
            f.x[e];
    }
}

// d = a * b + c, for the whole warp (see the top of this file). d may be c.
template <int m, int n, int k, typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, m, n, k, float>& d,
              const fragment<matrix_a, m, n, k, T, LayoutA>& a,
              const fragment<matrix_b, m, n, k, T, LayoutB>& b,
              const fragment<accumulator, m, n, k, float>& c, bool = false,
              std::source_location where = std::source_location::current()) {
    using A = fragment<matrix_a, m, n, k, T, LayoutA>;
    using B = fragment<matrix_b, m, n, k, T, LayoutB>;
    detail::require_whole_warp("wmma::mma_sync", where);
    float a_values[A::num_elements], b_values[B::num_elements];
    for (int e = 0; e < A::num_elements; ++e) a_values[e] = detail::storage<T>::to_float(a.x[e]);
    for (int e = 0; e < B::num_elements; ++e) b_values[e] = detail::storage<T>::to_float(b.x[e]);
    const triptych::sim::MmaRequest request{m, n, k, a_values, b_values, c.x, d.x};
    triptych::sim::warp_exchange(triptych::sim::WarpOp::mma, 0xffffffffu,
                                 reinterpret_cast<std::uintptr_t>(&request), 0, 32, where);
}

}  // namespace nvcuda::wmma
