// What the GEMM versions of gpu_tiled share (gemm_v3_shared_tiles.cu ... gemm.cu): how a tile of
// op(A) or op(B) is read from global memory, with zeros past the edges, and how a finished value
// of C is stored (the epilogues). For the gemm*.cu files of gpu/tiled only: it holds device code.
//
// Every version computes C = alpha * op(A) * op(B) + beta * C (GemmShape, common/ops.hpp) for any
// M, N, K >= 1 and all four transpositions; beta == 0 never reads C. Tiles that hang over the edge
// of a matrix read zeros, which add nothing to the dot products, and skip their stores.
#pragma once

#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cstdint>

#include "common/math.hpp"
#include "common/ops.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/tiled/elementwise.hpp"

namespace triptych::gpu_tiled {

// op(X) as a rows x cols matrix: stored row-major as it is, or as its transpose (cols x rows)
// when `transposed`. op(A) is M x K, op(B) is K x N.
struct MatrixView {
    const float* data;
    std::int64_t rows, cols;
    bool transposed;

    // op(X)[r, c], or 0 outside the matrix.
    __device__ float at(std::int64_t r, std::int64_t c) const {
        if (r >= rows || c >= cols) return 0.0f;
        return transposed ? data[c * rows + r] : data[r * cols + c];
    }
};

// Copies the ROWS x COLS tile of op(X) whose corner is (r0, c0) into tile[r][c], one element per
// thread per turn (threads 0 .. threads - 1 of the block). Consecutive threads take consecutive
// addresses of X, so a warp's loads are coalesced whichever way X is stored: along c when X is
// stored as it is, along r when it is stored transposed.
template <int ROWS, int COLS, int STRIDE>
__device__ void load_tile(const MatrixView& X, std::int64_t r0, std::int64_t c0,
                          float (*tile)[STRIDE], int thread, int threads) {
    for (int i = thread; i < ROWS * COLS; i += threads) {
        const int r = X.transposed ? i % ROWS : i / COLS;
        const int c = X.transposed ? i / ROWS : i % COLS;
        tile[r][c] = X.at(r0 + r, c0 + c);
    }
}

// Moves a BK x BMN tile of op(X) from global memory into shared memory as tile[k][i], where i
// runs along M for A and along N for B, in float4s: with `threads` threads, each moves
// BMN * BK / (4 * threads) of them per tile. Two cases, by how X is stored:
//   k_contiguous (A untransposed, B transposed): X is (extent, K), each i's K values contiguous.
//     A thread reads 4 consecutive k of one i and writes them down a column of the tile.
//   otherwise (A transposed, B untransposed): X is (K, extent), each k's values contiguous.
//     A thread reads 4 consecutive i of one k and writes them as one float4.
// In both cases consecutive threads read consecutive addresses (coalesced), and the multiply sees
// the same k-major tile whatever the transposition.
template <int BMN, int BK, bool k_contiguous, int threads = 256>
struct TileLoader {
    static_assert(BMN * BK == 4 * threads, "one float4 per thread per tile");
    int i, k;  // this thread's float4 within the tile: (i..i+3, k) or (i, k..k+3)

    __device__ explicit TileLoader(int thread)
        : i(k_contiguous ? thread / (BK / 4) : thread % (BMN / 4) * 4),
          k(k_contiguous ? thread % (BK / 4) * 4 : thread / (BMN / 4)) {}

    // This thread's float4 of the tile whose corner is (i0, k0); X holds op(X) of `extent` x K.
    __device__ float4 fetch(const float* X, std::int64_t extent, std::int64_t K, std::int64_t i0,
                            std::int64_t k0, bool vector_ok) const {
        if (k_contiguous) return load4(X, extent, K, i0 + i, k0 + k, vector_ok);
        return load4(X, K, extent, k0 + k, i0 + i, vector_ok);
    }

    template <int STRIDE>
    __device__ void store(float4 v, float (*tile)[STRIDE]) const {
        if (k_contiguous) {
            tile[k + 0][i] = v.x;
            tile[k + 1][i] = v.y;
            tile[k + 2][i] = v.z;
            tile[k + 3][i] = v.w;
        } else {
            *reinterpret_cast<float4*>(&tile[k][i]) = v;
        }
    }

    // X[r, c..c+3] of a row-major (rows, cols) matrix, zeros outside it. One 16-byte load when
    // `vector_ok` (X is 16-byte aligned and cols a multiple of 4; c is always a multiple of 4, so
    // X + r*cols + c is aligned too) and all four are inside the matrix; scalar loads otherwise.
    __device__ static float4 load4(const float* X, std::int64_t rows, std::int64_t cols,
                                   std::int64_t r, std::int64_t c, bool vector_ok) {
        if (r >= rows) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float* row = X + r * cols;
        if (vector_ok && c + 3 < cols) return *reinterpret_cast<const float4*>(row + c);
        return make_float4(c + 0 < cols ? row[c + 0] : 0.0f, c + 1 < cols ? row[c + 1] : 0.0f,
                           c + 2 < cols ? row[c + 2] : 0.0f, c + 3 < cols ? row[c + 3] : 0.0f);
    }
};

// ---- epilogues: what happens to a finished value before its one store to C -------------------
//
// A kernel hands each 4-wide piece of its C tile, acc[0..3] for C[r, c..c+3], to an epilogue,
// which writes it (skipping columns past N), with one float4 store when `vector_ok` (C 16-byte
// aligned and N a multiple of 4; c is always a multiple of 4, see load4). The epilogue is a
// template parameter of the kernel, so each one compiles into it with no runtime branch.

// The plain GEMM: C = alpha * acc + beta * C. C is read only when beta != 0.
struct ScaleEpilogue {
    float alpha, beta;

    __device__ float value(float acc, const float* c) const {
        return alpha * acc + (beta == 0.0f ? 0.0f : beta * *c);
    }
    __device__ void store4(float* C, std::int64_t N, std::int64_t r, std::int64_t c,
                           const float* acc, bool vector_ok) const {
        float* row = C + r * N;
        if (vector_ok && c + 3 < N) {
            float4 out =
                make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
            if (beta != 0.0f) {
                const float4 old = *reinterpret_cast<const float4*>(row + c);
                out.x += beta * old.x;
                out.y += beta * old.y;
                out.z += beta * old.z;
                out.w += beta * old.w;
            }
            *reinterpret_cast<float4*>(row + c) = out;
            return;
        }
        for (int j = 0; j < 4 && c + j < N; ++j) row[c + j] = value(acc[j], row + c + j);
    }
    // out[0], out[1] = the values of acc0 and acc1, with one 8-byte load (beta != 0) and one
    // 8-byte store; out must be 8-byte aligned (version 11's stores from registers).
    __device__ void store2(float* out, float acc0, float acc1) const {
        float2 v = make_float2(alpha * acc0, alpha * acc1);
        if (beta != 0.0f) {
            const float2 old = *reinterpret_cast<const float2*>(out);
            v.x += beta * old.x;
            v.y += beta * old.y;
        }
        *reinterpret_cast<float2*>(out) = v;
    }
};

// A dense layer's forward pass (lesson 07): C = act(acc + bias[col]), alpha = 1, beta = 0. Fused
// here, the bias and the activation cost no memory traffic beyond the bias itself (N floats, in
// cache); as separate kernels, bias_add and the activation each read and write all of C again.
template <Activation activation>
struct BiasActivationEpilogue {
    const float* bias;  // (N)

    __device__ float value(float acc, std::int64_t col) const {
        return activate<activation>(acc + __ldg(bias + col));
    }
    __device__ void store4(float* C, std::int64_t N, std::int64_t r, std::int64_t c,
                           const float* acc, bool vector_ok) const {
        float* row = C + r * N;
        if (vector_ok && c + 3 < N) {
            *reinterpret_cast<float4*>(row + c) = make_float4(
                value(acc[0], c), value(acc[1], c + 1), value(acc[2], c + 2), value(acc[3], c + 3));
            return;
        }
        for (int j = 0; j < 4 && c + j < N; ++j) row[c + j] = value(acc[j], c + j);
    }
};

// ---- warp tiling (versions 7 and 8) -----------------------------------------------------------
//
// The BM x BN tile of a block of 256 threads is cut into one WM x WN tile per warp (8 warps), and
// a warp's 32 lanes form an 8 x 4 grid over it. Each lane computes 4 x 4 blocks of C spaced one
// lane-grid apart: WM / 32 of them down and WN / 16 across (128 x 128 tiles with 64 x 32 warp
// tiles: 2 x 2 blocks, 8 x 8 values per thread). At one k, the lanes of a warp then read 32
// consecutive floats of As (each float4 shared by 4 lanes) and 16 of Bs (each by 8 lanes):
// conflict-free, and a warp touches only its own strip of each tile.
template <int BM, int BN, int WM, int WN>
struct WarpTile {
    static constexpr int warps_across = BN / WN;
    static_assert((BM / WM) * warps_across == 8, "8 warps of 32 threads: 256 per block");
    static constexpr int lanes_down = 8, lanes_across = 4;  // a warp's lanes as 8 x 4
    static constexpr int step_m = lanes_down * 4, step_n = lanes_across * 4;
    static_assert(WM % step_m == 0 && WN % step_n == 0, "whole 4 x 4 blocks per lane");
    static constexpr int TM = WM / step_m * 4, TN = WN / step_n * 4;  // values of C per thread
    int m0, n0;  // this lane's first row and column within the block's tile

    __device__ explicit WarpTile(int thread) {
        const int warp = thread / 32, lane = thread % 32;
        m0 = warp / warps_across * WM + lane / lanes_across * 4;
        n0 = warp % warps_across * WN + lane % lanes_across * 4;
    }
    // The tile row of acc[i] and the tile column of acc[.][j], j a multiple of 4.
    __device__ int row(int i) const { return m0 + i / 4 * step_m + i % 4; }
    __device__ int col(int j) const { return n0 + j / 4 * step_n; }

    // acc += As * Bs over one BK step: As[k][m] and Bs[k][n], both k-major.
    template <int BK, int STRIDE_A, int STRIDE_B>
    __device__ void multiply(const float (*As)[STRIDE_A], const float (*Bs)[STRIDE_B],
                             float (&acc)[TM][TN]) const {
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            alignas(16) float a[TM], b[TN];  // filled by float4 copies
#pragma unroll
            for (int g = 0; g < TM; g += 4)
                *reinterpret_cast<float4*>(&a[g]) =
                    *reinterpret_cast<const float4*>(&As[k][m0 + g / 4 * step_m]);
#pragma unroll
            for (int g = 0; g < TN; g += 4)
                *reinterpret_cast<float4*>(&b[g]) =
                    *reinterpret_cast<const float4*>(&Bs[k][n0 + g / 4 * step_n]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
    }

    // Hands every 4-wide piece of acc to the epilogue, skipping rows past M. The rows are not
    // unrolled: unrolled, ptxas schedules all 16 stores (and C's loads when beta != 0) together
    // and, held to 128 registers by version 8's __launch_bounds__(256, 2), spills up to 1268
    // bytes per thread (ptxas -v, sm_90); one row at a time it spills at most 8.
    template <typename Epilogue>
    __device__ void store(const Epilogue& epilogue, float* C, std::int64_t M, std::int64_t N,
                          std::int64_t row0, std::int64_t col0, const float (&acc)[TM][TN],
                          bool vector_c) const {
#pragma unroll 1
        for (int i = 0; i < TM; ++i) {
            const std::int64_t r = row0 + row(i);
            if (r >= M) continue;
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                epilogue.store4(C, N, r, col0 + col(j), &acc[i][j], vector_c);
        }
    }
};

// ---- host side ---------------------------------------------------------------------------------

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Whether A, B, C allow float4 access (TileLoader::load4): a 16-byte-aligned base (cudaMalloc
// gives 256 bytes, but a caller may pass a pointer into a batch) and rows whose length is a
// multiple of 4 floats.
struct VectorAccess {
    bool a, b, c;
};
inline VectorAccess vector_access(const GemmShape& s, const float* A, const float* B,
                                  const float* C) {
    return {aligned16(A) && (s.trans_a ? s.M : s.K) % 4 == 0,
            aligned16(B) && (s.trans_b ? s.K : s.N) % 4 == 0, aligned16(C) && s.N % 4 == 0};
}

// One block per BM x BN tile of C: grid (N / BN, M / BM), rounded up, y capped by gpu::grid_rows
// (the kernels loop over the rest of the rows).
inline dim3 tile_grid(const GemmShape& s, int BM, int BN) {
    return dim3(unsigned(ceil_div<std::int64_t>(s.N, BN)),
                gpu::grid_rows(ceil_div<std::int64_t>(s.M, BM)));
}

// Whether 128 x 128 tiles give every streaming multiprocessor of device 0 (OpenMP threads in the
// simulator) a block. When they would leave SMs idle, 64 x 64 tiles give four times as many.
inline bool big_tiles_fill_gpu(const GemmShape& s) {
    static const int multiprocessors = gpu::info().multiprocessors;
    return ceil_div<std::int64_t>(s.M, 128) * ceil_div<std::int64_t>(s.N, 128) >= multiprocessors;
}

}  // namespace triptych::gpu_tiled
