// gpu_tiled pooling, version 3 (semantics: cpu/naive/pool2d.hpp and Pool2dShape):
//   max_pool2d_forward   x (N, C, H, W) -> y, argmax (N, C, P, Q)
//   max_pool2d_backward  dy, argmax     -> dx (N, C, H, W)
//   avg_pool2d_forward   x              -> y
//   avg_pool2d_backward  dy             -> dx
//
// Version 2 (pool2d.cu) staged each block's tile of inputs and its halo in shared memory. On the
// H200 it ran several times slower than version 1's thread per output (lesson 11's H200 table).
// Pooling has little to reuse: with 3x3 windows at stride 2 an input is read by at most four
// windows, and the L1 cache already serves those repeats to version 1. What a kernel that moves a
// float or two per comparison needs is bytes in flight. By Little's law, a memory system that
// delivers B bytes a second with a latency of L seconds runs at full speed only with B * L bytes
// requested and not yet arrived: on an H200, about 4.8 TB/s * 0.6 us, near 3 MB, or 22 KB per SM.
// A thread that waits for each load before it asks for the next keeps one float in flight: 2048
// threads, the most an SM holds, then ask for 8 KB at a time.
//
// So version 3 goes back to version 1's thread per output (forward) and keeps version 2's
// gather (backward, one writer per dx element, the reference's order of additions), and changes
// what each thread does:
//   - The window and stride are compiled into the kernel for the shapes networks use (2x2 at
//     stride 2, 3x3 at stride 2 and at stride 1; `Fixed`). The loops over the taps then have a
//     known trip count and unroll, and every tap loads under no condition: a tap outside the
//     image loads the nearest element of the image and then stands for the reduction's neutral
//     element, -infinity for max (which never replaces), 0 for the sum. Nine loads of a 3x3
//     window, none waiting for a comparison or behind a branch, are free to be in flight
//     together: the kernel's PTX (nvcc -ptx) has them in straight-line code. Other windows run
//     the same code with the sizes read from the shape (`Fixed<0, 0>`), as version 1 does.
//   - Indices are 32-bit, and the divisions that turn a thread's flat index into (plane, p, q)
//     are Divisors (divisor.hpp): a multiply-high and a shift each. Version 1 divides 64-bit
//     integers, for which a GPU has no instruction (the compiler emits a sequence of several
//     dozen), and its 64-bit indices take registers: version 2's forward kernel needs 64, which
//     halves the warps an SM holds; this one needs 32 (`triptych profile`'s occupancy).
//     A launch covers at most 2^31 outputs (or inputs) so that 32 bits suffice; the host splits
//     larger tensors by planes (`for_each_launch`).
// Consecutive threads take consecutive outputs of a plane (forward) or consecutive elements of dx
// (backward): a warp's stores are contiguous, its loads too apart from the stride.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "common/pooling.hpp"
#include "gpu/tiled/divisor.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int threads = 256;  // per block, one output (forward) or one element of dx (backward)
// The blocks an SM must hold for its 2048 threads, which __launch_bounds__ asks ptxas to allow:
// 32 registers a thread at most (the run-time window's instances would take 33 or 34 and lose a
// block, an eighth of the loads in flight).
constexpr int blocks_per_sm = 2048 / threads;

enum class Pool { max, average };

// A Pool2dShape in 32-bit integers (Pool2dShape::validate bounds a plane by 2^24 elements), with
// the Divisors that take a flat index apart. `planes` is the launch's share of N * C.
struct Geometry {
    int H, W, P, Q;
    int window_h, window_w, stride_h, stride_w, pad_h, pad_w;
    Divisor by_H, by_W, by_P, by_Q;
};

Geometry geometry(const Pool2dShape& s) {
    const int H = int(s.H), W = int(s.W), P = int(s.P()), Q = int(s.Q());
    return {H,
            W,
            P,
            Q,
            int(s.window_h),
            int(s.window_w),
            int(s.stride_h),
            int(s.stride_w),
            int(s.pad_h),
            int(s.pad_w),
            Divisor(H),
            Divisor(W),
            Divisor(P),
            Divisor(Q)};
}

// The window and stride a kernel is compiled for, square; 0 reads them from the shape.
template <int window, int stride>
struct Fixed {
    __device__ static int window_h(const Geometry& g) { return window ? window : g.window_h; }
    __device__ static int window_w(const Geometry& g) { return window ? window : g.window_w; }
    __device__ static int stride_h(const Geometry& g) { return window ? stride : g.stride_h; }
    __device__ static int stride_w(const Geometry& g) { return window ? stride : g.stride_w; }
};

__device__ inline int smaller(int a, int b) { return a < b ? a : b; }
__device__ inline int larger(int a, int b) { return a > b ? a : b; }
// i moved into [0, size): the nearest index of the image.
__device__ inline int clamped(int i, int size) { return smaller(larger(i, 0), size - 1); }

// The number of inputs window `o` covers along one dimension, padding not counted.
__device__ inline int window_extent(int o, int window, int stride, int pad, int size) {
    const int start = o * stride - pad;
    return smaller(start + window, size) - larger(start, 0);
}

// Thread i of the launch computes output i of its planes: i = (plane * P + p) * Q + q.
// Max: ties keep the first element in row-major order, a NaN the first NaN (replaces_max).
template <Pool pool, typename Window>
__global__ void __launch_bounds__(threads, blocks_per_sm)
    pool2d_forward_kernel(Geometry g, int outputs, const float* x, float* y, float* argmax) {
    const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= outputs) return;
    const auto [row, q] = g.by_Q.divmod(i);  // row = plane * P + p
    const auto [plane, p] = g.by_P.divmod(row);
    const float* in = x + std::int64_t(plane) * g.H * g.W;
    const int kh = Window::window_h(g), kw = Window::window_w(g);
    const int top = p * Window::stride_h(g) - g.pad_h, left = q * Window::stride_w(g) - g.pad_w;

    if constexpr (pool == Pool::max) {
        // Start below every number, at the window's first element inside the image: a window of
        // -inf keeps that first element, as the reference does.
        float best = -INFINITY;
        int best_index = larger(top, 0) * g.W + larger(left, 0);
#pragma unroll
        for (int dh = 0; dh < kh; ++dh)
#pragma unroll
            for (int dw = 0; dw < kw; ++dw) {
                const int h = top + dh, w = left + dw;
                const bool inside = h >= 0 && h < g.H && w >= 0 && w < g.W;
                // Every tap loads, from the nearest element of the image when it lies outside:
                // a load under no condition is one the compiler can issue with the others.
                const float loaded = in[clamped(h, g.H) * g.W + clamped(w, g.W)];
                const float v = inside ? loaded : -INFINITY;  // -inf never replaces
                if (replaces_max(v, best)) {
                    best = v;
                    best_index = h * g.W + w;
                }
            }
        y[i] = best;
        argmax[i] = float(best_index);
    } else {
        float total = 0.0f;
#pragma unroll
        for (int dh = 0; dh < kh; ++dh)
#pragma unroll
            for (int dw = 0; dw < kw; ++dw) {
                const int h = top + dh, w = left + dw;
                const bool inside = h >= 0 && h < g.H && w >= 0 && w < g.W;
                const float loaded = in[clamped(h, g.H) * g.W + clamped(w, g.W)];
                // + 0.0f leaves any sum bit for bit (starting from +0, a sum is never -0).
                total += inside ? loaded : 0.0f;
            }
        const int count = window_extent(p, kh, Window::stride_h(g), g.pad_h, g.H) *
                          window_extent(q, kw, Window::stride_w(g), g.pad_w, g.W);
        y[i] = total / float(count);
    }
}

// Thread i of the launch owns dx element i of its planes: i = (plane * H + h) * W + w. It adds
// the dy of the windows that cover it, in (p, q) order, the reference's: for max only those whose
// argmax is this element, for average dy / count of each. An element lies in at most
// ceil(window / stride) windows along each dimension: with the window compiled in, the loops
// over them unroll, as the taps of the forward kernel do.
template <Pool pool, typename Window>
__global__ void __launch_bounds__(threads, blocks_per_sm)
    pool2d_backward_kernel(Geometry g, int inputs, const float* dy, const float* argmax,
                           float* dx) {
    const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= inputs) return;
    const auto [row, w] = g.by_W.divmod(i);  // row = plane * H + h
    const auto [plane, h] = g.by_H.divmod(row);
    const int kh = Window::window_h(g), kw = Window::window_w(g);
    const int sh = Window::stride_h(g), sw = Window::stride_w(g);
    const Covering<int> rows = covering(h, kh, sh, g.pad_h, g.P);
    const Covering<int> cols = covering(w, kw, sw, g.pad_w, g.Q);
    const std::int64_t outputs = std::int64_t(plane) * g.P * g.Q;
    const float index = float(h * g.W + w);
    float sum = 0.0f;
#pragma unroll
    for (int a = 0; a < (kh + sh - 1) / sh; ++a)
#pragma unroll
        for (int b = 0; b < (kw + sw - 1) / sw; ++b) {
            const int p = rows.first + a, q = cols.first + b;
            const bool covers = p <= rows.last && q <= cols.last;
            // Loads under no condition, as in the forward kernel: a window past the last that
            // covers this element reads the last one's, and adds nothing (+ 0.0f).
            const int pc = smaller(p, rows.last), qc = smaller(q, cols.last);
            const std::int64_t o = outputs + pc * g.Q + qc;
            const float gradient = dy[o];
            if constexpr (pool == Pool::max) {
                const bool chosen = argmax[o] == index;
                sum += covers && chosen ? gradient : 0.0f;
            } else {
                const int count = window_extent(pc, kh, sh, g.pad_h, g.H) *
                                  window_extent(qc, kw, sw, g.pad_w, g.W);
                sum += covers ? gradient / float(count) : 0.0f;
            }
        }
    dx[i] = sum;
}

// Calls launch(first_plane, planes) over N * C planes, a share small enough that the launch's
// larger plane (input or output) times its planes stays below 2^31: 32-bit flat indices.
template <typename Launch>
void for_each_launch(const Pool2dShape& s, Launch launch) {
    const std::int64_t plane = std::max(s.H * s.W, s.P() * s.Q());
    const std::int64_t per_launch = std::min(s.N * s.C, (std::int64_t(1) << 31) / plane - 1);
    for (std::int64_t first = 0; first < s.N * s.C; first += per_launch)
        launch(first, std::min(per_launch, s.N * s.C - first));
}

// Runs `run(Fixed<window, stride>{})` with the window compiled in where the shape is one of
// those networks use, else with Fixed<0, 0>, the sizes read at run time.
template <typename Run>
void with_window(const Pool2dShape& s, Run run) {
    const auto is = [&](std::int64_t window, std::int64_t stride) {
        return s.window_h == window && s.window_w == window && s.stride_h == stride &&
               s.stride_w == stride;
    };
    if (is(2, 2))
        run(Fixed<2, 2>{});
    else if (is(3, 2))
        run(Fixed<3, 2>{});
    else if (is(3, 1))
        run(Fixed<3, 1>{});
    else
        run(Fixed<0, 0>{});
}

template <Pool pool>
void pool2d_forward(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    const Geometry g = geometry(s);
    with_window(s, [&]<typename Window>(Window) {
        for_each_launch(s, [&](std::int64_t first, std::int64_t planes) {
            const int outputs = int(planes * g.P * g.Q);
            const std::int64_t out = first * g.P * g.Q;
            gpu::launch(pool2d_forward_kernel<pool, Window>,
                        dim3(unsigned(ceil_div(outputs, threads))), dim3(threads), 0, g, outputs,
                        x + first * s.H * s.W, y + out, argmax ? argmax + out : nullptr);
        });
    });
}

template <Pool pool>
void pool2d_backward(const Pool2dShape& s, const float* dy, const float* argmax, float* dx) {
    const Geometry g = geometry(s);
    with_window(s, [&]<typename Window>(Window) {
        for_each_launch(s, [&](std::int64_t first, std::int64_t planes) {
            const int inputs = int(planes * g.H * g.W);
            const std::int64_t out = first * g.P * g.Q;
            gpu::launch(pool2d_backward_kernel<pool, Window>,
                        dim3(unsigned(ceil_div(inputs, threads))), dim3(threads), 0, g, inputs,
                        dy + out, argmax ? argmax + out : nullptr, dx + first * s.H * s.W);
        });
    });
}

void max_pool2d_forward(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    pool2d_forward<Pool::max>(s, x, y, argmax);
}

void max_pool2d_backward(const Pool2dShape& s, const float* dy, const float* argmax, float* dx) {
    pool2d_backward<Pool::max>(s, dy, argmax, dx);
}

// Average pooling has no argmax: the kernels get nullptr and never touch it.
void avg_pool2d_forward(const Pool2dShape& s, const float* x, float* y) {
    pool2d_forward<Pool::average>(s, x, y, nullptr);
}

void avg_pool2d_backward(const Pool2dShape& s, const float* dy, float* dx) {
    pool2d_backward<Pool::average>(s, dy, nullptr, dx);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::max_pool2d_forward,
                    {3, "unrolled",
                     "version 1's thread per output, window compiled in: its loads "
                     "issued together; 32-bit indices",
                     max_pool2d_forward}) &&
    register_kernel("gpu_tiled", ops::max_pool2d_backward,
                    {3, "unrolled_gather",
                     "version 2's gather, window compiled in: its loads "
                     "issued together; 32-bit indices",
                     max_pool2d_backward}) &&
    register_kernel("gpu_tiled", ops::avg_pool2d_forward,
                    {3, "unrolled",
                     "version 1's thread per output, window compiled in: its loads "
                     "issued together; 32-bit indices",
                     avg_pool2d_forward}) &&
    register_kernel("gpu_tiled", ops::avg_pool2d_backward,
                    {3, "unrolled_gather",
                     "version 2's gather, window compiled in: its loads "
                     "issued together; 32-bit indices",
                     avg_pool2d_backward});

}  // namespace triptych::gpu_tiled
