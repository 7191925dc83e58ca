// gpu_tiled gemm, versions 9, 10 and 11 (lesson 03, "Tensor cores"): version 8's double-buffered
// tiles, with the multiply done by tensor cores, through CUDA's warp matrix functions
// (nvcuda::wmma, versions 9 and 10) or PTX's mma.sync instruction (version 11).
//   C = alpha * op(A) * op(B) + beta * C, shapes as in gemm_v3_shared_tiles.cu.
//
// What changed from version 8: who multiplies. In version 8 each thread does 8 x 8 FMAs per k on
// the CUDA cores. A tensor core multiplies a whole small matrix per instruction, for a warp at a
// time: wmma::mma_sync(d, a, b, c) computes D = A * B + C for a 16 x 16 tile of C, with A 16 x 8
// and B 8 x 16 in TF32 (version 9) or A and B 16 x 16 in BF16 (version 10), products added in
// float. The 32 lanes hold each tile as a *fragment*, spread over their registers in a way CUDA
// leaves unspecified; the kernel only loads fragments from shared memory, multiplies them and
// stores them. Each warp owns a 64 x 32 tile of C (128 x 128 blocks, 8 warps, as in version 8):
// 4 x 2 accumulator fragments, the same 64 floats per thread as version 8's 8 x 8.
//
// The price is precision: TF32 keeps 10 bits of mantissa (float has 23), BF16 keeps 7. The
// inputs are rounded once, as the tiles are staged in shared memory (TF32 in float storage, BF16
// in 2-byte storage, which also halves the shared memory each tile takes). The checks derive the
// tolerance from that rounding (check_gemm: unit roundoff 2^-11 or 2^-8 per input). cuBLAS offers
// the same trade (gpu_vendor's versions 2 and 3).
//
// The stores: an accumulator fragment cannot be read element by element (its spread is unknown),
// and store_matrix_sync writes whole 16 x 16 tiles, which would run past the edges of C. Each
// warp therefore stores one fragment at a time into its own 16 x 16 patch of shared memory, and
// its lanes then write the patch to C through version 8's epilogue (alpha, beta, the edges).
//
// Fragments want aligned memory: a fragment's first element 32-byte aligned, and a leading
// dimension that is a multiple of 16 bytes. The tiles' rows (BM + 4 floats, BM + 8 bf16) and
// the fragments' offsets (multiples of 16 elements, of 8 rows) keep both.
//
// Version 11 does version 9's TF32 multiply with PTX's mma.sync.aligned.m16n8k8
// (gpu/runtime/mma_sync.hpp). wmma compiles to PTX's own wmma.mma.sync (16 x 16 x 8), whose layout
// PTX leaves opaque, and ptxas turns both into the same tensor-core instruction (SASS's HMMA, two
// per wmma 16 x 16 x 8 on these GPUs); mma.sync's fragment layout the PTX ISA defines:
// lane (g, t) = (lane / 4, lane % 4) holds A(g, t), A(g + 8, t), A(g, t + 4), A(g + 8, t + 4),
// B(t, g), B(t + 4, g), and D(g, 2t), D(g, 2t + 1), D(g + 8, 2t), D(g + 8, 2t + 1). Knowing
// where each element lives buys two things wmma could not:
//   - the lanes load their own fragments from shared memory, and the tiles' row length can be
//     chosen so that those loads have no bank conflicts. A fragment load reads, across a warp,
//     8 consecutive floats (g) of 4 rows (t): with rows of BM + 8 floats a row starts 8 banks
//     after the one above it, and the 32 lanes hit 32 banks (with BM + 4, two lanes share a bank);
//   - D goes to C straight from the registers, a float2 per lane per row, with no patch in
//     shared memory and no __syncwarp: each store covers 8 rows of 8 consecutive floats of C,
//     one 32-byte sector each.
// The tiles hold TF32 bit patterns (gpu::to_tf32, as the instruction takes them). Each warp's
// 64 x 32 tile is 4 x 4 instructions of 16 x 8, 64 floats of D per thread as before.
#include "gpu/runtime/cuda.hpp"
#include "gpu/runtime/mma_sync.hpp"
#include "gpu/runtime/tensor_cores.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/gemm.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int threads = 256;
constexpr int warps = threads / 32;
constexpr int fragment_side = 16;  // M and N of every fragment here

// What the two versions differ in: how an input element is stored in shared memory (and
// rounded on the way), and the fragment's K.
struct Tf32 {
    using Stored = float;
    using Precision = wmma::precision::tf32;
    static constexpr int fragment_k = 8;
    static constexpr int pad = 4;  // floats: rows stay 16-byte multiples
    __device__ static Stored round(float v) { return wmma::__float_to_tf32(v); }
};
struct Bf16 {
    using Stored = __nv_bfloat16;
    using Precision = __nv_bfloat16;
    static constexpr int fragment_k = 16;
    static constexpr int pad = 8;  // bf16s: rows stay 16-byte multiples
    __device__ static Stored round(float v) { return __float2bfloat16(v); }
};

// Rounds version 8's float4 of a tile and writes it to the k-major tile[k][i], as TileLoader::store
// does for floats.
template <bool k_contiguous, typename Type, int STRIDE, typename Loader>
__device__ void store_rounded(const Loader& loader, float4 v,
                              typename Type::Stored (*tile)[STRIDE]) {
    const typename Type::Stored r[4] = {Type::round(v.x), Type::round(v.y), Type::round(v.z),
                                        Type::round(v.w)};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (k_contiguous)
            tile[loader.k + j][loader.i] = r[j];
        else
            tile[loader.k][loader.i + j] = r[j];
    }
}

// Version 11's tiles: TF32 bit patterns, rows 8 words longer than the tile (see the top).
struct Tf32Bits {
    using Stored = std::uint32_t;
    static constexpr int pad = 8;  // words: each row starts 8 banks after the one above
    __device__ static Stored round(float v) { return gpu::to_tf32(v); }
};

// How a warp multiplies its WM x WN tile of C and stores it: the one thing versions 9-10 and 11
// do differently. Each kind has clear(), multiply(As, Bs, kk) for one k step of Step (the
// instruction's k) at row kk of the staged tiles, and store(...) for the finished tile.
//
// Versions 9 and 10: wmma fragments of 16 x 16, stored through the warp's patch.
template <typename Type, int BM, int BN>
struct WmmaWarp {
    using Tiles = Type;
    using Stored = typename Type::Stored;
    static constexpr int Step = Type::fragment_k, pad = Type::pad;
    static constexpr int WM = BM / 2, WN = BN / 4;                          // the warp's tile
    static constexpr int FM = WM / fragment_side, FN = WN / fragment_side;  // its fragments
    static constexpr int patch_floats = fragment_side * fragment_side;      // per warp
    using FragmentA = wmma::fragment<wmma::matrix_a, 16, 16, Step, typename Type::Precision,
                                     wmma::col_major>;  // read from As[k][m]: column-major
    using FragmentB = wmma::fragment<wmma::matrix_b, 16, 16, Step, typename Type::Precision,
                                     wmma::row_major>;  // read from Bs[k][n]: row-major
    using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, Step, float>;

    int warp_m, warp_n, lane;
    Accumulator acc[FM][FN];

    __device__ explicit WmmaWarp(int thread)
        : warp_m(thread / 32 / 4 * WM), warp_n(thread / 32 % 4 * WN), lane(thread % 32) {}

    __device__ void clear() {
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    }

    // FM fragments of A, FN of B, and FM x FN multiply-accumulates of 16 x 16 x Step each.
    __device__ void multiply(const Stored (*As)[BM + pad], const Stored (*Bs)[BN + pad], int kk) {
        FragmentA a[FM];
        FragmentB b[FN];
#pragma unroll
        for (int i = 0; i < FM; ++i)
            wmma::load_matrix_sync(a[i], &As[kk][warp_m + i * fragment_side], BM + pad);
#pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::load_matrix_sync(b[j], &Bs[kk][warp_n + j * fragment_side], BN + pad);
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }

    // Each accumulator through the warp's patch: row r of the patch, columns lane % 16, is
    // written by half a warp, so a store covers two rows of 16 consecutive floats of C.
    // The loops over fragments are unrolled: indexed at run time, acc would live in local
    // memory (ptxas -v shows it as a 256-byte stack frame).
    __device__ void store(float* C, std::int64_t M, std::int64_t N, std::int64_t row0,
                          std::int64_t col0, ScaleEpilogue epilogue, bool, float* mine) const {
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                wmma::store_matrix_sync(mine, acc[i][j], fragment_side, wmma::mem_row_major);
                __syncwarp();
#pragma unroll 1
                for (int e = lane; e < fragment_side * fragment_side; e += 32) {
                    const std::int64_t r = row0 + warp_m + i * fragment_side + e / fragment_side;
                    const std::int64_t c = col0 + warp_n + j * fragment_side + e % fragment_side;
                    if (r < M && c < N) C[r * N + c] = epilogue.value(mine[e], &C[r * N + c]);
                }
                __syncwarp();  // the patch is read before the next fragment overwrites it
            }
    }
};

// Version 11: mma.sync's 16 x 8 x 8 on TF32, each lane's elements where PTX puts them.
template <int BM, int BN>
struct MmaSyncWarp {
    using Tiles = Tf32Bits;
    using Stored = Tf32Bits::Stored;
    static constexpr int Step = 8, pad = Tf32Bits::pad;
    static constexpr int WM = BM / 2, WN = BN / 4;   // the warp's tile
    static constexpr int FM = WM / 16, FN = WN / 8;  // its instructions' tiles of D
    static constexpr int patch_floats = 1;           // none needed (an array cannot be empty)

    int warp_m, warp_n, g, t;  // the warp's corner; the lane's group (lane / 4) and its place in it
    float acc[FM][FN][4];      // acc[i][j][e]: element e of the (i, j) tile of D (see the top)

    __device__ explicit MmaSyncWarp(int thread)
        : warp_m(thread / 32 / 4 * WM),
          warp_n(thread / 32 % 4 * WN),
          g(thread % 32 / 4),
          t(thread % 4) {}

    __device__ void clear() {
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    }

    // The lane's fragments, read from the k-major tiles (As[k][m], Bs[k][n]) by the layout at the
    // top, then FM x FN instructions.
    __device__ void multiply(const Stored (*As)[BM + pad], const Stored (*Bs)[BN + pad], int kk) {
        std::uint32_t a[FM][4], b[FN][2];
#pragma unroll
        for (int i = 0; i < FM; ++i) {
            const int m = warp_m + i * 16 + g;
            a[i][0] = As[kk + t][m];
            a[i][1] = As[kk + t][m + 8];
            a[i][2] = As[kk + t + 4][m];
            a[i][3] = As[kk + t + 4][m + 8];
        }
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            const int n = warp_n + j * 8 + g;
            b[j][0] = Bs[kk + t][n];
            b[j][1] = Bs[kk + t + 4][n];
        }
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j) gpu::mma_m16n8k8_tf32(acc[i][j], a[i], b[j]);
    }

    // Straight from the registers: elements 0, 1 of a tile are D(g, 2t) and D(g, 2t + 1), one
    // float2 of C (read, when beta != 0, and written; when C allows 8-byte access), elements 2, 3
    // the same 8 rows further down.
    __device__ void store(float* C, std::int64_t M, std::int64_t N, std::int64_t row0,
                          std::int64_t col0, ScaleEpilogue epilogue, bool vector_ok, float*) const {
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j)
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const std::int64_t r = row0 + warp_m + i * 16 + g + 8 * half;
                    const std::int64_t c = col0 + warp_n + j * 8 + 2 * t;
                    if (r >= M || c >= N) continue;
                    float* out = C + r * N + c;
                    const float d0 = acc[i][j][2 * half], d1 = acc[i][j][2 * half + 1];
                    if (vector_ok && c + 1 < N) {
                        epilogue.store2(out, d0, d1);
                        continue;
                    }
                    out[0] = epilogue.value(d0, out);
                    if (c + 1 < N) out[1] = epilogue.value(d1, out + 1);
                }
    }
};

// Block (256), 8 warps as 2 down x 4 across, each owning a WM x WN tile of the block's BM x BN,
// multiplied by Warp (WmmaWarp or MmaSyncWarp). BK is a whole number of the Warp's k steps and of
// version 8's loads: TileLoader moves one float4 per thread, a BMN x (1024 / BMN) slab (128 x 8,
// 64 x 16), so a tile takes BK / slab of them.
template <typename Warp, int BM, int BN, int BK, bool trans_a, bool trans_b>
__global__ void __launch_bounds__(threads, 2)
    gemm_tensor_core_kernel(std::int64_t M, std::int64_t N, std::int64_t K,
                            const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, ScaleEpilogue epilogue, VectorAccess vector) {
    using Type = typename Warp::Tiles;
    using Stored = typename Type::Stored;
    constexpr int pad = Warp::pad;
    constexpr int slab_a = 4 * threads / BM, slab_b = 4 * threads / BN;  // k per float4 load
    constexpr int slabs_a = BK / slab_a, slabs_b = BK / slab_b;          // loads per tile
    static_assert(BK % Warp::Step == 0 && BK % slab_a == 0 && BK % slab_b == 0 && Warp::FM >= 1 &&
                      Warp::FN >= 1,
                  "whole instructions and loads");

    alignas(32) __shared__ Stored As[2][BK][BM + pad];
    alignas(32) __shared__ Stored Bs[2][BK][BN + pad];
    alignas(32) __shared__ float patch[warps][Warp::patch_floats];
    const TileLoader<BM, slab_a, !trans_a> a_loader(threadIdx.x);
    const TileLoader<BN, slab_b, trans_b> b_loader(threadIdx.x);
    Warp warp(threadIdx.x);
    const std::int64_t col0 = std::int64_t(blockIdx.x) * BN;

    for (std::int64_t row0 = std::int64_t(blockIdx.y) * BM; row0 < M;
         row0 += std::int64_t(gridDim.y) * BM) {
        warp.clear();
        float4 a_next[slabs_a], b_next[slabs_b];
        __syncthreads();  // the previous row's last multiply is done with stage 0
#pragma unroll
        for (int s = 0; s < slabs_a; ++s) {
            a_next[s] = a_loader.fetch(A, M, K, row0, slab_a * s, vector.a);
            store_rounded<!trans_a, Type>(a_loader, a_next[s], As[0] + slab_a * s);
        }
#pragma unroll
        for (int s = 0; s < slabs_b; ++s) {
            b_next[s] = b_loader.fetch(B, N, K, col0, slab_b * s, vector.b);
            store_rounded<trans_b, Type>(b_loader, b_next[s], Bs[0] + slab_b * s);
        }
        __syncthreads();

        int stage = 0;
        for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
            const bool has_next = k0 + BK < K;
            if (has_next) {
#pragma unroll
                for (int s = 0; s < slabs_a; ++s)
                    a_next[s] = a_loader.fetch(A, M, K, row0, k0 + BK + slab_a * s, vector.a);
#pragma unroll
                for (int s = 0; s < slabs_b; ++s)
                    b_next[s] = b_loader.fetch(B, N, K, col0, k0 + BK + slab_b * s, vector.b);
            }
            // The tensor cores' part.
#pragma unroll
            for (int kk = 0; kk < BK; kk += Warp::Step) warp.multiply(As[stage], Bs[stage], kk);
            if (has_next) {
#pragma unroll
                for (int s = 0; s < slabs_a; ++s)
                    store_rounded<!trans_a, Type>(a_loader, a_next[s], As[1 - stage] + slab_a * s);
#pragma unroll
                for (int s = 0; s < slabs_b; ++s)
                    store_rounded<trans_b, Type>(b_loader, b_next[s], Bs[1 - stage] + slab_b * s);
            }
            __syncthreads();
            stage = 1 - stage;
        }
        warp.store(C, M, N, row0, col0, epilogue, vector.c, patch[threadIdx.x / 32]);
    }
}

template <template <int, int> class Warp, int BM, int BN, int BK, bool trans_a, bool trans_b>
void launch(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_tensor_core_kernel<Warp<BM, BN>, BM, BN, BK, trans_a, trans_b>,
                tile_grid(s, BM, BN), dim3(threads), 0, s.M, s.N, s.K, A, B, C,
                ScaleEpilogue{s.alpha, s.beta}, vector_access(s, A, B, C));
}

// 128 x 128 tiles when they fill the GPU, else 64 x 64 (each warp then holds 2 x 1 fragments of
// wmma, 2 x 2 tiles of mma.sync). BK = 16 for every kind: one or two k steps per tile.
template <template <int, int> class Warp, bool trans_a, bool trans_b>
void launch_sized(const GemmShape& s, const float* A, const float* B, float* C) {
    if (big_tiles_fill_gpu(s))
        launch<Warp, 128, 128, 16, trans_a, trans_b>(s, A, B, C);
    else
        launch<Warp, 64, 64, 16, trans_a, trans_b>(s, A, B, C);
}

template <template <int, int> class Warp>
void gemm_tensor_cores(const GemmShape& s, const float* A, const float* B, float* C) {
    if (!s.trans_a && !s.trans_b) launch_sized<Warp, false, false>(s, A, B, C);
    if (!s.trans_a && s.trans_b) launch_sized<Warp, false, true>(s, A, B, C);
    if (s.trans_a && !s.trans_b) launch_sized<Warp, true, false>(s, A, B, C);
    if (s.trans_a && s.trans_b) launch_sized<Warp, true, true>(s, A, B, C);
}

template <int BM, int BN>
using WmmaTf32 = WmmaWarp<Tf32, BM, BN>;
template <int BM, int BN>
using WmmaBf16 = WmmaWarp<Bf16, BM, BN>;

[[maybe_unused]] const bool registered = register_kernels(
    "gpu_tiled", ops::gemm,
    {{9, "tensor_cores_tf32",
      "the multiply on tensor cores (wmma, 16 x 16 x 8), inputs rounded to TF32 as staged",
      gemm_tensor_cores<WmmaTf32>, AdditionOrder::fixed, InputPrecision::tf32},
     {10, "tensor_cores_bf16",
      "the same with BF16 inputs (16 x 16 x 16), half the shared memory per tile",
      gemm_tensor_cores<WmmaBf16>, AdditionOrder::fixed, InputPrecision::bf16},
     {11, "mma_sync_tf32",
      "version 9 on PTX mma.sync (16 x 8 x 8): fragments in their documented layout, loaded from "
      "conflict-free shared rows and stored straight from registers",
      gemm_tensor_cores<MmaSyncWarp>, AdditionOrder::fixed, InputPrecision::tf32}},
    no_default_version);

}  // namespace
}  // namespace triptych::gpu_tiled
