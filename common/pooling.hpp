// What every pooling panel shares (cpu/naive, cpu/eigen_omp, gpu/naive, gpu/tiled pool2d), host
// and device code: the input a window covers, the windows that cover an input, and which element
// a max pool keeps. Semantics: Pool2dShape (common/ops.hpp).
#pragma once

#include <cstdint>

#include "common/host_device.hpp"
#include "common/ops.hpp"

namespace triptych {

// The rows [h0, h1) and columns [w0, w1) of the input that window (p, q) covers, padding removed:
// padding is never a candidate, and Pool2dShape::validate makes every window cover at least one
// input element.
struct PoolWindow {
    std::int64_t h0, h1, w0, w1;
    TRIPTYCH_HOST_DEVICE std::int64_t count() const { return (h1 - h0) * (w1 - w0); }
};

TRIPTYCH_HOST_DEVICE inline PoolWindow pool_window(const Pool2dShape& s, std::int64_t p,
                                                   std::int64_t q) {
    const std::int64_t h = p * s.stride_h - s.pad_h, w = q * s.stride_w - s.pad_w;
    return {h > 0 ? h : 0, h + s.window_h < s.H ? h + s.window_h : s.H, w > 0 ? w : 0,
            w + s.window_w < s.W ? w + s.window_w : s.W};
}

// The first and last output index (along one dimension) whose window covers input index i:
// outputs o with o * stride - pad <= i < o * stride - pad + window, clipped to [0, outputs).
// The range is empty (first > last) when no window covers i (a stride larger than the window).
// In the integer type of the caller's indices: std::int64_t, or int in kernels that keep 32-bit
// indices (gpu/tiled/pool2d_v3_unrolled.cu).
template <typename Int>
struct Covering {
    Int first, last;
};

template <typename Int>
TRIPTYCH_HOST_DEVICE inline Covering<Int> covering(Int i, Int window, Int stride, Int pad,
                                                   Int outputs) {
    const Int lowest = i + pad - window + 1;  // o * stride must be at least this
    const Int first = lowest > 0 ? (lowest + stride - 1) / stride : 0;
    const Int last = (i + pad) / stride;
    return {first, last < outputs - 1 ? last : outputs - 1};
}

// Whether a max pool scanning its window in row-major order replaces its best value so far with
// `candidate`: when it is larger, so that of equal values the first stays (ties go to the first),
// or when it is the first NaN. A window holding a NaN gives NaN and the index of its first NaN
// (PyTorch gives NaN too, with the index of the last): a NaN that pooling silently dropped would
// hide a diverging training run. (x != x is the NaN test that host and device code both have.)
// The tests are joined by | and &, not || and &&: with no branch, a CPU loop that calls this
// vectorises (GCC gives up on a loop with the short-circuit's control flow in it).
template <typename T>
TRIPTYCH_HOST_DEVICE inline bool replaces_max(T candidate, T best) {
    return (candidate > best) | ((candidate != candidate) & (best == best));
}

}  // namespace triptych
