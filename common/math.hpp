// Small integer helpers shared by every variant, host and device code.
#pragma once

#include "common/host_device.hpp"

namespace triptych {

// The number of blocks of size `tile` needed to cover `n` items: ceil(n / tile). Launchers use it
// to size grids, kernels to count tiles.
template <typename T>
TRIPTYCH_HOST_DEVICE constexpr T ceil_div(T n, T tile) {
    return (n + tile - 1) / tile;
}

}  // namespace triptych
