// Central finite differences in float64, to check that a backward pass is the derivative of its
// forward pass: dL/dx_i ~ (L(x + h e_i) - L(x - h e_i)) / 2h, with an error of O(h^2) from the
// Taylor series plus O(eps |L| / h) from rounding (eps = 2^-53). h = 1e-5 balances the two at
// about 1e-10 for the small, smooth losses the tests build.
#pragma once

#include <cstddef>
#include <vector>

#include "common/random.hpp"

namespace triptych::testing {

// The gradient of the scalar function `loss` at x, one central difference per coordinate.
template <typename Loss>
std::vector<double> numerical_gradient(Loss loss, std::vector<double> x, double h = 1e-5) {
    std::vector<double> gradient(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + h;
        const double above = loss(x);
        x[i] = saved - h;
        const double below = loss(x);
        x[i] = saved;
        gradient[i] = (above - below) / (2 * h);
    }
    return gradient;
}

// sum_i dy_i * y_i: the scalar whose gradient with respect to y is dy, so that a backward pass
// given dy must return the gradient of this loss with respect to the forward pass's inputs.
inline double weighted_sum(const std::vector<double>& dy, const std::vector<double>& y) {
    double sum = 0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += dy[i] * y[i];
    return sum;
}

// `count` values uniform in [low, high), drawn as floats (so the float32 variants see exactly the
// same inputs) and widened to double for the reference and the finite differences.
inline std::vector<double> random_doubles(std::size_t count, Rng& rng, float low = -1,
                                          float high = 1) {
    std::vector<float> values(count);
    rng.uniform(values, low, high);
    return {values.begin(), values.end()};
}

}  // namespace triptych::testing
