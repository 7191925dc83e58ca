// gpu_tiled gemm, version 3 (lesson 03, step 1): shared-memory tiles (PMPP ch. 5).
//   C = alpha * op(A) * op(B) + beta * C; A is (M, K), or (K, M) when trans_a; B is (K, N), or
//   (N, K) when trans_b; C is (M, N). Versions 1 and 2 are gpu/naive/gemm.cu.
//
// A block of 32 x 32 threads computes a 32 x 32 tile of C. Per step of k it stages a 32 x 32 tile
// of op(A) and one of op(B) in shared memory, each thread loading one element of each, and then
// every thread runs a 32-term dot product out of shared memory: each value loaded from global
// memory is used 32 times instead of once. Run: triptych check --op gemm --backend gpu_tiled@3.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/gemm.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int tile = 32;

// Block (32, 32): thread (ty, tx) computes C[row0 + ty, col0 + tx]. `padding` is the tiles' extra
// column: 1 in the registered version, 0 in its unpadded twin (gemm_shared_tiles_unpadded below).
template <int padding>
__global__ void gemm_shared_tiles_kernel(std::int64_t M, std::int64_t N, std::int64_t K,
                                         bool trans_a, bool trans_b, float alpha, const float* A,
                                         const float* B, float beta, float* C) {
    // As[m][k] and Bs[k][n]. The extra column makes the transposing stores below hit 32 different
    // banks: without it, a column of a 32-wide float tile lies in a single bank (32-way conflict).
    __shared__ float As[tile][tile + padding];
    __shared__ float Bs[tile][tile + padding];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const std::int64_t col0 = std::int64_t(blockIdx.x) * tile;
    const std::int64_t col = col0 + tx;

    for (std::int64_t row0 = std::int64_t(blockIdx.y) * tile; row0 < M;
         row0 += std::int64_t(gridDim.y) * tile) {
        const std::int64_t row = row0 + ty;
        float dot = 0.0f;
        for (std::int64_t k0 = 0; k0 < K; k0 += tile) {
            // Thread (ty, tx) loads element (ty, tx) of the tile as it is *stored*, so a warp
            // (one ty, 32 consecutive tx) always reads 32 consecutive floats; a transposed operand
            // is transposed on its way into shared memory. Outside the matrix the tile holds 0,
            // which adds nothing to the dot products.
            if (trans_a) {  // A is (K, M): rows of the stored tile are k, columns m
                const std::int64_t k = k0 + ty, m = row0 + tx;
                As[tx][ty] = k < K && m < M ? A[k * M + m] : 0.0f;
            } else {
                const std::int64_t k = k0 + tx;
                As[ty][tx] = row < M && k < K ? A[row * K + k] : 0.0f;
            }
            if (trans_b) {  // B is (N, K): rows of the stored tile are n, columns k
                const std::int64_t n = col0 + ty, k = k0 + tx;
                Bs[tx][ty] = n < N && k < K ? B[n * K + k] : 0.0f;
            } else {
                const std::int64_t k = k0 + ty;
                Bs[ty][tx] = k < K && col < N ? B[k * N + col] : 0.0f;
            }
            __syncthreads();  // the tiles are complete
            for (int k = 0; k < tile; ++k) dot += As[ty][k] * Bs[k][tx];
            __syncthreads();  // everyone is done reading before the next tiles overwrite them
        }
        // No early return for threads outside C: every thread must reach the barriers above.
        if (row < M && col < N) {
            const float scaled_c = beta == 0.0f ? 0.0f : beta * C[row * N + col];
            C[row * N + col] = alpha * dot + scaled_c;
        }
    }
}

void gemm_shared_tiles(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_shared_tiles_kernel<1>, tile_grid(s, tile, tile), dim3(tile, tile), 0, s.M,
                s.N, s.K, s.trans_a, s.trans_b, s.alpha, A, B, s.beta, C);
}

}  // namespace

void gemm_shared_tiles_unpadded(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_shared_tiles_kernel<0>, tile_grid(s, tile, tile), dim3(tile, tile), 0, s.M,
                s.N, s.K, s.trans_a, s.trans_b, s.alpha, A, B, s.beta, C);
}

[[maybe_unused]] const bool registered = register_kernels(
    "gpu_tiled", ops::gemm,
    {{3, "shared_tiles",
      "32 x 32 tiles of op(A) and op(B) staged in shared memory: each load used 32 times",
      gemm_shared_tiles}},
    no_default_version);

}  // namespace triptych::gpu_tiled
