// gpu_tiled conv2d by implicit GEMM: the three passes with ConvAlgorithm::implicit_gemm (db:
// conv2d.cu). Shapes and math as in cpu/naive/conv2d.hpp:
//   x and dx (N, C, H, W), w and dw (K, C, R, S), b (K), y and dy (N, K, P, Q).
// In the kernels (h, col) is a position in x: w names the filters.
//
// version 4 (lesson 09, "Implicit GEMM"; version 3, im2col, is conv_im2col.cu). im2col writes
// the matrix of patches to global memory and its GEMM reads it back: for a 3x3 layer that matrix
// is 9 times the input, a round trip through DRAM that costs more than the input itself. Here
// each pass is the same GEMM, with gemm.cu's multiply unchanged (version 8: warp tiles of 8 x 8
// values per thread, the next tiles fetched during the multiply, two shared stages), but its
// loaders *gather* each shared-memory tile straight from x, w or dy, zeros for the padding, so
// the matrix of patches never exists; and its stores write each value where the pass wants it
// (y's layout, the bias added), so no reordering pass runs either. They are staged through shared
// memory (StagedStores) so that a warp stores consecutive outputs of one row of C. One GEMM,
// C = A B, covers the whole batch:
//
//   pass              C (M x N)              A (M x L)                B (L x N)
//   forward           y: filters x outputs   w: filters x taps        patches: taps x outputs
//   backward data     dx: channels x inputs  w^T: channels x (k,r,s)  dy dilated: (k,r,s) x inputs
//   backward weights  dw: filters x taps     dy: filters x outputs    patches^T: outputs x taps
//
// with outputs (b, p, q), inputs (b, h, col), taps (c, r, s), and "dy dilated" lesson 08's
// transposed convolution: dy[b, k, p, q] where h + pad_h - r = p * stride_h (and likewise for q),
// 0 elsewhere. Each C element has one writer and adds its L terms in order: no atomics, the same
// bits on every run. The weights' GEMM has a short C (filters x taps) and a long L (every output
// of the batch), so its L is split over blocks (split_reduction) and conv2d.cu's sum_splits adds
// the partial sums in split order.
//
// The price of gathering is index arithmetic. Each element of a tile needs its (c, r, s) or
// (b, p, q) from a flat index: two divisions by numbers known only at launch. An integer division
// is a long instruction sequence on a GPU; `Divisor` replaces it by a multiply-high and a shift
// with a multiplier computed once on the host. What a thread can compute once per block, it does
// once: the row of the tile it loads (GatherLoader keeps its Point) stays fixed while the
// reduction index moves along.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "common/errors.hpp"
#include "common/math.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/tiled/conv_implicit_gemm.hpp"
#include "gpu/tiled/divisor.hpp"
#include "gpu/tiled/gemm.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int threads = 256;
constexpr int pad = 4;  // as in gemm.cu

// ---- the operands --------------------------------------------------------------------------
//
// An operand is a matrix that is never stored, seen as `extent` x L whatever its place in the
// product (A is M x L; B is read as its transpose, N x L). It gives:
//   Point point(int i)              what row i's elements have in common (a base address, a
//                                   position), computed once per tile by the thread that loads it
//   float at(const Point&, int l)   element (i, l); zero where the convolution reads padding
//   l_fast                          whether consecutive threads should load consecutive l (true
//                                   where l runs along memory) or consecutive i
// The loader checks i < extent and l < L before calling at().

// forward A: w as the (K, C*R*S) matrix it already is.
struct FilterRows {
    static constexpr bool l_fast = true;
    const float* w;
    int taps;  // C*R*S
    using Point = const float*;
    __device__ Point point(int k) const { return w + std::int64_t(k) * taps; }
    __device__ float at(Point row, int l) const { return __ldg(row + l); }
};

// backward data A: w^T, row c = the weights of input channel c, in (k, r, s) order.
struct FilterColumns {
    static constexpr bool l_fast = true;  // runs of R*S consecutive weights
    const float* w;
    int channels;  // C
    Divisor taps;  // R*S
    using Point = const float*;
    __device__ Point point(int c) const { return w + std::int64_t(c) * taps.value; }
    __device__ float at(Point column, int l) const {
        const auto [k, rs] = taps.divmod(l);
        return __ldg(column + std::int64_t(k) * channels * taps.value + rs);
    }
};

// backward weights A: dy as (K, N*P*Q), row k = filter k's gradients over the batch.
struct GradientRows {
    static constexpr bool l_fast = true;  // runs of P*Q consecutive gradients
    const float* dy;
    int filters;                // K
    Divisor outputs_per_image;  // P*Q
    using Point = const float*;
    __device__ Point point(int k) const { return dy + std::int64_t(k) * outputs_per_image.value; }
    __device__ float at(Point row, int l) const {
        const auto [b, pq] = outputs_per_image.divmod(l);
        return __ldg(row + std::int64_t(b) * filters * outputs_per_image.value + pq);
    }
};

// The geometry every gather of x or dy needs.
struct Geometry {
    int C, H, W, K, P, Q, stride_h, stride_w, pad_h, pad_w;
    Divisor S, RS, Q_div, PQ, W_div, HW, stride_h_div, stride_w_div;

    explicit Geometry(const Conv2dShape& s)
        : C(int(s.C)),
          H(int(s.H)),
          W(int(s.W)),
          K(int(s.K)),
          P(int(s.P())),
          Q(int(s.Q())),
          stride_h(int(s.stride_h)),
          stride_w(int(s.stride_w)),
          pad_h(int(s.pad_h)),
          pad_w(int(s.pad_w)),
          S(int(s.S)),
          RS(int(s.R * s.S)),
          Q_div(Q),
          PQ(P * Q),
          W_div(W),
          HW(H * W),
          stride_h_div(stride_h),
          stride_w_div(stride_w) {}
    __device__ std::int64_t image_floats() const { return std::int64_t(C) * H * W; }
};

// forward B: the patches, row (b, p, q) = the C x R x S inputs that output reads, in (c, r, s)
// order. Consecutive threads take consecutive outputs: consecutive q read x stride_w apart.
struct Patches {
    static constexpr bool l_fast = false;
    const float* x;
    Geometry g;
    struct Point {
        const float* image;
        int h0, col0;  // the window's top-left corner in x, padding included
    };
    __device__ Point point(int output) const {
        const auto [b, pq] = g.PQ.divmod(output);
        const auto [p, q] = g.Q_div.divmod(pq);
        return {x + b * g.image_floats(), p * g.stride_h - g.pad_h, q * g.stride_w - g.pad_w};
    }
    __device__ float at(const Point& o, int l) const {
        const auto [c, rs] = g.RS.divmod(l);
        const auto [r, s] = g.S.divmod(rs);
        const int h = o.h0 + r, col = o.col0 + s;
        // One unsigned comparison tests both 0 <= h and h < H.
        if (unsigned(h) >= unsigned(g.H) || unsigned(col) >= unsigned(g.W)) return 0.0f;
        return __ldg(o.image + (std::int64_t(c) * g.H + h) * g.W + col);
    }
};

// backward data B: dy dilated, row (b, h, col) = the dy terms input (h, col) of image b
// receives, in (k, r, s) order: dy[b, k, p, q] with p * stride_h = h + pad_h - r (and q likewise),
// 0 where no such p or q exists.
struct DilatedGradient {
    static constexpr bool l_fast = false;
    const float* dy;
    Geometry g;
    struct Point {
        const float* image;  // dy of image b
        int h, col;          // the input's position plus the padding
    };
    __device__ Point point(int input) const {
        const auto [b, hw] = g.HW.divmod(input);
        const auto [h, col] = g.W_div.divmod(hw);
        return {dy + std::int64_t(b) * g.K * g.PQ.value, h + g.pad_h, col + g.pad_w};
    }
    __device__ float at(const Point& i, int l) const {
        const auto [k, rs] = g.RS.divmod(l);
        const auto [r, s] = g.S.divmod(rs);
        const int p_strided = i.h - r, q_strided = i.col - s;
        if (p_strided < 0 || q_strided < 0) return 0.0f;
        const auto [p, p_rest] = g.stride_h_div.divmod(p_strided);
        const auto [q, q_rest] = g.stride_w_div.divmod(q_strided);
        if (p_rest != 0 || q_rest != 0 || p >= g.P || q >= g.Q) return 0.0f;
        return __ldg(i.image + (std::int64_t(k) * g.P + p) * g.Q + q);
    }
};

// backward weights B: the patches transposed, row (c, r, s) = what tap (c, r, s) multiplies at
// every output of the batch, in (b, p, q) order. Consecutive threads take consecutive outputs.
struct PatchColumns {
    static constexpr bool l_fast = true;
    const float* x;
    Geometry g;
    struct Point {
        std::int64_t channel;  // offset of channel c in an image
        int r, s;              // the tap, less the padding
    };
    __device__ Point point(int tap) const {
        const auto [c, rs] = g.RS.divmod(tap);
        const auto [r, s] = g.S.divmod(rs);
        return {std::int64_t(c) * g.H * g.W, r - g.pad_h, s - g.pad_w};
    }
    __device__ float at(const Point& t, int l) const {
        const auto [b, pq] = g.PQ.divmod(l);
        const auto [p, q] = g.Q_div.divmod(pq);
        const int h = p * g.stride_h + t.r, col = q * g.stride_w + t.s;
        if (unsigned(h) >= unsigned(g.H) || unsigned(col) >= unsigned(g.W)) return 0.0f;
        return __ldg(x + b * g.image_floats() + t.channel + std::int64_t(h) * g.W + col);
    }
};

// ---- the stores: where C[m, n] goes ----------------------------------------------------------

// forward: y[b, k, p, q] = C[k, (b, p, q)] + bias[k].
struct OutputStore {
    float* y;
    const float* bias;
    int filters;
    Divisor outputs_per_image;  // P*Q
    __device__ void operator()(int k, int output, int, float value) const {
        const auto [b, pq] = outputs_per_image.divmod(output);
        y[(std::int64_t(b) * filters + k) * outputs_per_image.value + pq] = value + __ldg(bias + k);
    }
};

// backward data: dx[b, c, h, col] = C[c, (b, h, col)].
struct InputGradientStore {
    float* dx;
    int channels;
    Divisor inputs_per_image;  // H*W
    __device__ void operator()(int c, int input, int, float value) const {
        const auto [b, hw] = inputs_per_image.divmod(input);
        dx[(std::int64_t(b) * channels + c) * inputs_per_image.value + hw] = value;
    }
};

// backward weights: partial[split, k, tap] = C[k, tap] over that split's share of L.
struct WeightStore {
    float* partial;
    int taps;              // C*R*S
    std::int64_t weights;  // K*C*R*S
    __device__ void operator()(int k, int tap, int split, float value) const {
        partial[split * weights + std::int64_t(k) * taps + tap] = value;
    }
};

// ---- the kernel ------------------------------------------------------------------------------

// Gathers one operand's BMN x BK tiles into shared memory as tile[l][i], `count` elements per
// thread per tile. With l_fast, a warp's 32 lanes take 32 / BK rows of BK consecutive l, so they
// hold count different rows; otherwise they take 32 consecutive rows at one l, and each thread
// keeps one row for all its elements. Either way the shared stores hit 32 different banks (the
// pad of 4 shifts each l's row by 4 banks) but for 64-row tiles with BK = 16 (2-way).
template <typename Operand, int BMN, int BK>
struct GatherLoader {
    static constexpr bool l_fast = Operand::l_fast;
    static constexpr int count = BMN * BK / threads;
    static constexpr int rows = l_fast ? count : 1;  // the rows this thread loads
    static_assert(count >= 1 && BMN * BK % threads == 0, "whole elements per thread");
    static_assert(l_fast ? threads % BK == 0 : threads % BMN == 0, "a whole grid of threads");

    typename Operand::Point points[rows];
    bool inside[rows];  // the row is inside the operand (not past its extent)
    int thread;

    __device__ static int i_of(int thread, int e) {
        return l_fast ? thread / BK + e * (threads / BK) : thread % BMN;
    }
    __device__ static int l_of(int thread, int e) {
        return l_fast ? thread % BK : thread / BMN + e * (threads / BMN);
    }

    __device__ GatherLoader(const Operand& op, int extent, int i0, int thread_) : thread(thread_) {
#pragma unroll
        for (int e = 0; e < rows; ++e) {
            const int i = i0 + i_of(thread, e);
            inside[e] = i < extent;
            points[e] = op.point(inside[e] ? i : i0);
        }
    }
    // This thread's elements of the tile whose reduction index starts at l0; l_end ends the
    // block's share of the reduction.
    __device__ void fetch(const Operand& op, int l0, int l_end, float (&v)[count]) const {
#pragma unroll
        for (int e = 0; e < count; ++e) {
            const int l = l0 + l_of(thread, e), row = l_fast ? e : 0;
            v[e] = inside[row] && l < l_end ? op.at(points[row], l) : 0.0f;
        }
    }
    template <int STRIDE>
    __device__ void store(const float (&v)[count], float (*tile)[STRIDE]) const {
#pragma unroll
        for (int e = 0; e < count; ++e) tile[l_of(thread, e)][i_of(thread, e)] = v[e];
    }
};

// The sizes of one implicit GEMM: C (M x N) = A (M x L) * B (L x N), the reduction split in
// pieces of l_per_split (a multiple of every BK) over blockIdx.z.
struct GemmSize {
    int M, N, L, l_per_split;
};

// The stores go through shared memory. The multiply leaves each lane a 4 x 4 block of C per
// (i, j) group, and a warp's lanes as 8 rows x 4 columns of blocks (WarpTile): stored straight
// from those registers, one store instruction would write one float per lane to 8 rows of C that
// lie far apart in y, dx or dw (a row of C is one filter's outputs, say), 4 floats in each, 16
// bytes apart. So a warp instead writes one of its accumulator rows i (8 rows of C, WN columns)
// into its own patch of shared memory with float4 stores, and reads the patch back a row of C at
// a time: consecutive lanes hold consecutive columns, whose addresses are consecutive in every
// pass's output, and each store instruction writes whole 32-byte sectors. The patches reuse the
// shared tiles' memory, which the multiply has finished with (the loop's last barrier).
//   A patch row is `stride` floats, 16 banks past a multiple of 32: the 8 lanes of each quarter
// warp's float4 stores (2 rows x 4 blocks of 4 columns) then cover the 32 banks once each.
template <int WN, int lanes_down>
struct StagedStores {
    static_assert(WN == 16 || WN == 32, "a patch row is 16 or 32 columns");
    static constexpr int rows = lanes_down;  // a warp's lanes down: 8 rows of C per acc row
    static constexpr int stride = WN % 32 == 16 ? WN : WN + 16;
    static constexpr int rows_per_store = 32 / WN;  // the patch rows one store instruction covers
    using Patch = float[rows * stride];
};

// Block (256); grid (N / BN, M / BM, splits), rounded up, y capped by gpu::grid_rows (the
// rows loop). The structure of gemm.cu's gemm_double_buffer_kernel, with GatherLoaders for its
// TileLoaders and `store` for its epilogue, called through StagedStores' patches.
template <int BM, int BN, int BK, int WM, int WN, typename OperandA, typename OperandB,
          typename Store>
__global__ void __launch_bounds__(threads, 2)
    implicit_gemm_kernel(GemmSize size, OperandA a, OperandB b, Store store) {
    using Tile = WarpTile<BM, BN, WM, WN>;
    using LoaderA = GatherLoader<OperandA, BM, BK>;
    using LoaderB = GatherLoader<OperandB, BN, BK>;
    using Staged = StagedStores<WN, Tile::lanes_down>;
    union SharedMemory {
        struct {
            float A[2][BK][BM + pad];
            float B[2][BK][BN + pad];
        } tiles;                                       // during the multiply
        typename Staged::Patch patches[threads / 32];  // during the stores, one per warp
    };
    static_assert(sizeof(typename Staged::Patch) * (threads / 32) <=
                      2 * BK * (BM + BN + 2 * pad) * sizeof(float),
                  "the patches fit in the tiles' memory");
    alignas(16) __shared__ SharedMemory shared;
    auto& As = shared.tiles.A;
    auto& Bs = shared.tiles.B;
    const Tile tile(threadIdx.x);
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    const int col0 = int(blockIdx.x) * BN, split = int(blockIdx.z);
    const int l_begin = split * size.l_per_split;
    const int l_end = size.L - l_begin < size.l_per_split ? size.L : l_begin + size.l_per_split;
    const LoaderB b_loader(b, size.N, col0, threadIdx.x);

    for (int row0 = int(blockIdx.y) * BM; row0 < size.M; row0 += int(gridDim.y) * BM) {
        const LoaderA a_loader(a, size.M, row0, threadIdx.x);
        float acc[Tile::TM][Tile::TN] = {};
        float a_next[LoaderA::count], b_next[LoaderB::count];
        __syncthreads();  // the previous row's last multiply and stores are done with shared memory
        a_loader.fetch(a, l_begin, l_end, a_next);
        b_loader.fetch(b, l_begin, l_end, b_next);
        a_loader.store(a_next, As[0]);
        b_loader.store(b_next, Bs[0]);
        __syncthreads();

        int stage = 0;
        for (int l0 = l_begin; l0 < l_end; l0 += BK) {
            const bool has_next = l0 + BK < l_end;
            if (has_next) {
                a_loader.fetch(a, l0 + BK, l_end, a_next);
                b_loader.fetch(b, l0 + BK, l_end, b_next);
            }
            tile.template multiply<BK>(As[stage], Bs[stage], acc);
            if (has_next) {
                a_loader.store(a_next, As[1 - stage]);
                b_loader.store(b_next, Bs[1 - stage]);
            }
            __syncthreads();
            stage = 1 - stage;
        }

        // Row i of every lane's acc is 8 rows of C, tile.row(i) for lanes_down lanes, each
        // WN columns wide: this lane's 4-column blocks go to patch row lane / lanes_across.
        float* patch = shared.patches[warp];
        const int patch_row = lane / Tile::lanes_across, patch_col = lane % Tile::lanes_across * 4;
        const int warp_col = col0 + tile.col(0) - patch_col;  // C's column of the patch's column 0
        // Unrolled: with a run-time i, acc[i] would send acc to local memory (ptxas, sm_90: a
        // 256-byte stack frame for 128 x 128 tiles).
#pragma unroll
        for (int i = 0; i < Tile::TM; ++i) {
#pragma unroll
            for (int j = 0; j < Tile::TN; j += 4)
                *reinterpret_cast<float4*>(
                    &patch[patch_row * Staged::stride + patch_col + j / 4 * Tile::step_n]) =
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            __syncwarp();  // the whole patch is written
            // C's row of patch row r is the row that lane r * lanes_across holds in acc[i].
            const int warp_row = row0 + tile.row(i) - patch_row * 4;
#pragma unroll
            for (int r0 = 0; r0 < Staged::rows; r0 += Staged::rows_per_store) {
                const int r = r0 + lane / WN, c = lane % WN;
                const int m = warp_row + r * 4, n = warp_col + c;
                if (m < size.M && n < size.N) store(m, n, split, patch[r * Staged::stride + c]);
            }
            __syncwarp();  // the patch is read before row i + 1 overwrites it
        }
    }
}

template <int BM, int BN, int BK, int WM, int WN, typename A, typename B, typename Store>
void launch(const GemmSize& size, int splits, const A& a, const B& b, const Store& store) {
    const dim3 grid(unsigned(ceil_div(size.N, BN)), gpu::grid_rows(ceil_div(size.M, BM)),
                    unsigned(splits));
    gpu::launch(implicit_gemm_kernel<BM, BN, BK, WM, WN, A, B, Store>, grid, dim3(threads), 0, size,
                a, b, store);
}

// The tile shapes: 32 x 128 for a C of 32 rows or fewer (LeNet's 6 and 16 filters would leave
// most of a 128-row tile empty), else 128 x 128 when those tiles give every SM a block, else
// 64 x 64. Every thread adds its terms in l order whatever the tile, so the tile changes no bit.
// ptxas -v for sm_90 (build/kernel_resources): 93 to 113 registers and no spills for 32 x 128 and
// 64 x 64; 128 x 128 hits the 128-register bound of __launch_bounds__(256, 2), without spills for
// the forward and backward-data passes, with 76 bytes per thread for the weights' (the gathers'
// Points and Divisors next to 64 accumulators).
template <typename A, typename B, typename Store>
void implicit_gemm(const GemmSize& size, int splits, const A& a, const B& b, const Store& store) {
    static const int multiprocessors = gpu::info().multiprocessors;
    if (size.M <= 32)
        launch<32, 128, 8, 32, 16>(size, splits, a, b, store);
    else if (std::int64_t(ceil_div(size.M, 128)) * ceil_div(size.N, 128) * splits >=
             multiprocessors)
        launch<128, 128, 8, 64, 32>(size, splits, a, b, store);
    else
        launch<64, 64, 16, 32, 16>(size, splits, a, b, store);
}

// The GEMM's indices are 32-bit (cheaper arithmetic, and Divisor's range): a pass takes as many
// images at a time as keep its extents under index_limit, at least one. Each image's own
// extents (C*R*S, H*W, P*Q times one image) must fit too: a single image of 2^31 values. The
// headroom covers l0 + BK, i0 + BMN and the loop over rows of C beyond the grid, whose last step
// adds gridDim.y * BM (at most 65535 x 128) to a row below M.
constexpr std::int64_t index_limit = INT_MAX - gpu::max_grid_rows * 128 - 1024;

std::int64_t images_per_pass(const Conv2dShape& s, std::int64_t per_image) {
    const std::int64_t taps = s.C * s.R * s.S, weights = s.K * taps;
    const std::int64_t outputs = s.P() * s.Q();  // P, Q < 2^31 (Conv2dShape::validate)
    if (per_image > index_limit || taps > index_limit || s.K * s.R * s.S > index_limit ||
        s.C * s.H * s.W > index_limit || weights > index_limit || outputs > index_limit ||
        s.K * outputs > index_limit)
        throw Unsupported("conv2d implicit_gemm: " + s.str() +
                          " has more than 2^31 elements in one image or filter bank; use im2col");
    return std::clamp<std::int64_t>(index_limit / per_image, 1, s.N);
}

// How the weights' reduction (every output of the batch) is split over blocks: into pieces of
// a whole number of BK = 16 steps, at least min_split_terms long, as many as bring the grid to
// about split_target_blocks blocks of 64 x 64 tiles. It depends on the shape only, so the sums
// add in the same order on every GPU.
constexpr std::int64_t split_target_blocks = 512;
constexpr std::int64_t min_split_terms = 1024;
int split_length(std::int64_t M, std::int64_t N, std::int64_t L) {
    const std::int64_t tiles = ceil_div<std::int64_t>(M, 64) * ceil_div<std::int64_t>(N, 64);
    const std::int64_t splits = std::clamp<std::int64_t>(
        split_target_blocks / tiles, 1, std::max<std::int64_t>(1, L / min_split_terms));
    return int(ceil_div<std::int64_t>(ceil_div<std::int64_t>(L, splits), 16) * 16);
}

}  // namespace

void conv2d_forward_implicit_gemm(const Conv2dShape& s, const float* x, const float* w,
                                  const float* b, float* y) {
    const std::int64_t PQ = s.P() * s.Q(), taps = s.C * s.R * s.S;
    const std::int64_t step = images_per_pass(s, PQ);
    const Geometry g(s);
    for (std::int64_t n0 = 0; n0 < s.N; n0 += step) {
        const int images = int(std::min(step, s.N - n0));
        const GemmSize size{int(s.K), int(images * PQ), int(taps), int(taps)};
        implicit_gemm(size, 1, FilterRows{w, int(taps)}, Patches{x + n0 * s.C * s.H * s.W, g},
                      OutputStore{y + n0 * s.K * PQ, b, int(s.K), Divisor(int(PQ))});
    }
}

void conv2d_backward_data_implicit_gemm(const Conv2dShape& s, const float* dy, const float* w,
                                        float* dx) {
    const std::int64_t HW = s.H * s.W, PQ = s.P() * s.Q(), terms = s.K * s.R * s.S;
    const std::int64_t step = images_per_pass(s, HW);
    const Geometry g(s);
    for (std::int64_t n0 = 0; n0 < s.N; n0 += step) {
        const int images = int(std::min(step, s.N - n0));
        const GemmSize size{int(s.C), int(images * HW), int(terms), int(terms)};
        implicit_gemm(size, 1, FilterColumns{w, int(s.C), Divisor(int(s.R * s.S))},
                      DilatedGradient{dy + n0 * s.K * PQ, g},
                      InputGradientStore{dx + n0 * s.C * HW, int(s.C), Divisor(int(HW))});
    }
}

void conv2d_backward_weights_implicit_gemm(const Conv2dShape& s, const float* x, const float* dy,
                                           float* dw) {
    const std::int64_t PQ = s.P() * s.Q(), taps = s.C * s.R * s.S, weights = s.K * taps;
    const std::int64_t step = images_per_pass(s, PQ);
    const Geometry g(s);
    for (std::int64_t n0 = 0; n0 < s.N; n0 += step) {
        const int images = int(std::min(step, s.N - n0));
        const int L = int(images * PQ);
        const int l_per_split = split_length(s.K, taps, L);
        const int splits = int(ceil_div<std::int64_t>(L, l_per_split));
        // With one split and one pass the GEMM writes dw itself; otherwise its partial sums, which
        // sum_splits adds in split order (and onto the earlier passes' dw).
        const bool direct = splits == 1 && step >= s.N;
        float* partial = direct ? dw : gpu::workspace(splits * weights);
        const GemmSize size{int(s.K), int(taps), L, l_per_split};
        implicit_gemm(size, splits, GradientRows{dy + n0 * s.K * PQ, int(s.K), Divisor(int(PQ))},
                      PatchColumns{x + n0 * s.C * s.H * s.W, g},
                      WeightStore{partial, int(taps), weights});
        if (!direct) sum_splits(weights, splits, partial, dw, /*accumulate=*/n0 > 0);
    }
}

}  // namespace triptych::gpu_tiled
