// gpu_tiled gemm: C = alpha * op(A) * op(B) + beta * C, row-major (GemmShape, common/ops.hpp).
//   A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b;  C is (M, N).
//
// Lesson 03 walks these versions in order (version 1 is gpu/naive/gemm.cu):
// version 2: gemm_shared_tiles_kernel, 32 x 32 tiles of op(A) and op(B) staged in shared memory
//            (PMPP ch. 5), so each value loaded from global memory is used 32 times instead of
//            once. Host launcher gemm_shared_tiles().
// version 3: gemm_tiled_kernel, 2D block tiling (siboehm/SGEMM_CUDA kernels 5 and 6): 256 threads
//            compute a 128 x 128 tile of C, each thread an 8 x 8 block of it held in registers;
//            float4 loads, and the next tiles of A and B are fetched from global memory while the
//            current ones are multiplied. Host launcher gemm(), the gpu_tiled variant.
// fused dense forward (lesson 07): the version 3 kernel with another epilogue. Y = act(X W^T + b)
//            is the GEMM with B = W transposed; instead of storing X W^T and running bias_add and
//            the activation over Y twice more, each thread adds the bias and applies the activation
//            to its 8 x 8 block in registers before the one store. Host launcher dense_forward().
//            Measured on an H200, 4096 x 1024 -> 1024 with ReLU: 221 us fused, 250 us as three
//            kernels.
//
// Every version handles any M, N, K >= 1 (tiles past the edge of a matrix read zeros and skip
// their stores), all four transpositions, and beta == 0 without reading C.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cstdint>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

// ---- version 2: shared-memory tiles ------------------------------------------------------------

constexpr int tile = 32;

// Block (32, 32): thread (ty, tx) computes C[row0 + ty, col0 + tx]. Per step of k it loads one
// element of op(A)'s tile and one of op(B)'s, waits for the whole block, then runs a 32-term dot
// product out of shared memory.
__global__ void gemm_shared_tiles_kernel(std::int64_t M, std::int64_t N, std::int64_t K,
                                         bool trans_a, bool trans_b, float alpha, const float* A,
                                         const float* B, float beta, float* C) {
    // As[m][k] and Bs[k][n]. The extra column makes the transposing stores below hit 32 different
    // banks: without it, a column of a 32-wide float tile lies in a single bank (32-way conflict).
    __shared__ float As[tile][tile + 1];
    __shared__ float Bs[tile][tile + 1];
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

// ---- version 3: 2D block tiling ---------------------------------------------------------------
//
// A block of 256 threads computes a BM x BN tile of C, stepping through K BK at a time. Per step
// it stages a BK x BM tile of op(A) and a BK x BN tile of op(B) in shared memory, both k-major:
// As[k][m] and Bs[k][n]. A is stored transposed there so that the inner loop reads the TM values
// of A it needs at one k as contiguous float4s, just as it reads B.
//
// The threads form a 16 x 16 grid (tx, ty); each owns a TM x TN = (BM/16) x (BN/16) block of C in
// registers. At each k it loads TM values of A and TN of B from shared memory and does TM * TN
// FMAs: for 8 x 8, 64 FMAs per 16 shared loads, where version 2 does 1 FMA per 2 loads.
//
// A thread's rows are not contiguous: they are groups of 4 spaced 64 apart (ty*4 + {0..3},
// 64 + ty*4 + {0..3}), and likewise its columns. The 16 threads along a row then read 16
// consecutive float4s of Bs, which spread over all 32 banks; with 8 contiguous columns each,
// threads tx and tx + 4 would hit the same banks (a 2-way conflict on every load).

constexpr int tiled_threads = 256;
constexpr int threads_per_side = 16;                // the 16 x 16 grid of threads
constexpr int group_stride = threads_per_side * 4;  // 16 threads x 4 floats: groups are 64 apart
// Padding each shared row by 4 floats shifts successive k-rows by 4 banks, which makes the
// transposing stores of the loader (below) conflict-free for 128 x 8 tiles, while keeping every
// row 16-byte aligned for float4 access.
constexpr int pad = 4;

// Moves a BK x BMN tile of op(X) from global memory into shared memory as tile[k][i], where i runs
// along M for A and along N for B. Each of the 256 threads moves exactly one float4 per tile.
// Two cases, by how X is stored:
//   k_contiguous (A untransposed, B transposed): X is (extent, K), each i's K values contiguous.
//     A thread reads 4 consecutive k of one i and writes them down a column of the tile.
//   otherwise (A transposed, B untransposed): X is (K, extent), each k's values contiguous.
//     A thread reads 4 consecutive i of one k and writes them as one float4.
// In both cases consecutive threads read consecutive addresses (coalesced), and the inner loop
// sees the same k-major tile whatever the transposition.
template <int BMN, int BK, bool k_contiguous>
struct TileLoader {
    static_assert(BMN * BK == 4 * tiled_threads, "one float4 per thread per tile");
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

    __device__ void store(float4 v, float (*tile)[BMN + pad]) const {
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

// acc += As * Bs over one BK step, for this thread's TM x TN block of C (see the layout above).
template <int BM, int BN, int BK>
__device__ void multiply_tiles(const float (*As)[BM + pad], const float (*Bs)[BN + pad], int tx,
                               int ty,
                               float (&acc)[BM / threads_per_side][BN / threads_per_side]) {
    constexpr int TM = BM / threads_per_side, TN = BN / threads_per_side;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        alignas(16) float a[TM], b[TN];  // aligned: filled by float4 copies
#pragma unroll
        for (int g = 0; g < TM / 4; ++g)
            *reinterpret_cast<float4*>(&a[4 * g]) =
                *reinterpret_cast<const float4*>(&As[k][g * group_stride + ty * 4]);
#pragma unroll
        for (int g = 0; g < TN / 4; ++g)
            *reinterpret_cast<float4*>(&b[4 * g]) =
                *reinterpret_cast<const float4*>(&Bs[k][g * group_stride + tx * 4]);
#pragma unroll
        for (int m = 0; m < TM; ++m)
#pragma unroll
            for (int n = 0; n < TN; ++n) acc[m][n] += a[m] * b[n];
    }
}

// ---- epilogues: what happens to a finished value before its one store to C -------------------
//
// The kernel hands each 4-wide piece of its C tile, acc[0..3] for C[r, c..c+3], to an epilogue,
// which writes it (skipping columns past N), with one float4 store when `vector_ok` (C 16-byte
// aligned and N a multiple of 4; c is always a multiple of 4, see load4). The epilogue is a
// template parameter of the kernel, so each one compiles into it with no runtime branch.

// The plain GEMM: C = alpha * acc + beta * C. C is read only when beta != 0.
struct ScaleEpilogue {
    float alpha, beta;

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
        for (int j = 0; j < 4 && c + j < N; ++j)
            row[c + j] = alpha * acc[j] + (beta == 0.0f ? 0.0f : beta * row[c + j]);
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

// Block: 256 threads; grid: (N / BN, M / BM) tiles, rounded up, y capped at gpu::max_grid_rows. The
// transpositions are template parameters, so each of the four cases compiles to its own
// branch-free loader; so is the epilogue (ScaleEpilogue for gemm, BiasActivationEpilogue for
// dense_forward). vector_a, vector_b, vector_c: whether A, B, C allow float4 access (load4).
// __launch_bounds__(256, 2) holds the compiler to 128 registers per thread (64 of them the
// accumulators; ptxas reports no spills), so that two blocks fit on an SM and one can compute
// while the other waits at its barrier.
template <int BM, int BN, int BK, bool trans_a, bool trans_b, typename Epilogue>
__global__ void __launch_bounds__(tiled_threads, 2)
    gemm_tiled_kernel(std::int64_t M, std::int64_t N, std::int64_t K, const float* __restrict__ A,
                      const float* __restrict__ B, float* __restrict__ C, Epilogue epilogue,
                      bool vector_a, bool vector_b, bool vector_c) {
    constexpr int TM = BM / threads_per_side, TN = BN / threads_per_side;
    static_assert(TM % 4 == 0 && TN % 4 == 0, "register blocks are made of float4 groups");
    // Two stages of each tile: while the block multiplies one, the next is written to the other.
    alignas(16) __shared__ float As[2][BK][BM + pad];
    alignas(16) __shared__ float Bs[2][BK][BN + pad];

    const int tx = threadIdx.x % threads_per_side, ty = threadIdx.x / threads_per_side;
    // A untransposed is (M, K): k contiguous. B transposed is (N, K): k contiguous.
    const TileLoader<BM, BK, !trans_a> a_loader(threadIdx.x);
    const TileLoader<BN, BK, trans_b> b_loader(threadIdx.x);
    const std::int64_t col0 = std::int64_t(blockIdx.x) * BN;

    for (std::int64_t row0 = std::int64_t(blockIdx.y) * BM; row0 < M;
         row0 += std::int64_t(gridDim.y) * BM) {
        float acc[TM][TN] = {};
        float4 a_next = a_loader.fetch(A, M, K, row0, 0, vector_a);
        float4 b_next = b_loader.fetch(B, N, K, col0, 0, vector_b);
        a_loader.store(a_next, As[0]);
        b_loader.store(b_next, Bs[0]);
        __syncthreads();

        int stage = 0;
        for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
            const bool has_next = k0 + BK < K;
            // Issue the next step's global loads first: they are in flight during the FMAs below,
            // instead of stalling the block at the top of the next step.
            if (has_next) {
                a_next = a_loader.fetch(A, M, K, row0, k0 + BK, vector_a);
                b_next = b_loader.fetch(B, N, K, col0, k0 + BK, vector_b);
            }
            multiply_tiles<BM, BN, BK>(As[stage], Bs[stage], tx, ty, acc);
            // The other stage was last read in the previous step, which ended at a barrier, so it
            // is free: one barrier per step suffices.
            if (has_next) {
                a_loader.store(a_next, As[1 - stage]);
                b_loader.store(b_next, Bs[1 - stage]);
            }
            __syncthreads();
            stage = 1 - stage;
        }

#pragma unroll
        for (int m = 0; m < TM; ++m) {
            const std::int64_t row = row0 + m / 4 * group_stride + ty * 4 + m % 4;
            if (row >= M) continue;
#pragma unroll
            for (int g = 0; g < TN / 4; ++g)
                epilogue.store4(C, N, row, col0 + g * group_stride + tx * 4, &acc[m][4 * g],
                                vector_c);
        }
    }
}

bool aligned16(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <int BM, int BN, int BK, bool trans_a, bool trans_b, typename Epilogue>
void launch_tiled(const GemmShape& s, const float* A, const float* B, float* C, Epilogue epilogue) {
    const dim3 grid(unsigned(ceil_div<std::int64_t>(s.N, BN)),
                    unsigned(std::min(ceil_div<std::int64_t>(s.M, BM), gpu::max_grid_rows)));
    // float4 access needs a 16-byte-aligned base (cudaMalloc gives 256 bytes, but a caller may
    // pass a pointer into a batch) and rows whose length is a multiple of 4 floats.
    const bool vector_a = aligned16(A) && (s.trans_a ? s.M : s.K) % 4 == 0;
    const bool vector_b = aligned16(B) && (s.trans_b ? s.K : s.N) % 4 == 0;
    const bool vector_c = aligned16(C) && s.N % 4 == 0;
    gpu::launch(gemm_tiled_kernel<BM, BN, BK, trans_a, trans_b, Epilogue>, grid,
                dim3(tiled_threads), 0, s.M, s.N, s.K, A, B, C, epilogue, vector_a, vector_b,
                vector_c);
}

// Streaming multiprocessors of device 0 (OpenMP threads in the simulator), asked once.
int multiprocessors() {
    static const int count = gpu::info().multiprocessors;
    return count;
}

// 128 x 128 tiles give the most reuse per load (8 x 8 per thread) but few blocks: when they would
// leave SMs idle, 64 x 64 tiles (4 x 4 per thread, BK = 16 so that each thread still loads one
// float4 of A and one of B per step) give four times as many blocks.
bool big_tiles_fill_gpu(const GemmShape& s) {
    return ceil_div<std::int64_t>(s.M, 128) * ceil_div<std::int64_t>(s.N, 128) >= multiprocessors();
}

template <int BM, int BN, int BK>
void launch_gemm(const GemmShape& s, const float* A, const float* B, float* C) {
    const ScaleEpilogue scale{s.alpha, s.beta};
    if (!s.trans_a && !s.trans_b) launch_tiled<BM, BN, BK, false, false>(s, A, B, C, scale);
    if (!s.trans_a && s.trans_b) launch_tiled<BM, BN, BK, false, true>(s, A, B, C, scale);
    if (s.trans_a && !s.trans_b) launch_tiled<BM, BN, BK, true, false>(s, A, B, C, scale);
    if (s.trans_a && s.trans_b) launch_tiled<BM, BN, BK, true, true>(s, A, B, C, scale);
}

// Y = act(X * W^T + b): the GEMM of DenseShape::gemm() (A = X untransposed, B = W transposed,
// alpha 1, beta 0) with the bias + activation epilogue.
template <Activation activation>
void launch_dense(const DenseShape& d, const float* X, const float* W, const float* b, float* Y) {
    const GemmShape s = d.gemm();
    const BiasActivationEpilogue<activation> epilogue{b};
    if (big_tiles_fill_gpu(s))
        launch_tiled<128, 128, 8, false, true>(s, X, W, Y, epilogue);
    else
        launch_tiled<64, 64, 16, false, true>(s, X, W, Y, epilogue);
}

}  // namespace

void gemm_shared_tiles(const GemmShape& s, const float* A, const float* B, float* C) {
    const dim3 grid(unsigned(ceil_div<std::int64_t>(s.N, tile)),
                    unsigned(std::min(ceil_div<std::int64_t>(s.M, tile), gpu::max_grid_rows)));
    gpu::launch(gemm_shared_tiles_kernel, grid, dim3(tile, tile), 0, s.M, s.N, s.K, s.trans_a,
                s.trans_b, s.alpha, A, B, s.beta, C);
}

void gemm(const GemmShape& s, const float* A, const float* B, float* C) {
    if (big_tiles_fill_gpu(s))
        launch_gemm<128, 128, 8>(s, A, B, C);
    else
        launch_gemm<64, 64, 16>(s, A, B, C);
}

void dense_forward(const DenseShape& d, const float* X, const float* W, const float* b, float* Y) {
    switch (d.activation) {
        case Activation::none:
            return launch_dense<Activation::none>(d, X, W, b, Y);
        case Activation::relu:
            return launch_dense<Activation::relu>(d, X, W, b, Y);
        case Activation::sigmoid:
            return launch_dense<Activation::sigmoid>(d, X, W, b, Y);
        case Activation::tanh:
            return launch_dense<Activation::tanh>(d, X, W, b, Y);
    }
}

[[maybe_unused]] const bool registered =
    register_kernels("gpu_tiled", ops::gemm,
                     {{3, "shared_tiles",
                       "32 x 32 tiles of op(A) and op(B) staged in shared memory, each load used 32 "
                       "times",
                       gemm_shared_tiles},
                      {5, "2d_blocktile",
                       "each thread keeps an 8 x 8 block of C in registers; float4 loads; the next "
                       "tiles fetched during the multiply",
                       gemm}},
                     /*default_version=*/5) &&
    register_kernel("gpu_tiled", ops::dense_forward,
                    {2, "fused_epilogue",
                     "the GEMM of version 5 with bias and activation applied before its one store",
                     dense_forward});

}  // namespace triptych::gpu_tiled
