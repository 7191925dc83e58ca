// cpu_naive sum: every element added to one accumulator, first to last.
//
// One thread and one fixed order, so both modes of Reduction are this same loop, and the result
// has the same bits on every run. Its rounding error is at most (n - 1) u sum_i |x_i| (u = 2^-24
// for float; Higham, Accuracy and Stability of Numerical Algorithms, 4.2): the accumulator grows,
// and each addition rounds at the accumulator's size. A tree of partial sums (gpu_tiled) brings
// that down to about log2(n) u sum_i |x_i|. Template: float for the variant, double for the
// reference (mean is sum / n).
#pragma once

#include <cstdint>

#include "common/kernels.hpp"

namespace triptych::cpu_naive {

template <typename T>
T sum(std::int64_t n, const T* x) {
    T total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += x[i];
    return total;
}

// One thread, one order: both modes of Reduction are the same loop.
[[maybe_unused]] inline const bool sum_registered =
    register_kernel("cpu_naive", ops::sum,
                    {1, "loop", "one accumulator, first element to last",
                     [](std::int64_t n, const float* x, Reduction) { return sum(n, x); }});

}  // namespace triptych::cpu_naive
