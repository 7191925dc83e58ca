// cpu_naive activations: every activation of common/activations.hpp (ReLU, sigmoid, tanh, GELU),
// forward and backward, as one loop over the elements applying its formula. Templates: float for
// the variant, double for the reference.
//
//   activation_forward<Act>(n, x, y):        y[i] = Act::forward(x[i]); y may be x (in place)
//   activation_backward<Act>(n, in, dy, dx): dx[i] = Act::backward(in[i], dy[i]), `in` the
//                                            forward's input or output (Act::backward_takes_output)
#pragma once

#include <cstdint>

#include "common/activations.hpp"
#include "common/kernels.hpp"

namespace triptych::cpu_naive {

template <typename Act, typename T>
void activation_forward(std::int64_t n, const T* x, T* y) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = Act::forward(x[i]);
}

template <typename Act, typename T>
void activation_backward(std::int64_t n, const T* in, const T* dy, T* dx) {
    for (std::int64_t i = 0; i < n; ++i) dx[i] = Act::backward(in[i], dy[i]);
}

// y = act(y), in place, over n elements; nothing for Activation::none.
template <typename T>
void apply_activation(Activation activation, std::int64_t n, T* y) {
    with_activation(activation, [&](auto act) { activation_forward<decltype(act)>(n, y, y); });
}

// Every activation's two kernels, version 1 of the CPU ladder.
[[maybe_unused]] inline const bool activations_registered = [] {
    for_each_activation([](auto act) {
        using Act = decltype(act);
        register_kernel("cpu_naive", forward_op(Act::kind),
                        {1, "loop", "the formula, one element after the other",
                         activation_forward<Act, float>});
        register_kernel("cpu_naive", backward_op(Act::kind),
                        {1, "loop", "the formula, one element after the other",
                         activation_backward<Act, float>});
    });
    return true;
}();

}  // namespace triptych::cpu_naive
