// The optimizers' update rules, one element at a time: the one place they are written, shared by
// every variant (cpu_naive runs them in float64 as the reference, cpu_eigen_omp, gpu_naive and
// gpu_tiled in float32; the variants differ in how they walk the elements, not in the math).
// Usable from host and device code: under nvcc the functions are __host__ __device__.
//
// For a parameter w with gradient g at step t = 1, 2, ... (PyTorch's torch.optim rules):
//
//   SGD       g += weight_decay * w
//             with momentum:  v = momentum * v + g;  g = nesterov ? g + momentum * v : v
//             w -= lr * g
//   Adam      g += weight_decay * w            (AdamW instead: w -= lr * weight_decay * w)
//             m = beta1 * m + (1 - beta1) * g          the gradient's running mean
//             s = beta2 * s + (1 - beta2) * g^2        its running mean square
//             w -= lr * (m / (1 - beta1^t)) / (sqrt(s / (1 - beta2^t)) + eps)
//             (m and s start at 0, so early means are too small; dividing by 1 - beta^t corrects
//             that bias)
//   RMSprop   g += weight_decay * w
//             s = alpha * s + (1 - alpha) * g^2
//             with momentum:  b = momentum * b + g / (sqrt(s) + eps);  w -= lr * b
//             else            w -= lr * g / (sqrt(s) + eps)
#pragma once

#include <cmath>
#include <cstdint>

#include "common/host_device.hpp"
#include "common/ops.hpp"

namespace triptych {

// One step's constants, in the precision T the rule runs in. Trivially copyable, so a kernel takes
// it by value.
template <typename T>
struct OptimizerRule {
    OptimizerKind kind;
    T lr, weight_decay, momentum, beta1, beta2, alpha, eps;
    bool nesterov, decoupled_weight_decay;
    T bias_correction1, bias_correction2;  // 1 - beta1^t and 1 - beta2^t (Adam), rounded once
    // Null, or where the kernel reads the two corrections instead, when it runs: {1 - beta1^t,
    // 1 - beta2^t} in the backend's memory. A captured CUDA graph repeats, at every launch, the
    // arguments it was captured with; with the corrections in memory, which the host refills
    // before each launch, one captured update serves every step (common/nn/trainer.cpp).
    const T* corrections = nullptr;

    // For the simulator's stream-order check (note_argument in gpu/runtime/sim/sim.hpp): a kernel
    // only reads `corrections`.
    template <typename Note>
    void accesses(Note note) const {
        note(corrections, false);
    }
};

// The rule for step `step` (1 for the first) of `config`.
template <typename T>
OptimizerRule<T> optimizer_rule(const OptimizerConfig& config, std::int64_t step) {
    OptimizerRule<T> rule{};
    rule.kind = config.kind;
    rule.lr = T(config.lr);
    rule.weight_decay = T(config.weight_decay);
    rule.momentum = T(config.momentum);
    rule.beta1 = T(config.beta1);
    rule.beta2 = T(config.beta2);
    rule.alpha = T(config.alpha);
    rule.eps = T(config.eps);
    rule.nesterov = config.nesterov;
    rule.decoupled_weight_decay = config.decoupled_weight_decay;
    // 1 - beta^t in double, rounded once: while beta^t is close to 1, rounding it to float first
    // and then subtracting keeps only the few bits left after the cancellation (up to 7e-6
    // relative error in Adam's update, against torch.optim in float64).
    rule.bias_correction1 = T(1.0 - std::pow(double(config.beta1), double(step)));
    rule.bias_correction2 = T(1.0 - std::pow(double(config.beta2), double(step)));
    return rule;
}

// `rule` with its bias corrections loaded from rule.corrections where that is set: what a kernel
// does once, before it applies the rule to its elements.
template <typename T>
TRIPTYCH_HOST_DEVICE inline OptimizerRule<T> with_corrections(const OptimizerRule<T>& rule) {
    OptimizerRule<T> loaded = rule;
    if (rule.corrections != nullptr) {
        loaded.bias_correction1 = rule.corrections[0];
        loaded.bias_correction2 = rule.corrections[1];
    }
    return loaded;
}

// Updates one parameter element w, given its gradient g, and its state s0, s1 (unused ones are
// never touched, so they may be dummies): SGD's velocity in s0; Adam's mean in s0 and mean square
// in s1; RMSprop's mean square in s0 and momentum buffer in s1.
template <typename T>
TRIPTYCH_HOST_DEVICE inline void optimizer_update(const OptimizerRule<T>& rule, T& w, T g, T& s0,
                                                  T& s1) {
    using std::sqrt;
    switch (rule.kind) {
        case OptimizerKind::sgd:
            g += rule.weight_decay * w;
            if (rule.momentum != T(0)) {
                s0 = rule.momentum * s0 + g;
                g = rule.nesterov ? g + rule.momentum * s0 : s0;
            }
            w -= rule.lr * g;
            return;
        case OptimizerKind::adam:
            if (rule.decoupled_weight_decay)
                w -= rule.lr * rule.weight_decay * w;
            else
                g += rule.weight_decay * w;
            s0 = rule.beta1 * s0 + (T(1) - rule.beta1) * g;
            s1 = rule.beta2 * s1 + (T(1) - rule.beta2) * g * g;
            w -= rule.lr * (s0 / rule.bias_correction1) /
                 (sqrt(s1 / rule.bias_correction2) + rule.eps);
            return;
        case OptimizerKind::rmsprop:
            g += rule.weight_decay * w;
            s0 = rule.alpha * s0 + (T(1) - rule.alpha) * g * g;
            if (rule.momentum != T(0)) {
                s1 = rule.momentum * s1 + g / (sqrt(s0) + rule.eps);
                w -= rule.lr * s1;
            } else {
                w -= rule.lr * g / (sqrt(s0) + rule.eps);
            }
            return;
    }
}

}  // namespace triptych
