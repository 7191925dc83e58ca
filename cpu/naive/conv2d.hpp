// cpu_naive conv2d: the definition written as loops; the float64 reference every other variant
// and algorithm is checked against (instantiated for double by the cross-check).
//
//   forward          y[n, k, p, q] = b[k] + sum_{c, r, s} x[n, c, h, w] * w[k, c, r, s]
//                    with h = p*stride_h + r - pad_h, w = q*stride_w + s - pad_w; x is 0 where
//                    (h, w) falls in the padding.
//   backward_data    dx[n, c, h, w] = sum over every (k, p, q, r, s) whose forward term read
//                    x[n, c, h, w] of dy[n, k, p, q] * w[k, c, r, s]
//   backward_weights dw[k, c, r, s] = sum_{n, p, q} dy[n, k, p, q] * x[n, c, h, w]
//                    db[k]          = sum_{n, p, q} dy[n, k, p, q]
//
// All three visit the same (n, k, p, q, c, r, s) terms, the seven loops of the definition; only
// what they add up, and where, differs. backward_data scatters (each term adds to one dx element),
// which is simple here and costly in parallel: see the eigen_omp and GPU versions for the gather.
// Shapes: see Conv2dShape (common/ops.hpp).
#pragma once

#include <cstdint>

#include "common/kernels.hpp"
#include "common/ops.hpp"

namespace triptych::cpu_naive {

// Index of (a, b, c, d) in a row-major (A, B, C, D) tensor, given B, C, D.
inline std::int64_t index4(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d,
                           std::int64_t B, std::int64_t C, std::int64_t D) {
    return ((a * B + b) * C + c) * D + d;
}

// Calls term(n, k, p, q, c, r, s, h, w) for every term of the definition whose input position
// (h, w) lies inside the image (padding contributes nothing, so it is skipped).
template <typename Term>
void for_each_conv_term(const Conv2dShape& s, Term term) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t n = 0; n < s.N; ++n)
        for (std::int64_t k = 0; k < s.K; ++k)
            for (std::int64_t p = 0; p < P; ++p)
                for (std::int64_t q = 0; q < Q; ++q)
                    for (std::int64_t c = 0; c < s.C; ++c)
                        for (std::int64_t r = 0; r < s.R; ++r)
                            for (std::int64_t t = 0; t < s.S; ++t) {
                                const std::int64_t h = p * s.stride_h + r - s.pad_h;
                                const std::int64_t w = q * s.stride_w + t - s.pad_w;
                                if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
                                term(n, k, p, q, c, r, t, h, w);
                            }
}

template <typename T>
void conv2d_forward(const Conv2dShape& s, const T* x, const T* w, const T* b, T* y) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t n = 0; n < s.N; ++n)
        for (std::int64_t k = 0; k < s.K; ++k)
            for (std::int64_t i = 0; i < P * Q; ++i) y[(n * s.K + k) * P * Q + i] = b[k];
    for_each_conv_term(
        s, [&](auto n, auto k, auto p, auto q, auto c, auto r, auto t, auto h, auto wi) {
            y[index4(n, k, p, q, s.K, P, Q)] +=
                x[index4(n, c, h, wi, s.C, s.H, s.W)] * w[index4(k, c, r, t, s.C, s.R, s.S)];
        });
}

template <typename T>
void conv2d_backward_data(const Conv2dShape& s, const T* dy, const T* w, T* dx) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t i = 0; i < s.N * s.C * s.H * s.W; ++i) dx[i] = T(0);
    for_each_conv_term(
        s, [&](auto n, auto k, auto p, auto q, auto c, auto r, auto t, auto h, auto wi) {
            dx[index4(n, c, h, wi, s.C, s.H, s.W)] +=
                dy[index4(n, k, p, q, s.K, P, Q)] * w[index4(k, c, r, t, s.C, s.R, s.S)];
        });
}

template <typename T>
void conv2d_backward_weights(const Conv2dShape& s, const T* x, const T* dy, T* dw, T* db) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t i = 0; i < s.K * s.C * s.R * s.S; ++i) dw[i] = T(0);
    for (std::int64_t k = 0; k < s.K; ++k) db[k] = T(0);
    for (std::int64_t n = 0; n < s.N; ++n)
        for (std::int64_t k = 0; k < s.K; ++k)
            for (std::int64_t i = 0; i < P * Q; ++i) db[k] += dy[(n * s.K + k) * P * Q + i];
    for_each_conv_term(
        s, [&](auto n, auto k, auto p, auto q, auto c, auto r, auto t, auto h, auto wi) {
            dw[index4(k, c, r, t, s.C, s.R, s.S)] +=
                dy[index4(n, k, p, q, s.K, P, Q)] * x[index4(n, c, h, wi, s.C, s.H, s.W)];
        });
}

// The definition only: im2col and FFT are ways to go faster, which is not this variant's job, so
// the algorithm (always direct, see the backend's conv2d_algorithms) is not looked at.
[[maybe_unused]] inline const bool conv2d_registered =
    register_kernel("cpu_naive", ops::conv2d_forward,
                    {1, "loops", "the seven loops of the definition",
                     [](const Conv2dShape& s, ConvAlgorithm, const float* x, const float* w,
                        const float* b, float* y) { conv2d_forward(s, x, w, b, y); }}) &&
    register_kernel("cpu_naive", ops::conv2d_backward_data,
                    {1, "loops", "every output's dy spread back over its window",
                     [](const Conv2dShape& s, ConvAlgorithm, const float* dy, const float* w,
                        float* dx) { conv2d_backward_data(s, dy, w, dx); }}) &&
    register_kernel("cpu_naive", ops::conv2d_backward_weights,
                    {1, "loops", "every weight's sum over the batch and the output positions",
                     [](const Conv2dShape& s, ConvAlgorithm, const float* x, const float* dy,
                        float* dw, float* db) { conv2d_backward_weights(s, x, dy, dw, db); }});

}  // namespace triptych::cpu_naive
