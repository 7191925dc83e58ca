// cpu_naive pooling: max and average over a window slid across every (n, c) plane; the reference
// the other variants are checked against (instantiated for double by the cross-check).
//
//   max_pool2d_forward   y = the largest input in the window; argmax = where it was, as the index
//                        h * W + w within the plane (stored in the output type). Ties: the first
//                        in row-major order wins, because only a strictly larger value replaces
//                        the current best.
//   max_pool2d_backward  dx = 0, then dx[argmax] += dy for every output: only the winner moved the
//                        output, so only it gets gradient. Overlapping windows may pick the same
//                        element twice, hence +=.
//   avg_pool2d_forward   y = the mean of the input elements the window covers (padding is not
//                        an element: it neither adds nor counts).
//   avg_pool2d_backward  every covered element gets dy / count.
// Shapes: see Pool2dShape (common/ops.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/kernels.hpp"
#include "common/ops.hpp"
#include "common/pooling.hpp"

namespace triptych::cpu_naive {

template <typename T>
void max_pool2d_forward(const Pool2dShape& s, const T* x, T* y, T* argmax) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t plane = 0; plane < s.N * s.C; ++plane) {
        const T* in = x + plane * s.H * s.W;
        for (std::int64_t p = 0; p < P; ++p)
            for (std::int64_t q = 0; q < Q; ++q) {
                const PoolWindow win = pool_window(s, p, q);
                std::int64_t best = win.h0 * s.W + win.w0;
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w)
                        if (replaces_max(in[h * s.W + w], in[best])) best = h * s.W + w;
                y[plane * P * Q + p * Q + q] = in[best];
                argmax[plane * P * Q + p * Q + q] = T(best);
            }
    }
}

template <typename T>
void max_pool2d_backward(const Pool2dShape& s, const T* dy, const T* argmax, T* dx) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t i = 0; i < s.N * s.C * s.H * s.W; ++i) dx[i] = T(0);
    for (std::int64_t plane = 0; plane < s.N * s.C; ++plane)
        for (std::int64_t i = 0; i < P * Q; ++i)
            dx[plane * s.H * s.W + static_cast<std::int64_t>(argmax[plane * P * Q + i])] +=
                dy[plane * P * Q + i];
}

template <typename T>
void avg_pool2d_forward(const Pool2dShape& s, const T* x, T* y) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t plane = 0; plane < s.N * s.C; ++plane) {
        const T* in = x + plane * s.H * s.W;
        for (std::int64_t p = 0; p < P; ++p)
            for (std::int64_t q = 0; q < Q; ++q) {
                const PoolWindow win = pool_window(s, p, q);
                T total = T(0);
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w) total += in[h * s.W + w];
                y[plane * P * Q + p * Q + q] = total / T(win.count());
            }
    }
}

template <typename T>
void avg_pool2d_backward(const Pool2dShape& s, const T* dy, T* dx) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t i = 0; i < s.N * s.C * s.H * s.W; ++i) dx[i] = T(0);
    for (std::int64_t plane = 0; plane < s.N * s.C; ++plane)
        for (std::int64_t p = 0; p < P; ++p)
            for (std::int64_t q = 0; q < Q; ++q) {
                const PoolWindow win = pool_window(s, p, q);
                const T share = dy[plane * P * Q + p * Q + q] / T(win.count());
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w)
                        dx[plane * s.H * s.W + h * s.W + w] += share;
            }
}

[[maybe_unused]] inline const bool pool2d_registered =
    register_kernel(
        "cpu_naive", ops::max_pool2d_forward,
        {1, "loops", "every window scanned in row-major order", max_pool2d_forward<float>}) &&
    register_kernel(
        "cpu_naive", ops::max_pool2d_backward,
        {1, "loops", "dx zeroed, then every dy added at its argmax", max_pool2d_backward<float>}) &&
    register_kernel(
        "cpu_naive", ops::avg_pool2d_forward,
        {1, "loops", "every window's mean over the inputs it covers", avg_pool2d_forward<float>}) &&
    register_kernel("cpu_naive", ops::avg_pool2d_backward,
                    {1, "loops", "dx zeroed, then every dy spread over its window",
                     avg_pool2d_backward<float>});

}  // namespace triptych::cpu_naive
