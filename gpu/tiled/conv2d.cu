// gpu_tiled conv2d: the three passes by the direct algorithm, and the dispatch to conv_im2col.cu
// and conv_fft.cu for the other two. Shapes and math as in cpu/naive/conv2d.hpp:
//   x and dx (N, C, H, W), w and dw (K, C, R, S), b and db (K), y and dy (N, K, P, Q).
// In the kernels (h, col) is a position in x: w names the filters.
//
// version 2, direct (lesson 08; version 1 is gpu/naive/conv2d.cu, one thread per output reading
// everything from global memory):
//   conv2d_forward_kernel: a block of T x T threads computes a T x T tile of outputs for
//     filters_per_block filters of one image. Per input channel it stages in shared memory the
//     input the tile reads, the tile plus its halo ((T-1)*stride + R rows), and the filters'
//     weights for that channel; every staged input is then used by up to R*S outputs and
//     filters_per_block filters instead of being loaded by each of them (PMPP ch. 7 and 16).
//     Each thread keeps one accumulator per filter in registers; the 8 weights it needs per tap
//     sit side by side in shared memory and come in two 16-byte loads (multiply_add). The tile's
//     rows lie a pitch apart that puts the two rows a warp reads in different banks
//     (forward_tile_pitch); at stride 1, without it, every read of the tile by a filter wider
//     than one tap is a 2-way bank conflict. The dy tile of backward data likewise.
//   conv2d_backward_data_kernel: the same tiling for dx. Backward data is itself a convolution:
//     dx[n, c, h, w] = sum_{k, r, s} dy_dilated[n, k, h + pad_h - r, w + pad_w - s] * w[k, c, r, s]
//     where dy_dilated holds dy[p, q] at (p * stride_h, q * stride_w) and zeros in between and
//     around. Each dx element *gathers* its terms, so it has one writer: no atomics, the same
//     order of additions on every run. (The scatter of the reference, each dy * w term added to
//     the dx it came from, would have many threads adding to one dx element: atomicAdd, slower
//     and a different rounding on every run.) The tile stages dy_dilated, whose halo is R - 1
//     whatever the stride; for stride > 1 most of it is zeros, multiplied anyway: uniform work
//     without branches, no slower in a warp than threads skipping the taps that miss.
//   conv2d_backward_weights_kernel: each weight is a sum over N x P x Q terms, a reduction: one
//     warp per weight and group of images, its lanes striding over (n, p, q) (coalesced reads of
//     dy), then warp_sum (block_reduce.hpp); a layer with few weights splits the images into
//     groups, so that enough warps run, and sum_weight_splits_kernel adds the groups' sums.
//     conv2d_backward_bias_kernel: db the same way, a block per filter and block_sum. Both add in a
//     fixed order: the same bits on every run. Each weight re-reads its slices of x and dy (from
//     cache, mostly); im2col turns this pass into a GEMM that tiles them.
// Filters larger than filter_chunk x filter_chunk are staged a chunk of taps at a time, so any
// filter fits in shared memory; large strides shrink the forward tile (forward_tile).
//
// version 3, im2col (lesson 09): conv_im2col.cu. version 4, implicit GEMM (lesson 09):
// conv_implicit_gemm.cu. fft (lesson 10): conv_fft.cu. The bias gradient is the same for every
// algorithm but fft; it is computed here for direct, im2col and implicit GEMM.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cstdint>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/tiled/block_reduce.hpp"
#include "gpu/tiled/conv_fft.hpp"
#include "gpu/tiled/conv_im2col.hpp"
#include "gpu/tiled/conv_implicit_gemm.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int filter_chunk = 16;       // filter taps staged per step, along R and along S
constexpr int filters_per_block = 8;   // forward: outputs (one per filter) per thread
constexpr int channels_per_block = 8;  // backward data: dx channels per thread
constexpr int max_tile_side = 16;      // 16 x 16 = 256 threads per block
constexpr std::size_t max_shared_bytes = 48 * 1024;  // the limit without an opt-in attribute
constexpr int weights_per_block = 8;                 // backward weights: a warp per weight
constexpr int bias_threads = 256;                    // backward bias: a block per filter
constexpr int banks = 32;                            // shared memory: 32 banks of 4 bytes
constexpr int warp_lanes = 32;                       // forward_tile_pitch counts one warp

// The taps staged in one step when `taps` remain along a filter dimension: all, up to
// filter_chunk.
__host__ __device__ inline std::int64_t staged_taps(std::int64_t taps) {
    return taps < filter_chunk ? taps : filter_chunk;
}

// acc[j] += value * weights[j] for one tap's weights of the block's 8 filters (forward) or
// channels (backward data), stored side by side: two 16-byte shared loads instead of eight 4-byte
// ones. weights must be 16-byte aligned.
template <int count>
__device__ inline void multiply_add(float value, const float* weights, float (&acc)[count]) {
    static_assert(count % 4 == 0, "weights are read as float4s");
#pragma unroll
    for (int g = 0; g < count / 4; ++g) {
        const float4 w4 = reinterpret_cast<const float4*>(weights)[g];
        acc[4 * g + 0] += value * w4.x;
        acc[4 * g + 1] += value * w4.y;
        acc[4 * g + 2] += value * w4.z;
        acc[4 * g + 3] += value * w4.w;
    }
}

// ---- forward ------------------------------------------------------------------------------

// The forward kernel's shared memory: the input tile for a side x side output tile, rows x cols
// floats stored `pitch` floats apart (forward_tile_pitch) and rounded up to a multiple of 4 (so
// that the weights after it are 16-byte aligned), then the weights of filters_per_block filters
// for one chunk of taps.
__host__ __device__ inline std::int64_t forward_tile_rows(const Conv2dShape& s, int side) {
    return std::int64_t(side - 1) * s.stride_h + staged_taps(s.R);
}
__host__ __device__ inline std::int64_t forward_tile_cols(const Conv2dShape& s, int side) {
    return std::int64_t(side - 1) * s.stride_w + staged_taps(s.S);
}
__host__ __device__ inline std::int64_t forward_input_floats(const Conv2dShape& s, int side,
                                                             int pitch) {
    return (forward_tile_rows(s, side) * pitch + 3) / 4 * 4;
}

std::size_t forward_shared_bytes(const Conv2dShape& s, int side, int pitch) {
    const std::int64_t filter_floats = filters_per_block * staged_taps(s.R) * staged_taps(s.S);
    return sizeof(float) * std::size_t(forward_input_floats(s, side, pitch) + filter_floats);
}

// The distance between two rows of the input tile in shared memory: from cols up, the first for
// which a warp's reads of the tile take the fewest wavefronts (lesson 03's padding column, found
// by counting), among those that fit in shared memory. Thread (tx, ty) reads row
// ty * stride_h + rr, column tx * stride_w + ss, so a warp of 16 x 16 threads reads two rows of
// the tile stride_h rows apart. At stride 1 with a pitch of cols (20 for 5 x 5 filters) the
// second half-warp's words 20..35 share banks 0..3 with the first half-warp's 0..15: two
// wavefronts for every read of the multiply-add loop. A pitch of 48 moves them to banks 16..31.
// Every warp and tap reads the same pattern shifted, so the first warp's read of tap (0, 0)
// stands for all of them.
int forward_tile_pitch(const Conv2dShape& s, int side) {
    const int cols = int(forward_tile_cols(s, side));
    int best_pitch = cols, fewest_wavefronts = warp_lanes + 1;
    for (int pitch = cols; pitch < cols + banks; ++pitch) {
        if (forward_shared_bytes(s, side, pitch) > max_shared_bytes) break;
        int words_in_bank[banks] = {};  // each thread reads a word of its own
        for (int thread = 0; thread < warp_lanes && thread < side * side; ++thread) {
            const std::int64_t word =
                thread / side * s.stride_h * pitch + thread % side * s.stride_w;
            ++words_in_bank[word % banks];
        }
        const int wavefronts = *std::max_element(words_in_bank, words_in_bank + banks);
        if (wavefronts < fewest_wavefronts) {
            fewest_wavefronts = wavefronts;
            best_pitch = pitch;
        }
    }
    return best_pitch;
}

// The output tile side: 16, unless the stride makes the input tile too large for shared memory
// (from stride 6 with 16 x 16 filters, stride 8 with 3 x 3); then halved until it fits. Side 1
// always fits: at most 16 x 16 inputs and 8 x 16 x 16 weights. The pitch is chosen after the
// side, among the pitches that fit.
struct ForwardTile {
    int side;
    int pitch;
};
ForwardTile forward_tile(const Conv2dShape& s) {
    const auto fits = [&](int side) {
        // A row wider than shared memory first: the pitch is an int, and the size's product
        // must not overflow.
        return forward_tile_cols(s, side) <= std::int64_t(max_shared_bytes / sizeof(float)) &&
               forward_shared_bytes(s, side, int(forward_tile_cols(s, side))) <= max_shared_bytes;
    };
    int side = max_tile_side;
    while (side > 1 && !fits(side)) side /= 2;
    return {side, forward_tile_pitch(s, side)};
}

// Block (T, T), T = forward_tile(shape).side; grid (tiles_q * tiles_p * filter groups, images).
// Thread (tx, ty) computes y[n, k0 + j, p0 + ty, q0 + tx] for j < filters_per_block. Images beyond
// gpu::max_grid_rows are covered by the loop over n. pitch: forward_tile(shape).pitch.
__global__ void conv2d_forward_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                                      std::int64_t tiles_p, std::int64_t tiles_q, int pitch,
                                      const float* x, const float* w, const float* b, float* y) {
    TRIPTYCH_DYNAMIC_SHARED(float, shared);
    const int side = blockDim.x, tx = threadIdx.x, ty = threadIdx.y;
    const int thread = ty * side + tx, threads = side * side;
    const std::int64_t tile_q = blockIdx.x % tiles_q, tile_p = blockIdx.x / tiles_q % tiles_p;
    const std::int64_t k0 = blockIdx.x / (tiles_q * tiles_p) * filters_per_block;
    const std::int64_t p0 = tile_p * side, q0 = tile_q * side;
    float* input_tile = shared;  // the layout of forward_shared_bytes
    float* filter_tile = shared + forward_input_floats(shape, side, pitch);

    for (std::int64_t n = blockIdx.y; n < shape.N; n += gridDim.y) {
        float acc[filters_per_block] = {};
        for (std::int64_t c = 0; c < shape.C; ++c)
            for (std::int64_t r0 = 0; r0 < shape.R; r0 += filter_chunk)
                for (std::int64_t s0 = 0; s0 < shape.S; s0 += filter_chunk) {
                    const int taps_r = int(staged_taps(shape.R - r0)),
                              taps_s = int(staged_taps(shape.S - s0));
                    // Input row h0 + i of the tile is read by output row p0 + ty through tap
                    // r0 + rr when i = ty * stride_h + rr.
                    const int rows = (side - 1) * int(shape.stride_h) + taps_r;
                    const int cols = (side - 1) * int(shape.stride_w) + taps_s;
                    const std::int64_t h0 = p0 * shape.stride_h + r0 - shape.pad_h;
                    const std::int64_t col0 = q0 * shape.stride_w + s0 - shape.pad_w;
                    __syncthreads();  // the previous step's readers are done with the tiles
                    // Consecutive threads load consecutive columns of a row: coalesced. Outside
                    // the image (the padding) the tile holds 0.
                    for (int i = thread; i < rows * cols; i += threads) {
                        const int row = i / cols, column = i % cols;
                        const std::int64_t h = h0 + row, col = col0 + column;
                        const bool inside = h >= 0 && h < shape.H && col >= 0 && col < shape.W;
                        input_tile[row * pitch + column] =
                            inside ? x[((n * shape.C + c) * shape.H + h) * shape.W + col] : 0.0f;
                    }
                    // filter_tile[rr][ss][j] = w[k0 + j, c, r0 + rr, s0 + ss], 0 past the last
                    // filter.
                    const int taps = taps_r * taps_s;
                    for (int i = thread; i < filters_per_block * taps; i += threads) {
                        const int j = i / taps, tap = i % taps, rr = tap / taps_s,
                                  ss = tap % taps_s;
                        const std::int64_t k = k0 + j;
                        filter_tile[tap * filters_per_block + j] =
                            k < shape.K
                                ? w[((k * shape.C + c) * shape.R + r0 + rr) * shape.S + s0 + ss]
                                : 0.0f;
                    }
                    __syncthreads();
                    // Neighbouring threads read neighbouring inputs (stride_w apart), and the
                    // pitch puts a warp's two rows in different banks; every thread reads the
                    // same weights at once (a broadcast, no bank conflict).
                    for (int rr = 0; rr < taps_r; ++rr)
                        for (int ss = 0; ss < taps_s; ++ss) {
                            const float in = input_tile[(ty * int(shape.stride_h) + rr) * pitch +
                                                        tx * int(shape.stride_w) + ss];
                            multiply_add(in, filter_tile + (rr * taps_s + ss) * filters_per_block,
                                         acc);
                        }
                }
        // Threads past the edge of y computed values nobody needs; they only skip the store
        // (they had to reach every barrier above).
        const std::int64_t p = p0 + ty, q = q0 + tx;
        if (p >= P || q >= Q) continue;
#pragma unroll
        for (int j = 0; j < filters_per_block; ++j) {
            const std::int64_t k = k0 + j;
            if (k < shape.K) y[((n * shape.K + k) * P + p) * Q + q] = acc[j] + b[k];
        }
    }
}

// ---- backward data ---------------------------------------------------------------------------

constexpr int data_tile_side = 16;
constexpr int data_tile_span = data_tile_side + filter_chunk - 1;  // tile + halo, per side
// The distance between two rows of the dy tile: a warp reads two rows of it, one apart, 16
// consecutive words each (the dilated dy has stride 1). A pitch of 16 mod 32 puts the second row
// in the banks the first does not use (forward_tile_pitch finds the same for stride 1); the
// smallest such pitch that holds data_tile_span columns is 48.
constexpr int data_tile_pitch = 48;
static_assert(data_tile_pitch >= data_tile_span && data_tile_pitch % banks == banks / 2);

// Block (16, 16); grid (tiles_w * tiles_h * channel groups, images). Thread (tx, ty) computes
// dx[n, c0 + j, h0 + ty, col0 + tx] for j < channels_per_block.
__global__ void conv2d_backward_data_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                                            std::int64_t tiles_h, std::int64_t tiles_w,
                                            const float* dy, const float* w, float* dx) {
    // The halo depends on the filter chunk only (not the stride), so static sizes fit every
    // shape: 31 rows of 48 floats + 8 x 16 x 16 floats, 14 KiB.
    __shared__ float dy_tile[data_tile_span * data_tile_pitch];
    alignas(16) __shared__ float filter_tile[filter_chunk * filter_chunk * channels_per_block];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int thread = ty * data_tile_side + tx, threads = data_tile_side * data_tile_side;
    const std::int64_t tile_w = blockIdx.x % tiles_w, tile_h = blockIdx.x / tiles_w % tiles_h;
    const std::int64_t c0 = blockIdx.x / (tiles_w * tiles_h) * channels_per_block;
    const std::int64_t h0 = tile_h * data_tile_side, col0 = tile_w * data_tile_side;

    for (std::int64_t n = blockIdx.y; n < shape.N; n += gridDim.y) {
        float acc[channels_per_block] = {};
        for (std::int64_t k = 0; k < shape.K; ++k)
            for (std::int64_t r0 = 0; r0 < shape.R; r0 += filter_chunk)
                for (std::int64_t s0 = 0; s0 < shape.S; s0 += filter_chunk) {
                    const int taps_r = int(staged_taps(shape.R - r0)),
                              taps_s = int(staged_taps(shape.S - s0));
                    const int rows = data_tile_side + taps_r - 1;
                    const int cols = data_tile_side + taps_s - 1;
                    // Thread (tx, ty) reads dilated row h0 + ty + pad_h - (r0 + rr) for its tap
                    // r0 + rr, which tile row i = ty + taps_r - 1 - rr holds (row t_h0 + i).
                    const std::int64_t t_h0 = h0 + shape.pad_h - (r0 + taps_r - 1);
                    const std::int64_t t_w0 = col0 + shape.pad_w - (s0 + taps_s - 1);
                    __syncthreads();  // the previous step's readers are done with both tiles
                    for (int i = thread; i < rows * cols; i += threads) {
                        const int row = i / cols, column = i % cols;
                        const std::int64_t t_h = t_h0 + row, t_w = t_w0 + column;
                        // A dilated position holds a dy value when it is a multiple of the
                        // stride inside the output; 0 otherwise.
                        const bool on_grid = t_h >= 0 && t_w >= 0 && t_h % shape.stride_h == 0 &&
                                             t_w % shape.stride_w == 0;
                        const std::int64_t p = t_h / shape.stride_h, q = t_w / shape.stride_w;
                        dy_tile[row * data_tile_pitch + column] =
                            on_grid && p < P && q < Q ? dy[((n * shape.K + k) * P + p) * Q + q]
                                                      : 0.0f;
                    }
                    // filter_tile[rr][ss][j] = w[k, c0 + j, r0 + rr, s0 + ss], 0 past the last
                    // channel.
                    const int taps = taps_r * taps_s;
                    for (int i = thread; i < channels_per_block * taps; i += threads) {
                        const int j = i / taps, tap = i % taps, rr = tap / taps_s,
                                  ss = tap % taps_s;
                        const std::int64_t c = c0 + j;
                        filter_tile[tap * channels_per_block + j] =
                            c < shape.C
                                ? w[((k * shape.C + c) * shape.R + r0 + rr) * shape.S + s0 + ss]
                                : 0.0f;
                    }
                    __syncthreads();
                    for (int rr = 0; rr < taps_r; ++rr)
                        for (int ss = 0; ss < taps_s; ++ss) {
                            const float grad = dy_tile[(ty + taps_r - 1 - rr) * data_tile_pitch +
                                                       tx + taps_s - 1 - ss];
                            multiply_add(
                                grad, filter_tile + (rr * taps_s + ss) * channels_per_block, acc);
                        }
                }
        const std::int64_t h = h0 + ty, col = col0 + tx;
        if (h >= shape.H || col >= shape.W) continue;
#pragma unroll
        for (int j = 0; j < channels_per_block; ++j) {
            const std::int64_t c = c0 + j;
            if (c < shape.C) dx[((n * shape.C + c) * shape.H + h) * shape.W + col] = acc[j];
        }
    }
}

// ---- backward weights and bias -----------------------------------------------------------------

// Block (32, 8): warp ty computes, for weight number blockIdx.x * 8 + ty and the images of split
// blockIdx.y (images [n0, n1), see weight_splits),
//   partial[split, weight] = sum_{n in [n0, n1), p, q} dy[n, k, p, q] * x[n, c, h, col],
// its lanes striding over those (n, p, q) terms in order (32 consecutive dy per read), then
// warp_sum. With one split the partial is dw itself; with several, sum_weight_splits_kernel adds
// them. The 8 warps of a block take consecutive weights, mostly neighbouring taps of one filter,
// which read the same dy and overlapping x: after the first warp's loads, the others mostly hit
// in L1.
__global__ void conv2d_backward_weights_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                                               const float* x, const float* dy, float* partial) {
    // = ((k * C + c) * R + r) * S + s
    const std::int64_t weights = shape.K * shape.C * shape.R * shape.S;
    const std::int64_t weight = std::int64_t(blockIdx.x) * weights_per_block + threadIdx.y;
    if (weight >= weights) return;  // the whole warp: no barrier
    const std::int64_t s = weight % shape.S, r = weight / shape.S % shape.R;
    const std::int64_t c = weight / (shape.S * shape.R) % shape.C;
    const std::int64_t k = weight / (shape.S * shape.R * shape.C);
    const std::int64_t PQ = P * Q;
    const std::int64_t n0 = shape.N * blockIdx.y / gridDim.y;
    const std::int64_t n1 = shape.N * (blockIdx.y + 1) / gridDim.y;
    float sum = 0.0f;
    for (std::int64_t i = n0 * PQ + threadIdx.x; i < n1 * PQ; i += 32) {
        const std::int64_t n = i / PQ, p = i % PQ / Q, q = i % Q;
        const std::int64_t h = p * shape.stride_h + r - shape.pad_h;
        const std::int64_t col = q * shape.stride_w + s - shape.pad_w;
        if (h < 0 || h >= shape.H || col < 0 || col >= shape.W) continue;
        sum += dy[(n * shape.K + k) * PQ + p * Q + q] *
               x[((n * shape.C + c) * shape.H + h) * shape.W + col];
    }
    const float total = warp_sum(sum);
    if (threadIdx.x == 0) partial[blockIdx.y * weights + weight] = total;
}

// dw[weight] = the sum of the splits' partials, in split order: the same bits on every run (and
// dw's old value first, when `accumulate`).
__global__ void sum_weight_splits_kernel(std::int64_t weights, std::int64_t splits,
                                         const float* partial, float* dw, bool accumulate) {
    const std::int64_t weight = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (weight >= weights) return;
    float total = accumulate ? dw[weight] : 0.0f;
    for (std::int64_t split = 0; split < splits; ++split)
        total += partial[split * weights + weight];
    dw[weight] = total;
}

// Block (256) per filter: db[k] = sum_{n, p, q} dy[n, k, p, q]. Filters beyond the grid's
// gpu::grid_rows blocks are covered by the loop over k.
__global__ void conv2d_backward_bias_kernel(std::int64_t N, std::int64_t K, std::int64_t PQ,
                                            const float* dy, float* db) {
    for (std::int64_t k = blockIdx.x; k < K; k += gridDim.x) {
        float partial = 0.0f;
        for (std::int64_t i = threadIdx.x; i < N * PQ; i += blockDim.x)
            partial += dy[(i / PQ * K + k) * PQ + i % PQ];
        const float total = block_sum(partial);
        if (threadIdx.x == 0) db[k] = total;
    }
}

// ---- host launchers --------------------------------------------------------------------------

// How many groups of images the backward-weights pass splits the batch into. A layer with few
// weights (LeNet's first: 150) gives one warp per weight far too few warps to fill a GPU, each
// walking all N*P*Q terms alone (lessons/08_conv_direct/README.md, "On a GPU", has what that
// cost on an H200). Splitting the images gives about split_target_warps warps, each
// summing its share; a second small kernel adds the shares. The split depends on the shape only
// (and, in the simulator, TRIPTYCH_SIM_GRID_ROWS), so the additions happen in the same order on
// every run.
constexpr std::int64_t split_target_warps = 4096;
std::int64_t weight_splits(const Conv2dShape& s) {
    return std::clamp<std::int64_t>(split_target_warps / s.w_shape().elements(), 1,
                                    gpu::grid_rows(s.N));
}

unsigned image_blocks(std::int64_t N) { return gpu::grid_rows(N); }

void forward_direct(const Conv2dShape& s, const float* x, const float* w, const float* b,
                    float* y) {
    const std::int64_t P = s.P(), Q = s.Q();
    const auto [side, pitch] = forward_tile(s);
    const std::int64_t tiles_p = ceil_div<std::int64_t>(P, side);
    const std::int64_t tiles_q = ceil_div<std::int64_t>(Q, side);
    const std::int64_t groups = ceil_div<std::int64_t>(s.K, filters_per_block);
    gpu::launch(conv2d_forward_kernel,
                dim3(unsigned(tiles_p * tiles_q * groups), image_blocks(s.N)), dim3(side, side),
                forward_shared_bytes(s, side, pitch), s, P, Q, tiles_p, tiles_q, pitch, x, w, b, y);
}

void backward_data_direct(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
    const std::int64_t tiles_h = ceil_div<std::int64_t>(s.H, data_tile_side);
    const std::int64_t tiles_w = ceil_div<std::int64_t>(s.W, data_tile_side);
    const std::int64_t groups = ceil_div<std::int64_t>(s.C, channels_per_block);
    gpu::launch(
        conv2d_backward_data_kernel, dim3(unsigned(tiles_h * tiles_w * groups), image_blocks(s.N)),
        dim3(data_tile_side, data_tile_side), 0, s, s.P(), s.Q(), tiles_h, tiles_w, dy, w, dx);
}

void conv2d_forward(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x, const float* w,
                    const float* b, float* y) {
    switch (algorithm) {
        case ConvAlgorithm::direct:
            return forward_direct(s, x, w, b, y);
        case ConvAlgorithm::im2col:
            return conv2d_forward_im2col(s, x, w, b, y);
        case ConvAlgorithm::fft:
            return conv2d_forward_fft(s, x, w, b, y);
        case ConvAlgorithm::implicit_gemm:
            return conv2d_forward_implicit_gemm(s, x, w, b, y);
        case ConvAlgorithm::winograd:  // a CPU algorithm: not in conv2d_algorithms()
            break;
    }
}

void conv2d_backward_data(const Conv2dShape& s, ConvAlgorithm algorithm, const float* dy,
                          const float* w, float* dx) {
    switch (algorithm) {
        case ConvAlgorithm::direct:
            return backward_data_direct(s, dy, w, dx);
        case ConvAlgorithm::im2col:
            return conv2d_backward_data_im2col(s, dy, w, dx);
        case ConvAlgorithm::fft:
            return conv2d_backward_data_fft(s, dy, w, dx);
        case ConvAlgorithm::implicit_gemm:
            return conv2d_backward_data_implicit_gemm(s, dy, w, dx);
        case ConvAlgorithm::winograd:  // a CPU algorithm: not in conv2d_algorithms()
            break;
    }
}

void conv2d_backward_weights(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                             const float* dy, float* dw, float* db) {
    if (algorithm == ConvAlgorithm::fft) return conv2d_backward_weights_fft(s, x, dy, dw, db);
    gpu::launch(conv2d_backward_bias_kernel, dim3(gpu::grid_rows(s.K)), dim3(bias_threads), 0, s.N,
                s.K, s.P() * s.Q(), dy, db);
    if (algorithm == ConvAlgorithm::im2col) return conv2d_backward_weights_im2col(s, x, dy, dw);
    if (algorithm == ConvAlgorithm::implicit_gemm)
        return conv2d_backward_weights_implicit_gemm(s, x, dy, dw);
    const std::int64_t weights = s.w_shape().elements();
    const std::int64_t blocks = ceil_div<std::int64_t>(weights, weights_per_block);
    const std::int64_t splits = weight_splits(s);
    float* partial = splits == 1 ? dw : gpu::workspace(splits * weights);
    gpu::launch(conv2d_backward_weights_kernel, dim3(unsigned(blocks), unsigned(splits)),
                dim3(32, weights_per_block), 0, s, s.P(), s.Q(), x, dy, partial);
    if (splits > 1) sum_splits(weights, splits, partial, dw, /*accumulate=*/false);
}

}  // namespace

void sum_splits(std::int64_t count, std::int64_t splits, const float* partial, float* out,
                bool accumulate) {
    gpu::launch(sum_weight_splits_kernel, dim3(unsigned(ceil_div<std::int64_t>(count, 256))),
                dim3(256), 0, count, splits, partial, out, accumulate);
}

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::conv2d_forward,
                    {2, "shared_tile_halo",
                     "direct: a tile and its halo in shared memory; im2col + the tiled GEMM; FFT; "
                     "implicit GEMM",
                     conv2d_forward}) &&
    register_kernel("gpu_tiled", ops::conv2d_backward_data,
                    {2, "shared_tile_halo", "the same algorithms on the transposed convolution",
                     conv2d_backward_data}) &&
    register_kernel("gpu_tiled", ops::conv2d_backward_weights,
                    {2, "split_warps",
                     "direct: images split over warps, the splits added in order; im2col + the "
                     "tiled GEMM; FFT; implicit GEMM",
                     conv2d_backward_weights});

}  // namespace triptych::gpu_tiled
