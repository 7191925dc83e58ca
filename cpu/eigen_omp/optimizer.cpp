// cpu_eigen_omp optimizer step: SGD, Adam and RMSprop (common/optimizer_rule.hpp has the rules)
// over every element of one parameter tensor.
//
// An optimizer step is elementwise: each weight is updated from its own gradient and state, and
// nothing is reused, so it is bound by memory bandwidth like ReLU (lesson 05): Adam reads w, g, m
// and s and writes w, m and s, 28 bytes for about 15 flops. What a good CPU version needs is what
// cpu_naive's loop lacks:
//   - SIMD: cpu_naive calls optimizer_update, which switches on the kind and picks the state
//     tensors through null checks, for every element. Here the kind and the number of state
//     tensors are template parameters (update_elements), so the loop body is straight-line code
//     on local floats over restrict pointers, which GCC vectorises (-O3). The rule is not
//     rewritten: the loop calls the same optimizer_update.
//   - threads: each tensor is split into one contiguous slice per OpenMP thread (for_each_slice in
//     parallel.hpp), but only when it is large enough to pay for waking the team; a bias of 10
//     elements runs on the calling thread.
//   - no subnormals: a weight whose gradient stays 0 (the MLP's weights for a border pixel that is
//     0 in every image) keeps a running mean that decays by beta1 = 0.9 each step, and after
//     about 800 steps it is a subnormal float (below 1.2e-38). x86 cores handle subnormal operands
//     and results in microcode, about a hundred times slower: the MLP's epochs on 2 cores took
//     nearly twice as long by epoch 15. So the update runs with subnormals flushed to zero (the
//     FTZ and DAZ bits of MXCSR, what CUDA's -ftz does on a GPU), the thread's mode restored
//     afterwards. The values lost are below 1.2e-38: nothing a weight update can see.
#if defined(__SSE2__)
#include <pmmintrin.h>
#endif

#include "common/optimizer_rule.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

// While one lives, this thread flushes subnormal floats to zero (see the top of the file).
class SubnormalsFlushed {
public:
#if defined(__SSE2__)
    SubnormalsFlushed() : saved_(_mm_getcsr()) {
        _mm_setcsr(saved_ | _MM_FLUSH_ZERO_ON | _MM_DENORMALS_ZERO_ON);
    }
    ~SubnormalsFlushed() { _mm_setcsr(saved_); }

private:
    unsigned saved_;
#endif
};

// Elements [0, count) of one slice. `kind` and `states` (config.state_tensors()) are fixed at
// compile time: the copy of the rule gets its kind as a constant, so once optimizer_update is
// inlined the switch folds away, and the state tensors are touched only if they exist.
template <OptimizerKind kind, int states>
void update_elements(OptimizerRule<float> rule, std::int64_t count, float* __restrict w,
                     const float* __restrict g, float* __restrict s0, float* __restrict s1) {
    rule.kind = kind;
    for (std::int64_t i = 0; i < count; ++i) {
        float value = w[i];
        float state0 = states > 0 ? s0[i] : 0.0f;
        float state1 = states > 1 ? s1[i] : 0.0f;
        optimizer_update(rule, value, g[i], state0, state1);
        w[i] = value;
        if constexpr (states > 0) s0[i] = state0;
        if constexpr (states > 1) s1[i] = state1;
    }
}

// The whole tensor, sliced over the threads when it is large enough. Each element moves
// 3 + 2 * states floats (w and g in, w out, each state in and out), the work for_each_slice weighs.
template <OptimizerKind kind, int states>
void update_tensor(const OptimizerRule<float>& rule, std::int64_t n, float* w, const float* g,
                   float* s0, float* s1) {
    for_each_slice(n, 3 + 2 * states, [&](std::int64_t begin, std::int64_t count) {
        const SubnormalsFlushed on_this_thread;
        update_elements<kind, states>(rule, count, w + begin, g + begin,
                                      states > 0 ? s0 + begin : nullptr,
                                      states > 1 ? s1 + begin : nullptr);
    });
}

// One tensor: the state tensors present are the ones OptimizerConfig::state_tensors() asked for.
void update_tensor(const OptimizerRule<float>& rule, const OptimizerSlot& t) {
    const int states = (t.state0 != nullptr) + (t.state1 != nullptr);
    float *w = t.value, *s0 = t.state0, *s1 = t.state1;
    switch (rule.kind) {
        case OptimizerKind::sgd:
            if (states == 0)
                update_tensor<OptimizerKind::sgd, 0>(rule, t.n, w, t.grad, s0, s1);
            else
                update_tensor<OptimizerKind::sgd, 1>(rule, t.n, w, t.grad, s0, s1);
            return;
        case OptimizerKind::adam:
            update_tensor<OptimizerKind::adam, 2>(rule, t.n, w, t.grad, s0, s1);
            return;
        case OptimizerKind::rmsprop:
            if (states == 1)
                update_tensor<OptimizerKind::rmsprop, 1>(rule, t.n, w, t.grad, s0, s1);
            else
                update_tensor<OptimizerKind::rmsprop, 2>(rule, t.n, w, t.grad, s0, s1);
            return;
    }
}

void optimizer_step(const OptimizerRule<float>& rule, std::span<const OptimizerSlot> tensors) {
    const OptimizerRule<float> loaded = with_corrections(rule);
    for (const OptimizerSlot& t : tensors) update_tensor(loaded, t);
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernel(
    "cpu_eigen_omp", ops::optimizer_step,
    {2, "simd_threads",
     "the kind and the state tensors as template parameters, so GCC vectorises the loop; large "
     "tensors sliced over the threads",
     optimizer_step});

}  // namespace triptych::cpu_eigen_omp
