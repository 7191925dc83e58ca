// gpu_tiled gemm, version 6 (lesson 03, step 4): vectorised loads, A transposed in shared memory
// (siboehm/SGEMM_CUDA, kernel 6).
//   C = alpha * op(A) * op(B) + beta * C, shapes as in gemm_v3_shared_tiles.cu.
//
// What changed from version 5: every access moves 16 bytes (float4) where it can.
//   - Global memory: each of the 256 threads moves one float4 of A's tile and one of B's per step
//     (TileLoader, gemm.hpp), 4 times fewer load instructions than version 5's scalar loads.
//   - Shared memory: A's tile is stored transposed, As[k][m], so that the 8 values of A a thread
//     needs at one k are contiguous, like its 8 values of B: each is two float4 loads instead of
//     8 scalar ones.
//   - The epilogue stores C a float4 at a time.
// A float4 needs a 16-byte-aligned address: where a row's length is not a multiple of 4 (or the
// pointer is offset), the loads fall back to scalars, so every size still works. The transposition
// is a template parameter, one branch-free loader per case. Run: triptych check --op gemm
// --backend gpu_tiled@6.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/gemm.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int BM = 128, BN = 128, BK = 8;
constexpr int TM = 8, TN = 8;
constexpr int threads = 256;
constexpr int threads_per_row = BN / TN;  // 16
// Padding each shared row by 4 floats shifts successive k-rows by 4 banks, which keeps the
// transposing stores of A's loader from all landing in one bank, and every row 16-byte aligned.
constexpr int pad = 4;

template <bool trans_a, bool trans_b>
__global__ void gemm_vectorized_kernel(std::int64_t M, std::int64_t N, std::int64_t K,
                                       const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, ScaleEpilogue epilogue,
                                       VectorAccess vector) {
    alignas(16) __shared__ float As[BK][BM + pad];  // As[k][m]: A transposed
    alignas(16) __shared__ float Bs[BK][BN + pad];  // Bs[k][n]
    // A untransposed is (M, K): k contiguous. B transposed is (N, K): k contiguous.
    const TileLoader<BM, BK, !trans_a> a_loader(threadIdx.x);
    const TileLoader<BN, BK, trans_b> b_loader(threadIdx.x);
    const int thread_row = threadIdx.x / threads_per_row,
              thread_col = threadIdx.x % threads_per_row;
    const std::int64_t col0 = std::int64_t(blockIdx.x) * BN;

    for (std::int64_t row0 = std::int64_t(blockIdx.y) * BM; row0 < M;
         row0 += std::int64_t(gridDim.y) * BM) {
        float acc[TM][TN] = {};
        for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
            a_loader.store(a_loader.fetch(A, M, K, row0, k0, vector.a), As);
            b_loader.store(b_loader.fetch(B, N, K, col0, k0, vector.b), Bs);
            __syncthreads();
            for (int k = 0; k < BK; ++k) {
                alignas(16) float a_values[TM], b_values[TN];  // filled by float4 copies
                for (int g = 0; g < TM; g += 4)
                    *reinterpret_cast<float4*>(&a_values[g]) =
                        *reinterpret_cast<const float4*>(&As[k][thread_row * TM + g]);
                for (int g = 0; g < TN; g += 4)
                    *reinterpret_cast<float4*>(&b_values[g]) =
                        *reinterpret_cast<const float4*>(&Bs[k][thread_col * TN + g]);
                for (int i = 0; i < TM; ++i)
                    for (int j = 0; j < TN; ++j) acc[i][j] += a_values[i] * b_values[j];
            }
            __syncthreads();
        }
        for (int i = 0; i < TM; ++i) {
            const std::int64_t row = row0 + thread_row * TM + i;
            if (row >= M) break;
            for (int j = 0; j < TN; j += 4)
                epilogue.store4(C, N, row, col0 + thread_col * TN + j, &acc[i][j], vector.c);
        }
    }
}

template <bool trans_a, bool trans_b>
void launch(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_vectorized_kernel<trans_a, trans_b>, tile_grid(s, BM, BN), dim3(threads), 0,
                s.M, s.N, s.K, A, B, C, ScaleEpilogue{s.alpha, s.beta}, vector_access(s, A, B, C));
}

void gemm_vectorized(const GemmShape& s, const float* A, const float* B, float* C) {
    if (!s.trans_a && !s.trans_b) launch<false, false>(s, A, B, C);
    if (!s.trans_a && s.trans_b) launch<false, true>(s, A, B, C);
    if (s.trans_a && !s.trans_b) launch<true, false>(s, A, B, C);
    if (s.trans_a && s.trans_b) launch<true, true>(s, A, B, C);
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernels(
    "gpu_tiled", ops::gemm,
    {{6, "vectorized",
      "float4 loads and stores; A's tile transposed in shared memory so both operands load as "
      "float4",
      gemm_vectorized}},
    no_default_version);

}  // namespace triptych::gpu_tiled
