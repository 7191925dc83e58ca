// gpu_tiled pooling (semantics: cpu/naive/pool2d.hpp and Pool2dShape):
//   max_pool2d_forward   x (N, C, H, W) -> y, argmax (N, C, P, Q)
//   max_pool2d_backward  dy, argmax     -> dx (N, C, H, W)
//   avg_pool2d_forward   x              -> y
//   avg_pool2d_backward  dy             -> dx
//
// version 2 (version 1 is gpu/naive/pool2d.cu, version 3 pool2d_v3_unrolled.cu). Every kernel gives
// a block of 16 x 16 threads a 16 x 16 tile of one (n, c) plane: of y in the forward kernels, of dx
// in the backward ones. Blocks cover the tiles of a plane along grid.x and the planes along grid.y.
//   pool2d_forward_kernel<pool>: the windows of a tile of outputs cover an input region of
//     (16 - 1) * stride + window rows and as many columns (the tile and its halo: 33 x 33 inputs
//     for 3x3 windows with stride 2). The block loads that region into shared memory once,
//     consecutive threads reading consecutive floats (coalesced), then each thread reduces its
//     window out of shared memory. Version 1 read every window from global memory, a warp's loads
//     stride_w floats apart, and loaded each input shared by overlapping windows up to four times.
//     A region too large for 48 KB of shared memory (windows of about 100 x 100) is read from
//     global memory as in version 1: correct, not fast, for a shape no network uses.
//   max_pool2d_backward_kernel, avg_pool2d_backward_kernel: a *gather*, one thread per dx element.
//     It visits the windows that cover its element (at most ceil(window_h / stride_h) x
//     ceil(window_w / stride_w) of them) in (p, q) order and adds dy of each window whose argmax is
//     this element (max), or dy / count (average). Each dx element has one writer: no atomics, no
//     pass to zero dx, and the same order of additions on every run (the same bits; version 1's
//     atomic scatter adds in whatever order the threads arrive). The price is the index arithmetic
//     to find the covering windows, and for max, reading the argmax of windows that chose another
//     element. dy and argmax are not staged: each is read by only a few neighbouring threads,
//     which the L1 cache serves.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cstdint>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "common/pooling.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int tile = 16;  // a block covers tile x tile elements of a plane, one per thread
// The most shared memory a block may use without the opt-in attribute.
constexpr std::int64_t max_shared_bytes = 48 * 1024;

enum class Pool { max, average };

// Where a thread reads the inputs of its window: element (h, w) of the plane is
// data[(h - row0) * pitch + (w - col0)], a staged region in shared memory or the plane itself.
struct Inputs {
    const float* data;
    std::int64_t pitch, row0, col0;
    __device__ float at(std::int64_t h, std::int64_t w) const {
        return data[(h - row0) * pitch + (w - col0)];
    }
};

// Block (16, 16) computes outputs [p0, p0 + 16) x [q0, q0 + 16) of each plane it visits: thread
// (ty, tx) output (p0 + ty, q0 + tx). `staged`: load the input region into shared memory first.
// Max: ties keep the first element in row-major order (only a strictly larger one replaces it).
template <Pool pool>
__global__ void pool2d_forward_kernel(Pool2dShape s, std::int64_t P, std::int64_t Q,
                                      std::int64_t tiles_across, bool staged, const float* x,
                                      float* y, float* argmax) {
    TRIPTYCH_DYNAMIC_SHARED(float, region);
    const std::int64_t p0 = blockIdx.x / tiles_across * tile, q0 = blockIdx.x % tiles_across * tile;
    const std::int64_t p = p0 + threadIdx.y, q = q0 + threadIdx.x;
    // The input the tile's windows cover, clipped to the image: `rows` rows from row0, `cols`
    // columns from col0, from the tile's first window to that of its last output inside y.
    const PoolWindow first = pool_window(s, p0, q0);
    const PoolWindow last = pool_window(s, p0 + tile < P ? p0 + tile - 1 : P - 1,
                                        q0 + tile < Q ? q0 + tile - 1 : Q - 1);
    const std::int64_t row0 = first.h0, rows = last.h1 - first.h0;
    const std::int64_t col0 = first.w0, cols = last.w1 - first.w0;

    for (std::int64_t plane = blockIdx.y; plane < s.N * s.C; plane += gridDim.y) {
        const float* in = x + plane * s.H * s.W;
        Inputs inputs{in, s.W, 0, 0};
        if (staged) {
            // Consecutive threads copy consecutive floats of a row of the region.
            for (std::int64_t i = threadIdx.y * tile + threadIdx.x; i < rows * cols;
                 i += tile * tile)
                region[i] = in[(row0 + i / cols) * s.W + col0 + i % cols];
            inputs = Inputs{region, cols, row0, col0};
        }
        __syncthreads();  // the region is complete
        // No early return outside y: every thread must reach the barriers.
        if (p < P && q < Q) {
            const PoolWindow win = pool_window(s, p, q);
            const std::int64_t out = (plane * P + p) * Q + q;
            if constexpr (pool == Pool::max) {
                std::int64_t best_h = win.h0, best_w = win.w0;
                float best = inputs.at(best_h, best_w);
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w)
                        if (replaces_max(inputs.at(h, w), best)) {
                            best = inputs.at(h, w);
                            best_h = h;
                            best_w = w;
                        }
                y[out] = best;
                argmax[out] = float(best_h * s.W + best_w);
            } else {
                float total = 0.0f;
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w) total += inputs.at(h, w);
                y[out] = total / float(win.count());
            }
        }
        __syncthreads();  // everyone is done reading before the next plane overwrites the region
    }
}

// Thread (ty, tx) of block (16, 16) owns dx[plane, h0 + ty, w0 + tx] for the planes it visits;
// the tile's corner comes from blockIdx.x (tiles_across tiles per row of tiles).
struct InputElement {
    std::int64_t h, w;
    bool inside;
};

__device__ InputElement input_element(const Pool2dShape& s, std::int64_t tiles_across) {
    const std::int64_t h = blockIdx.x / tiles_across * tile + threadIdx.y;
    const std::int64_t w = blockIdx.x % tiles_across * tile + threadIdx.x;
    return {h, w, h < s.H && w < s.W};
}

// dx[h, w] = the sum, over the windows (p, q) covering (h, w) whose argmax is h * W + w, of
// dy[p, q], in (p, q) order: the order in which the reference adds them.
__global__ void max_pool2d_backward_kernel(Pool2dShape s, std::int64_t P, std::int64_t Q,
                                           std::int64_t tiles_across, const float* dy,
                                           const float* argmax, float* dx) {
    const InputElement e = input_element(s, tiles_across);
    if (!e.inside) return;
    const Covering rows = covering(e.h, s.window_h, s.stride_h, s.pad_h, P);
    const Covering cols = covering(e.w, s.window_w, s.stride_w, s.pad_w, Q);
    const float index = float(e.h * s.W + e.w);
    for (std::int64_t plane = blockIdx.y; plane < s.N * s.C; plane += gridDim.y) {
        const std::int64_t outputs = plane * P * Q;
        float sum = 0.0f;
        for (std::int64_t p = rows.first; p <= rows.last; ++p)
            for (std::int64_t q = cols.first; q <= cols.last; ++q)
                if (argmax[outputs + p * Q + q] == index) sum += dy[outputs + p * Q + q];
        dx[(plane * s.H + e.h) * s.W + e.w] = sum;
    }
}

// dx[h, w] = the sum of dy[p, q] / count(p, q) over the windows (p, q) covering (h, w).
__global__ void avg_pool2d_backward_kernel(Pool2dShape s, std::int64_t P, std::int64_t Q,
                                           std::int64_t tiles_across, const float* dy, float* dx) {
    const InputElement e = input_element(s, tiles_across);
    if (!e.inside) return;
    const Covering rows = covering(e.h, s.window_h, s.stride_h, s.pad_h, P);
    const Covering cols = covering(e.w, s.window_w, s.stride_w, s.pad_w, Q);
    for (std::int64_t plane = blockIdx.y; plane < s.N * s.C; plane += gridDim.y) {
        const std::int64_t outputs = plane * P * Q;
        float sum = 0.0f;
        for (std::int64_t p = rows.first; p <= rows.last; ++p)
            for (std::int64_t q = cols.first; q <= cols.last; ++q) {
                const PoolWindow win = pool_window(s, p, q);
                sum += dy[outputs + p * Q + q] / float(win.count());
            }
        dx[(plane * s.H + e.h) * s.W + e.w] = sum;
    }
}

// The launch geometry of a tile-per-block kernel over a rows x cols plane: blocks of 16 x 16
// threads, grid.x the tiles of a plane, grid.y the planes (at most 65535; kernels loop past it).
struct PlaneTiles {
    std::int64_t across;  // tiles per row of tiles: blockIdx.x = tile_row * across + tile_col
    dim3 grid, block;
};

PlaneTiles plane_tiles(const Pool2dShape& s, std::int64_t rows, std::int64_t cols) {
    const std::int64_t across = ceil_div<std::int64_t>(cols, tile);
    const std::int64_t down = ceil_div<std::int64_t>(rows, tile);
    return {across, dim3(unsigned(across * down), gpu::grid_rows(s.N * s.C)), dim3(tile, tile)};
}

template <Pool pool>
void pool2d_forward(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    const PlaneTiles tiles = plane_tiles(s, s.P(), s.Q());
    const std::int64_t region_floats =
        ((tile - 1) * s.stride_h + s.window_h) * ((tile - 1) * s.stride_w + s.window_w);
    const bool staged = region_floats * std::int64_t(sizeof(float)) <= max_shared_bytes;
    gpu::launch(pool2d_forward_kernel<pool>, tiles.grid, tiles.block,
                staged ? region_floats * sizeof(float) : 0, s, s.P(), s.Q(), tiles.across, staged,
                x, y, argmax);
}

void max_pool2d_forward(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    pool2d_forward<Pool::max>(s, x, y, argmax);
}

void max_pool2d_backward(const Pool2dShape& s, const float* dy, const float* argmax, float* dx) {
    const PlaneTiles tiles = plane_tiles(s, s.H, s.W);
    gpu::launch(max_pool2d_backward_kernel, tiles.grid, tiles.block, 0, s, s.P(), s.Q(),
                tiles.across, dy, argmax, dx);
}

// Average pooling has no argmax: the kernel gets nullptr and never writes it.
void avg_pool2d_forward(const Pool2dShape& s, const float* x, float* y) {
    pool2d_forward<Pool::average>(s, x, y, nullptr);
}

void avg_pool2d_backward(const Pool2dShape& s, const float* dy, float* dx) {
    const PlaneTiles tiles = plane_tiles(s, s.H, s.W);
    gpu::launch(avg_pool2d_backward_kernel, tiles.grid, tiles.block, 0, s, s.P(), s.Q(),
                tiles.across, dy, dx);
}

// Registers version 2 of an op; version 3 (pool2d_v3_unrolled.cu) is the default.
template <typename Signature>
bool register_version_2(OpKey<Signature> op, VersionOf<Signature> version) {
    return register_kernels("gpu_tiled", op, {std::move(version)}, no_default_version);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_version_2(
        ops::max_pool2d_forward,
        {2, "shared_tile", "a tile of the input and its halo staged in shared memory",
         max_pool2d_forward}) &&
    register_version_2(
        ops::max_pool2d_backward,
        {2, "gather", "each input gathers the outputs whose argmax it is: no atomics",
         max_pool2d_backward}) &&
    register_version_2(
        ops::avg_pool2d_forward,
        {2, "shared_tile", "a tile of the input and its halo staged in shared memory",
         avg_pool2d_forward}) &&
    register_version_2(ops::avg_pool2d_backward,
                       {2, "gather", "each input gathers the windows that cover it: no atomics",
                        avg_pool2d_backward});

}  // namespace triptych::gpu_tiled
