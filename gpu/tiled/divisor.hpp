// Division by a number known only at launch, as a multiply-high and a shift (Granlund and
// Montgomery, "Division by invariant integers using multiplication", 1994; CUTLASS's FastDivmod
// does the same). A 32-bit integer division has no instruction on a GPU: the compiler emits a
// sequence of about 20, where this costs two. Kernels that turn flat indices into coordinates
// many times per thread (conv_implicit_gemm.cu) build a Divisor on the host and pass it in.
//
// For a divisor d >= 2, let l = ceil(log2 d) and m = ceil(2^(31 + l) / d), which fits in 32 bits
// (2^(l-1) < d gives m < 2^32). Then for every 0 <= n < 2^31
//   floor(n / d) = floor(n * m / 2^(31 + l)) = umulhi(n, m) >> (l - 1),
// because n * m / 2^(31 + l) = n / d + n * e / (d * 2^(31 + l)) with e = m * d - 2^(31 + l) < d,
// and that second term is below 2^-l <= 1/d: too small to carry n / d past the next integer.
// d = 1 would need a shift of -1 and is kept apart.
#pragma once

#include <cstdint>

#include "common/host_device.hpp"

namespace triptych::gpu_tiled {

struct Divisor {
    int value;            // d, at least 1
    unsigned multiplier;  // m
    int shift;            // l - 1

    struct QuotientRemainder {
        int quotient, remainder;
    };

    // d must be >= 1 (callers pass sizes of a validated shape).
    explicit Divisor(int d) : value(d), multiplier(0), shift(0) {
        if (d == 1) return;
        int l = 0;
        while ((std::int64_t(1) << l) < d) ++l;
        const std::uint64_t power = std::uint64_t(1) << (31 + l);
        multiplier = unsigned((power + std::uint64_t(d) - 1) / std::uint64_t(d));
        shift = l - 1;
    }

    // floor(n / d) for 0 <= n < 2^31.
    TRIPTYCH_HOST_DEVICE int divide(int n) const {
        if (value == 1) return n;
#ifdef __CUDA_ARCH__
        const unsigned high = __umulhi(unsigned(n), multiplier);
#else
        const unsigned high = unsigned((std::uint64_t(unsigned(n)) * multiplier) >> 32);
#endif
        return int(high >> shift);
    }
    TRIPTYCH_HOST_DEVICE QuotientRemainder divmod(int n) const {
        const int q = divide(n);
        return {q, n - q * value};
    }
};

}  // namespace triptych::gpu_tiled
