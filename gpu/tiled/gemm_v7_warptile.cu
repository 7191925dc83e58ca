// gpu_tiled gemm, version 7 (lesson 03, step 5): warp tiling (siboehm/SGEMM_CUDA, kernel 10).
//   C = alpha * op(A) * op(B) + beta * C, shapes as in gemm_v3_shared_tiles.cu.
//
// What changed from version 6: which values of C a thread owns. Version 6 gives each thread 8
// contiguous rows and columns, so at one k the 16 threads along a row read Bs 8 floats apart (a
// 4-way bank conflict) and a warp's reads are spread over the whole tile. Here every warp owns a
// 64 x 32 tile of C and each lane 2 x 2 blocks of 4 x 4 within it (WarpTile, gemm.hpp): a warp
// reads 32 consecutive floats of As and 16 of Bs per k, conflict-free, and the register blocks
// are still 8 x 8. When 128 x 128 tiles would leave streaming multiprocessors idle (fewer tiles
// than SMs: 1024^2 on an H200 has 64 tiles for 132 SMs), 64 x 64 tiles with 32 x 16 warp tiles
// give four times as many blocks. Run: triptych check --op gemm --backend gpu_tiled@7.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "gpu/tiled/gemm.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int threads = 256;
constexpr int pad = 4;  // as in version 6: rows stay 16-byte aligned, transposing stores spread

template <int BM, int BN, int BK, int WM, int WN, bool trans_a, bool trans_b>
__global__ void __launch_bounds__(threads)
    gemm_warptile_kernel(std::int64_t M, std::int64_t N, std::int64_t K,
                         const float* __restrict__ A, const float* __restrict__ B,
                         float* __restrict__ C, ScaleEpilogue epilogue, VectorAccess vector) {
    using Tile = WarpTile<BM, BN, WM, WN>;
    alignas(16) __shared__ float As[BK][BM + pad];  // As[k][m]
    alignas(16) __shared__ float Bs[BK][BN + pad];  // Bs[k][n]
    const TileLoader<BM, BK, !trans_a> a_loader(threadIdx.x);
    const TileLoader<BN, BK, trans_b> b_loader(threadIdx.x);
    const Tile tile(threadIdx.x);
    const std::int64_t col0 = std::int64_t(blockIdx.x) * BN;

    for (std::int64_t row0 = std::int64_t(blockIdx.y) * BM; row0 < M;
         row0 += std::int64_t(gridDim.y) * BM) {
        float acc[Tile::TM][Tile::TN] = {};
        for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
            a_loader.store(a_loader.fetch(A, M, K, row0, k0, vector.a), As);
            b_loader.store(b_loader.fetch(B, N, K, col0, k0, vector.b), Bs);
            __syncthreads();
            tile.template multiply<BK>(As, Bs, acc);
            __syncthreads();
        }
        tile.store(epilogue, C, M, N, row0, col0, acc, vector.c);
    }
}

template <int BM, int BN, int BK, int WM, int WN, bool trans_a, bool trans_b>
void launch(const GemmShape& s, const float* A, const float* B, float* C) {
    gpu::launch(gemm_warptile_kernel<BM, BN, BK, WM, WN, trans_a, trans_b>, tile_grid(s, BM, BN),
                dim3(threads), 0, s.M, s.N, s.K, A, B, C, ScaleEpilogue{s.alpha, s.beta},
                vector_access(s, A, B, C));
}

template <int BM, int BN, int BK, int WM, int WN>
void launch_tiles(const GemmShape& s, const float* A, const float* B, float* C) {
    if (!s.trans_a && !s.trans_b) launch<BM, BN, BK, WM, WN, false, false>(s, A, B, C);
    if (!s.trans_a && s.trans_b) launch<BM, BN, BK, WM, WN, false, true>(s, A, B, C);
    if (s.trans_a && !s.trans_b) launch<BM, BN, BK, WM, WN, true, false>(s, A, B, C);
    if (s.trans_a && s.trans_b) launch<BM, BN, BK, WM, WN, true, true>(s, A, B, C);
}

void gemm_warptile(const GemmShape& s, const float* A, const float* B, float* C) {
    if (big_tiles_fill_gpu(s))
        launch_tiles<128, 128, 8, 64, 32>(s, A, B, C);
    else
        launch_tiles<64, 64, 16, 32, 16>(s, A, B, C);
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernels(
    "gpu_tiled", ops::gemm,
    {{7, "warptile",
      "each warp owns a 64 x 32 tile of C, each lane 2 x 2 blocks of 4 x 4: conflict-free "
      "shared loads; 64 x 64 tiles when 128 x 128 would leave SMs idle",
      gemm_warptile}},
    no_default_version);

}  // namespace triptych::gpu_tiled
