// gpu_tiled gemm: C = alpha * op(A) * op(B) + beta * C, row-major (GemmShape, common/ops.hpp).
//   A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b;  C is (M, N).
//
// The GEMM ladder of lessons 02 and 03, one kernel per step, each its own file so that a learner
// can diff it against the one before (`triptych versions --op gemm` lists them):
//   version 1, 2  gpu/naive/gemm.cu: one thread per element of C, uncoalesced then coalesced
//   version 3     gemm_v3_shared_tiles.cu: 32 x 32 tiles staged in shared memory
//   version 4     gemm_v4_1d_blocktile.cu: 8 outputs per thread, down a column
//   version 5     gemm_v5_2d_blocktile.cu: an 8 x 8 block of C per thread, in registers
//   version 6     gemm_v6_vectorized.cu: float4 loads, A transposed in shared memory
//   version 7     gemm_v7_warptile.cu: warp tiles, conflict-free shared loads
//   version 8     this file: version 7 with double buffering, the variant's default
// and the fused dense forward (lesson 07) on version 8's kernel. Every version handles any
// M, N, K >= 1 and all four transpositions (gemm.hpp).
//
// Version 8, what changed from version 7: double buffering. Version 7 loads a step's tiles, waits
// at a barrier, multiplies, waits again: while the loads are in flight nothing computes, and two
// barriers per step hold every warp back to the slowest. Here each tile has two stages in shared
// memory: the next step's float4s are fetched from global memory into registers *before* the
// current step's multiply, so their latency hides behind its FMAs, and written to the other
// stage after it; one barrier per step suffices. __launch_bounds__(256, 2) holds the compiler to
// 128 registers per thread (64 of them the accumulators), so that two blocks fit on an SM and one
// can compute while the other waits at its barrier. (Hopper's cp.async and TMA would copy global
// to shared memory without passing through registers; not done here.)
//
// Fused dense forward: Y = act(X W^T + b) is the GEMM with B = W transposed; instead of storing
// X W^T and running bias_add and the activation over Y twice more, each thread adds the bias and
// applies the activation to its block in registers before the one store (BiasActivationEpilogue).
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/tiled/gemm.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int threads = 256;
constexpr int pad = 4;  // as in versions 6 and 7

template <int BM, int BN, int BK, int WM, int WN, bool trans_a, bool trans_b, typename Epilogue>
__global__ void __launch_bounds__(threads, 2)
    gemm_double_buffer_kernel(std::int64_t M, std::int64_t N, std::int64_t K,
                              const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, Epilogue epilogue, VectorAccess vector) {
    using Tile = WarpTile<BM, BN, WM, WN>;
    // Two stages of each tile: while the block multiplies one, the next is written to the other.
    alignas(16) __shared__ float As[2][BK][BM + pad];
    alignas(16) __shared__ float Bs[2][BK][BN + pad];
    const TileLoader<BM, BK, !trans_a> a_loader(threadIdx.x);
    const TileLoader<BN, BK, trans_b> b_loader(threadIdx.x);
    const Tile tile(threadIdx.x);
    const std::int64_t col0 = std::int64_t(blockIdx.x) * BN;

    for (std::int64_t row0 = std::int64_t(blockIdx.y) * BM; row0 < M;
         row0 += std::int64_t(gridDim.y) * BM) {
        float acc[Tile::TM][Tile::TN] = {};
        float4 a_next = a_loader.fetch(A, M, K, row0, 0, vector.a);
        float4 b_next = b_loader.fetch(B, N, K, col0, 0, vector.b);
        a_loader.store(a_next, As[0]);
        b_loader.store(b_next, Bs[0]);
        __syncthreads();

        int stage = 0;
        for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
            const bool has_next = k0 + BK < K;
            // Issue the next step's global loads first: they are in flight during the FMAs below,
            // instead of stalling the block at the top of the next step.
            if (has_next) {
                a_next = a_loader.fetch(A, M, K, row0, k0 + BK, vector.a);
                b_next = b_loader.fetch(B, N, K, col0, k0 + BK, vector.b);
            }
            tile.template multiply<BK>(As[stage], Bs[stage], acc);
            // The other stage was last read in the previous step, which ended at a barrier, so it
            // is free: one barrier per step suffices.
            if (has_next) {
                a_loader.store(a_next, As[1 - stage]);
                b_loader.store(b_next, Bs[1 - stage]);
            }
            __syncthreads();  // the next stage stored and this one read, by every thread
            stage = 1 - stage;
        }
        tile.store(epilogue, C, M, N, row0, col0, acc, vector.c);
    }
}

template <int BM, int BN, int BK, int WM, int WN, bool trans_a, bool trans_b, typename Epilogue>
void launch(const GemmShape& s, const float* A, const float* B, float* C, Epilogue epilogue) {
    gpu::launch(gemm_double_buffer_kernel<BM, BN, BK, WM, WN, trans_a, trans_b, Epilogue>,
                tile_grid(s, BM, BN), dim3(threads), 0, s.M, s.N, s.K, A, B, C, epilogue,
                vector_access(s, A, B, C));
}

// 128 x 128 tiles (64 x 32 per warp, BK = 8) when they fill the GPU, else 64 x 64 (32 x 16 per
// warp, BK = 16 so that each thread still moves one float4 of A and one of B per step).
template <bool trans_a, bool trans_b, typename Epilogue>
void launch_sized(const GemmShape& s, const float* A, const float* B, float* C, Epilogue epilogue) {
    if (big_tiles_fill_gpu(s))
        launch<128, 128, 8, 64, 32, trans_a, trans_b>(s, A, B, C, epilogue);
    else
        launch<64, 64, 16, 32, 16, trans_a, trans_b>(s, A, B, C, epilogue);
}

// Y = act(X * W^T + b): the GEMM of DenseShape::gemm() (A = X untransposed, B = W transposed,
// alpha 1, beta 0) with the bias + activation epilogue.
template <Activation activation>
void launch_dense(const DenseShape& d, const float* X, const float* W, const float* b, float* Y) {
    launch_sized<false, true>(d.gemm(), X, W, Y, BiasActivationEpilogue<activation>{b});
}

}  // namespace

void gemm(const GemmShape& s, const float* A, const float* B, float* C) {
    const ScaleEpilogue scale{s.alpha, s.beta};
    if (!s.trans_a && !s.trans_b) launch_sized<false, false>(s, A, B, C, scale);
    if (!s.trans_a && s.trans_b) launch_sized<false, true>(s, A, B, C, scale);
    if (s.trans_a && !s.trans_b) launch_sized<true, false>(s, A, B, C, scale);
    if (s.trans_a && s.trans_b) launch_sized<true, true>(s, A, B, C, scale);
}

void dense_forward(const DenseShape& d, const float* X, const float* W, const float* b, float* Y) {
    with_activation(d.activation,
                    [&](auto act) { launch_dense<decltype(act)::kind>(d, X, W, b, Y); });
}

[[maybe_unused]] const bool registered =
    register_kernels("gpu_tiled", ops::gemm,
                     {{8, "double_buffer",
                       "the next tiles fetched into registers during the multiply, two shared "
                       "stages, one barrier per step",
                       gemm}},
                     /*default_version=*/8) &&
    register_kernel(
        "gpu_tiled", ops::dense_forward,
        {2, "fused_epilogue",
         "version 8's GEMM with bias and activation applied before its one store", dense_forward});

}  // namespace triptych::gpu_tiled
