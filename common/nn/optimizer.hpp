// Optimizer: updates a model's parameters from their gradients, one Backend::optimizer_step per
// training step over all of them (lesson 12).
//
//   nn::Optimizer adam(backend, model.parameters(), {.kind = OptimizerKind::adam, .lr = 1e-3f});
//   ... model.backward(dlogits); adam.step();
//
// The optimizer's state (SGD's velocity, Adam's two running means, RMSprop's mean square) is one
// or two tensors per parameter, allocated on the parameters' backend and zeroed here: for a GPU
// backend it stays in device memory for the whole run, so a step moves nothing across the bus.
// The update rules are written once, in common/optimizer_rule.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/nn/layer.hpp"

namespace triptych::nn {

// A tensor with a name, for checkpoints: "dense1.W", "dense1.W.adam_m".
struct NamedTensor {
    std::string name;
    Tensor* tensor;
    // A running mean of squares (Adam's v, RMSprop's square_avg): no value is below 0, and a
    // checkpoint holding one there is damaged.
    bool never_negative = false;
};

class Optimizer {
public:
    // `parameters` must outlive the optimizer (they belong to the model). config.validate() is
    // called here.
    Optimizer(const Backend& backend, std::vector<Parameter*> parameters,
              const OptimizerConfig& config);
    // Movable, not copyable: a copy would update the original's state tensors.
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;
    Optimizer(Optimizer&&) = default;
    Optimizer& operator=(Optimizer&&) = default;

    // One update of every parameter from its current gradient.
    void step();
    // The same update in two halves, for a captured graph (common/nn/trainer.cpp).
    //   issue_update: issues the update, reading Adam's bias corrections from `corrections` (2
    //     floats on the backend) when it runs, and counts no step: a graph captures it once.
    //   next_step: counts a step and returns the corrections that update must then find in
    //     `corrections`, {1 - beta1^t, 1 - beta2^t} rounded to float, the values step() uses.
    // A step by step() and one by next_step, an upload of its corrections, and issue_update's
    // kernels give the same bits.
    void issue_update(const Tensor& corrections);
    std::array<float, 2> next_step();

    const OptimizerConfig& config() const { return config_; }
    // Steps taken so far (Adam's bias correction depends on it); a checkpoint restores it.
    std::int64_t steps_taken() const { return steps_; }
    void set_steps_taken(std::int64_t steps);
    // Every state tensor, named after its parameter, in a fixed order (for checkpoints).
    std::vector<NamedTensor> state();

private:
    const Backend* backend_;
    std::vector<Parameter*> parameters_;
    OptimizerConfig config_;
    std::int64_t steps_ = 0;
    std::vector<Tensor> state_;  // config_.state_tensors() per parameter, parameter-major
    std::vector<Backend::OptimizerTensor> tensors_;
};

// "sgd", "adam", "rmsprop" -> the kind; InvalidArgument listing those names otherwise.
OptimizerKind optimizer_kind(const std::string& name);

}  // namespace triptych::nn
