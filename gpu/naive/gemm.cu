// gpu_naive gemm: C = alpha * op(A) * op(B) + beta * C, row-major (GemmShape, common/ops.hpp).
//   A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b;  C is (M, N).
//
// The first two steps of the GEMM ladder (lesson 02; gpu/tiled/gemm.cu lists them all): one thread
// per element of C, everything read straight from global memory. Each C[row, col] costs 2K loads
// for 2K flops, so both are bound by memory traffic, not arithmetic.
//   version 1: gemm_uncoalesced_kernel, threadIdx.x runs down a column of C (siboehm/SGEMM_CUDA,
//     kernel 1). A warp's 32 threads are 32 rows of one column: they read A[row, k] K floats
//     apart, 32 separate memory transactions for one load instruction, and write C N floats
//     apart. Run: triptych check --op gemm --backend gpu_naive@1.
//   version 2: gemm_naive_kernel, threadIdx.x runs along a row of C (kernel 2): the same
//     arithmetic, but a warp reads 32 consecutive B[k, col] (one 128-byte transaction), all its
//     threads read the same A[row, k] (a broadcast), and it writes 32 consecutive C. The
//     variant's default.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

// A 32 x 8 block: 32 threads along threadIdx.x (one warp), 8 warps along threadIdx.y.
constexpr int block_x = 32;
constexpr int block_y = 8;

// op(A)[row, k] * op(B)[k, col] summed over k, scaled, written to C. Untransposed B is read along
// a row of B; transposed B down a column. Whether a warp's 32 reads are adjacent, K floats apart
// or one broadcast address depends on which of row and col its lanes share (lesson 02).
__device__ inline void dot_and_store(std::int64_t row, std::int64_t col, std::int64_t M,
                                     std::int64_t N, std::int64_t K, bool trans_a, bool trans_b,
                                     float alpha, const float* A, const float* B, float beta,
                                     float* C) {
    float dot = 0.0f;
    for (std::int64_t k = 0; k < K; ++k) {
        const float a = trans_a ? A[k * M + row] : A[row * K + k];
        const float b = trans_b ? B[col * K + k] : B[k * N + col];
        dot += a * b;
    }
    // beta == 0 means C is not read: it may hold NaN, and 0 * NaN would be NaN.
    const float scaled_c = beta == 0.0f ? 0.0f : beta * C[row * N + col];
    C[row * N + col] = alpha * dot + scaled_c;
}

// Version 1: thread (x, y) of the grid computes C[x, y]: x runs along M. The column loop repeats
// only when N needs over gpu::max_grid_rows blocks.
__global__ void gemm_uncoalesced_kernel(std::int64_t M, std::int64_t N, std::int64_t K,
                                        bool trans_a, bool trans_b, float alpha, const float* A,
                                        const float* B, float beta, float* C) {
    const std::int64_t row = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const std::int64_t col_stride = std::int64_t(gridDim.y) * blockDim.y;
    for (std::int64_t col = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; col < N;
         col += col_stride)
        dot_and_store(row, col, M, N, K, trans_a, trans_b, alpha, A, B, beta, C);
}

// Version 2: thread (x, y) computes C[y, x]: x runs along N. The row loop repeats only when M
// needs over gpu::max_grid_rows blocks.
__global__ void gemm_naive_kernel(std::int64_t M, std::int64_t N, std::int64_t K, bool trans_a,
                                  bool trans_b, float alpha, const float* A, const float* B,
                                  float beta, float* C) {
    const std::int64_t col = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (col >= N) return;
    const std::int64_t row_stride = std::int64_t(gridDim.y) * blockDim.y;
    for (std::int64_t row = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; row < M;
         row += row_stride)
        dot_and_store(row, col, M, N, K, trans_a, trans_b, alpha, A, B, beta, C);
}

// One thread per element of C: x covers `along_x` (M for version 1, N for version 2), y the other
// dimension, capped by gpu::grid_rows.
dim3 grid_for(std::int64_t along_x, std::int64_t along_y) {
    return dim3(unsigned(ceil_div<std::int64_t>(along_x, block_x)),
                gpu::grid_rows(ceil_div<std::int64_t>(along_y, block_y)));
}

void gemm_uncoalesced(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_uncoalesced_kernel, grid_for(s.M, s.N), dim3(block_x, block_y), 0, s.M, s.N,
                s.K, s.trans_a, s.trans_b, s.alpha, A, B, s.beta, C);
}

void gemm(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_naive_kernel, grid_for(s.N, s.M), dim3(block_x, block_y), 0, s.M, s.N, s.K,
                s.trans_a, s.trans_b, s.alpha, A, B, s.beta, C);
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernels(
    "gpu_naive", ops::gemm,
    {{1, "uncoalesced",
      "one thread per element of C, threadIdx.x down a column: a warp's loads K floats apart",
      gemm_uncoalesced},
     {2, "coalesced",
      "threadIdx.x along a row of C: a warp reads 32 consecutive floats of B and one of A", gemm}},
    /*default_version=*/2);

}  // namespace triptych::gpu_naive
