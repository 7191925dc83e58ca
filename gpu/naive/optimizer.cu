// gpu_naive optimizer step: SGD, Adam or RMSprop (common/optimizer_rule.hpp has the rules) on the
// parameter tensors of a model, each updated in place from its gradient, with its state tensors
// (momentum, running means) kept on the device next to it.
//
// version 1: optimizer_step_kernel, one launch per parameter tensor, one thread per element. Each
// thread runs optimizer_update, the same function cpu_naive runs, on its element. Thread i touches
// element i of every tensor, so every access is coalesced.
// The cost is in the launches: a model has many small tensors (LeNet: 10, four of them biases of
// 6 to 120 elements), and each launch costs a few microseconds of CPU and GPU time whatever it
// does. gpu/tiled/optimizer.cu (version 2) updates all of them in one launch.
#include "gpu/runtime/cuda.hpp"

#include "common/kernels.hpp"
#include "common/optimizer_rule.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"

namespace triptych::gpu_naive {
namespace {

// w, g (n elements) and the state tensors the rule uses, s0 and s1 (null when it does not).
__global__ void optimizer_step_kernel(OptimizerRule<float> rule, std::int64_t n, float* w,
                                      const float* g, float* s0, float* s1) {
    const std::int64_t i = element_index();
    if (i >= n) return;
    float unused = 0.0f;  // stands in for a state tensor the rule never touches
    optimizer_update(with_corrections(rule), w[i], g[i], s0 != nullptr ? s0[i] : unused,
                     s1 != nullptr ? s1[i] : unused);
}

void optimizer_step(const OptimizerRule<float>& rule, std::span<const OptimizerSlot> tensors) {
    for (const OptimizerSlot& t : tensors)
        gpu::launch(optimizer_step_kernel, elementwise_grid(t.n), dim3(elementwise_threads), 0,
                    rule, t.n, t.value, t.grad, t.state0, t.state1);
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernel(
    "gpu_naive", ops::optimizer_step,
    {1, "launch_per_tensor", "one thread per element, one launch per tensor", optimizer_step});

}  // namespace triptych::gpu_naive
