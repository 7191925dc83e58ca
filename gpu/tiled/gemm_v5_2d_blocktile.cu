// gpu_tiled gemm, version 5 (lesson 03, step 3): 2D block tiling (siboehm/SGEMM_CUDA, kernel 5).
//   C = alpha * op(A) * op(B) + beta * C, shapes as in gemm_v3_shared_tiles.cu.
//
// What changed from version 4: each thread computes a TM x TN = 8 x 8 block of C held in
// registers. A block of 256 threads covers a 128 x 128 tile. Per k a thread copies its 8 values of
// A and 8 of B from shared memory into registers and does all 64 products between them: 16 shared
// loads for 64 FMAs (version 4: 9 for 8), and every value loaded from global memory serves 128
// outputs. Run: triptych check --op gemm --backend gpu_tiled@5.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/gemm.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int BM = 128, BN = 128, BK = 8;     // the block's tile of C, and the step along K
constexpr int TM = 8, TN = 8;                 // each thread's block of C
constexpr int threads = BM * BN / (TM * TN);  // 256
constexpr int threads_per_row = BN / TN;      // 16 threads side by side along N

// Thread t owns C[row0 + (t / 16) * TM + i, col0 + (t % 16) * TN + j]. Reading its TN values of
// Bs, the 16 threads along a row are TN = 8 floats apart, so threads 0, 4, 8 and 12 meet in the
// same bank: a 4-way bank conflict on every load of B, which version 7 removes.
__global__ void gemm_2d_blocktile_kernel(MatrixView a, MatrixView b, ScaleEpilogue epilogue,
                                         float* C, bool vector_c) {
    const std::int64_t M = a.rows, K = a.cols, N = b.cols;
    __shared__ float As[BM][BK + 1];  // As[m][k]
    __shared__ float Bs[BK][BN];      // Bs[k][n]
    const int thread = threadIdx.x;
    const int thread_row = thread / threads_per_row, thread_col = thread % threads_per_row;
    const std::int64_t col0 = std::int64_t(blockIdx.x) * BN;

    for (std::int64_t row0 = std::int64_t(blockIdx.y) * BM; row0 < M;
         row0 += std::int64_t(gridDim.y) * BM) {
        float acc[TM][TN] = {};
        for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
            load_tile<BM, BK>(a, row0, k0, As, thread, threads);
            load_tile<BK, BN>(b, k0, col0, Bs, thread, threads);
            __syncthreads();
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                float a_values[TM], b_values[TN];
#pragma unroll
                for (int i = 0; i < TM; ++i) a_values[i] = As[thread_row * TM + i][k];
#pragma unroll
                for (int j = 0; j < TN; ++j) b_values[j] = Bs[k][thread_col * TN + j];
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] += a_values[i] * b_values[j];
            }
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const std::int64_t row = row0 + thread_row * TM + i;
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                epilogue.store4(C, N, row, col0 + thread_col * TN + j, &acc[i][j], vector_c);
        }
    }
}

void gemm_2d_blocktile(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_2d_blocktile_kernel, tile_grid(s, BM, BN), dim3(threads), 0,
                MatrixView{A, s.M, s.K, s.trans_a}, MatrixView{B, s.K, s.N, s.trans_b},
                ScaleEpilogue{s.alpha, s.beta}, C, vector_access(s, A, B, C).c);
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernels(
    "gpu_tiled", ops::gemm,
    {{5, "2d_blocktile",
      "each thread keeps an 8 x 8 block of C in registers: 16 shared loads for 64 FMAs",
      gemm_2d_blocktile}},
    no_default_version);

}  // namespace triptych::gpu_tiled
