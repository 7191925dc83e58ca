// gpu_naive gemm: C = alpha * op(A) * op(B) + beta * C, row-major (GemmShape, common/ops.hpp).
//   A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b;  C is (M, N).
//
// version 1 (lesson 02): gemm_naive_kernel, one thread per element of C, everything read straight
// from global memory. Each C[row, col] costs 2K loads for 2K flops, so the kernel is bound by
// memory traffic, not arithmetic; gpu/tiled/gemm.cu (versions 2 and 3) removes that limit.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

// A 32 x 8 block: threadIdx.x runs along a row of C, so one warp is 32 consecutive columns of one
// row. Its 32 threads then read 32 consecutive B[k, col] (one 128-byte transaction), all read the
// same A[row, k] (a broadcast), and write 32 consecutive C. A 16 x 16 block would split each warp
// over two rows: still coalesced, but half-length segments and two A addresses per warp.
constexpr int block_cols = 32;
constexpr int block_rows = 8;

// One thread per C[row, col]. The row loop repeats only when M needs over gpu::max_grid_rows blocks.
__global__ void gemm_naive_kernel(std::int64_t M, std::int64_t N, std::int64_t K, bool trans_a,
                                  bool trans_b, float alpha, const float* A, const float* B,
                                  float beta, float* C) {
    const std::int64_t col = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (col >= N) return;
    const std::int64_t row_stride = std::int64_t(gridDim.y) * blockDim.y;
    for (std::int64_t row = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; row < M;
         row += row_stride) {
        float dot = 0.0f;
        for (std::int64_t k = 0; k < K; ++k) {
            // Untransposed B is read along a row (coalesced across the warp). Transposed B is read
            // down a column, K floats apart per thread: uncoalesced, the price of staying naive.
            const float a = trans_a ? A[k * M + row] : A[row * K + k];
            const float b = trans_b ? B[col * K + k] : B[k * N + col];
            dot += a * b;
        }
        // beta == 0 means C is not read: it may hold NaN, and 0 * NaN would be NaN.
        const float scaled_c = beta == 0.0f ? 0.0f : beta * C[row * N + col];
        C[row * N + col] = alpha * dot + scaled_c;
    }
}

}  // namespace

void gemm(const GemmShape& s, const float* A, const float* B, float* C) {
    const dim3 block(block_cols, block_rows);
    const dim3 grid(unsigned(ceil_div<std::int64_t>(s.N, block_cols)),
                    unsigned(std::min(ceil_div<std::int64_t>(s.M, block_rows), gpu::max_grid_rows)));
    gpu::launch(gemm_naive_kernel, grid, block, 0, s.M, s.N, s.K, s.trans_a, s.trans_b, s.alpha, A,
                B, s.beta, C);
}

[[maybe_unused]] const bool registered =
    register_kernel("gpu_naive", ops::gemm,
                    {2, "coalesced", "one thread per element of C; a warp reads 32 consecutive columns of B", gemm});

}  // namespace triptych::gpu_naive
