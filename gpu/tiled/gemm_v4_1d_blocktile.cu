// gpu_tiled gemm, version 4 (lesson 03, step 2): 1D block tiling (siboehm/SGEMM_CUDA, kernel 4).
//   C = alpha * op(A) * op(B) + beta * C, shapes as in gemm_v3_shared_tiles.cu.
//
// What changed from version 3: each thread computes TM = 8 elements of C, down one column, instead
// of one. A block of 512 threads covers a 64 x 64 tile of C, stepping through K 8 at a time. Per k
// a thread reads one value of B's tile from shared memory and reuses it for its 8 rows, reading
// the 8 values of A's tile that go with it: 9 shared loads for 8 FMAs, where version 3 did 2
// loads per FMA. Run: triptych check --op gemm --backend gpu_tiled@4.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/gemm.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int BM = 64, BN = 64, BK = 8;  // the block's tile of C, and the step along K
constexpr int TM = 8;                    // rows of C per thread
constexpr int threads = BM * BN / TM;    // 512

// Thread t computes C[row0 + (t / BN) * TM + i, col0 + t % BN] for i = 0 .. TM - 1. The 32
// threads of a warp share one t / BN, so they read the same As values (a broadcast) and 32
// consecutive Bs values (32 banks).
__global__ void gemm_1d_blocktile_kernel(MatrixView a, MatrixView b, float alpha, float beta,
                                         float* C) {
    const std::int64_t M = a.rows, K = a.cols, N = b.cols;
    __shared__ float As[BM][BK + 1];  // As[m][k]; the extra column spreads a column over banks
    __shared__ float Bs[BK][BN];      // Bs[k][n]
    const int thread = threadIdx.x;
    const int thread_row = thread / BN, thread_col = thread % BN;
    const std::int64_t col0 = std::int64_t(blockIdx.x) * BN;
    const std::int64_t col = col0 + thread_col;

    for (std::int64_t row0 = std::int64_t(blockIdx.y) * BM; row0 < M;
         row0 += std::int64_t(gridDim.y) * BM) {
        float acc[TM] = {};
        for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
            load_tile<BM, BK>(a, row0, k0, As, thread, threads);
            load_tile<BK, BN>(b, k0, col0, Bs, thread, threads);
            __syncthreads();
            for (int k = 0; k < BK; ++k) {
                const float b_value = Bs[k][thread_col];
                for (int i = 0; i < TM; ++i) acc[i] += As[thread_row * TM + i][k] * b_value;
            }
            __syncthreads();
        }
        for (int i = 0; i < TM; ++i) {
            const std::int64_t row = row0 + thread_row * TM + i;
            if (row < M && col < N) {
                float& out = C[row * N + col];
                out = alpha * acc[i] + (beta == 0.0f ? 0.0f : beta * out);
            }
        }
    }
}

void gemm_1d_blocktile(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_1d_blocktile_kernel, tile_grid(s, BM, BN), dim3(threads), 0,
                MatrixView{A, s.M, s.K, s.trans_a}, MatrixView{B, s.K, s.N, s.trans_b}, s.alpha,
                s.beta, C);
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernels(
    "gpu_tiled", ops::gemm,
    {{4, "1d_blocktile",
      "each thread computes 8 elements of a column of C, reusing each value of B 8 times",
      gemm_1d_blocktile}},
    no_default_version);

}  // namespace triptych::gpu_tiled
