// cpu_naive optimizer step: the update rule of common/optimizer_rule.hpp applied to every element
// of one parameter tensor, in order. Templates: float for the variant, double for the reference
// (the cross-check runs several steps of each optimizer in double and compares).
#pragma once

#include <cstdint>

#include "common/kernels.hpp"
#include "common/optimizer_rule.hpp"

namespace triptych::cpu_naive {

// w, g (and the state s0, s1 where the rule uses them; else null) are n elements each.
template <typename T>
void optimizer_step(const OptimizerRule<T>& rule, std::int64_t n, T* w, const T* g, T* s0, T* s1) {
    const OptimizerRule<T> loaded = with_corrections(rule);
    T unused = T(0);
    for (std::int64_t i = 0; i < n; ++i)
        optimizer_update(loaded, w[i], g[i], s0 != nullptr ? s0[i] : unused,
                         s1 != nullptr ? s1[i] : unused);
}

[[maybe_unused]] inline const bool optimizer_registered =
    register_kernel("cpu_naive", ops::optimizer_step,
                    {1, "loop", "the rule applied to every element of every tensor, in order",
                     [](const OptimizerRule<float>& rule, std::span<const OptimizerSlot> tensors) {
                         for (const OptimizerSlot& t : tensors)
                             optimizer_step(rule, t.n, t.value, t.grad, t.state0, t.state1);
                     }});

}  // namespace triptych::cpu_naive
