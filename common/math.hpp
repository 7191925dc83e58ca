// Small integer helpers shared by every variant.
#pragma once

namespace triptych {

// The number of blocks of size `tile` needed to cover `n` items: ceil(n / tile).
// Written for host and device code alike (constexpr, no library calls).
template <typename T>
constexpr T ceil_div(T n, T tile) {
    return (n + tile - 1) / tile;
}

}  // namespace triptych
