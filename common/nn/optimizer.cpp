#include "common/nn/optimizer.hpp"

#include <algorithm>

#include "common/errors.hpp"
#include "common/optimizer_rule.hpp"

namespace triptych::nn {

namespace {
// What each state tensor holds, by kind and slot (see optimizer_update): the suffix of its name.
const char* state_name(OptimizerKind kind, int slot) {
    switch (kind) {
        case OptimizerKind::sgd:
            return "sgd_velocity";
        case OptimizerKind::adam:
            return slot == 0 ? "adam_m" : "adam_v";
        case OptimizerKind::rmsprop:
            return slot == 0 ? "rmsprop_square_avg" : "rmsprop_momentum";
    }
    return "state";
}
// Whether that state is a running mean of squares, which is never negative.
bool never_negative(OptimizerKind kind, int slot) {
    return (kind == OptimizerKind::adam && slot == 1) ||
           (kind == OptimizerKind::rmsprop && slot == 0);
}
}  // namespace

Optimizer::Optimizer(const Backend& backend, std::vector<Parameter*> parameters,
                     const OptimizerConfig& config)
    : backend_(&backend), parameters_(std::move(parameters)), config_(config) {
    config_.validate();
    const int states = config_.state_tensors();
    // Reserved in full first: tensors_ points into state_, which must never reallocate.
    state_.reserve(parameters_.size() * static_cast<std::size_t>(states));
    tensors_.reserve(parameters_.size());
    for (Parameter* p : parameters_) {
        // allocate() fills with NaN; the state must start at exactly 0.
        const std::vector<float> zeros(static_cast<std::size_t>(p->value.elements()), 0.0f);
        Backend::OptimizerTensor t{&p->value, &p->grad, {nullptr, nullptr}};
        for (int s = 0; s < states; ++s) {
            state_.push_back(backend.upload(p->value.shape(), zeros));
            t.state[s] = &state_.back();
        }
        tensors_.push_back(t);
    }
}

void Optimizer::step() {
    ++steps_;
    backend_->optimizer_step(config_, steps_, tensors_);
}

void Optimizer::issue_update(const Tensor& corrections) {
    // The step passed is not used for Adam's corrections; it must only be a valid one.
    backend_->optimizer_step(config_, std::max<std::int64_t>(steps_, 1), tensors_, &corrections);
}

std::array<float, 2> Optimizer::next_step() {
    ++steps_;
    const OptimizerRule<float> rule = optimizer_rule<float>(config_, steps_);
    return {rule.bias_correction1, rule.bias_correction2};
}

void Optimizer::set_steps_taken(std::int64_t steps) {
    if (steps < 0)
        throw InvalidArgument("optimizer " + config_.str() + ": steps taken must be >= 0, got " +
                              std::to_string(steps));
    steps_ = steps;
}

std::vector<NamedTensor> Optimizer::state() {
    const int states = config_.state_tensors();
    std::vector<NamedTensor> named;
    named.reserve(state_.size());
    for (std::size_t i = 0; i < parameters_.size(); ++i)
        for (int s = 0; s < states; ++s)
            named.push_back(
                {parameters_[i]->name + "." + state_name(config_.kind, s),
                 &state_[i * static_cast<std::size_t>(states) + static_cast<std::size_t>(s)],
                 never_negative(config_.kind, s)});
    return named;
}

OptimizerKind optimizer_kind(const std::string& name) {
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam, OptimizerKind::rmsprop})
        if (to_string(kind) == name) return kind;
    throw InvalidArgument("optimizer: unknown optimizer '" + name +
                          "'; the optimizers are: sgd, adam, rmsprop");
}

}  // namespace triptych::nn
