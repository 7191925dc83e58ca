// Small integer helpers shared by every variant.
#pragma once

namespace triptych {

// The number of blocks of size `tile` needed to cover `n` items: ceil(n / tile).
// Host code: launchers use it to size grids. (Kernels spell the arithmetic out: nvcc does not let
// device code call a host constexpr function without --expt-relaxed-constexpr.)
template <typename T>
constexpr T ceil_div(T n, T tile) {
    return (n + tile - 1) / tile;
}

}  // namespace triptych
