// Small integer helpers shared by every variant, host and device code.
#pragma once

#include "common/host_device.hpp"

namespace triptych {

// The number of blocks of size `tile` needed to cover `n` items: ceil(n / tile), for tile >= 1.
// Launchers use it to size grids, kernels to count tiles. Not (n + tile - 1) / tile: that
// overflows when n + tile passes the type's largest value (a pooling stride near 2^63).
template <typename T>
TRIPTYCH_HOST_DEVICE constexpr T ceil_div(T n, T tile) {
    return n / tile + (n % tile > 0 ? T(1) : T(0));
}

}  // namespace triptych
