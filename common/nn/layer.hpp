// Layer: a step of a network, written once over Backend, so the same layer runs on every variant.
//
//   forward(x)   computes the output for a batch and keeps what backward will need;
//   backward(dy) takes dLoss/dOutput, writes the gradients of the layer's parameters (overwriting
//                the previous ones) and returns dLoss/dInput.
// The tensors a layer returns belong to it and stay valid until its next forward/backward.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/random.hpp"

namespace triptych::nn {

// A trainable tensor and its gradient, both on the layer's backend.
struct Parameter {
    std::string name;  // "dense.W"
    Tensor value;
    Tensor grad;
};

// A layer's initial weights: `count` values uniform in [-limit, limit], drawn from `seed`, with
// limit = sqrt(6 / fan_in) when a ReLU follows (He et al., 2015) and sqrt(6 / (fan_in + fan_out))
// otherwise (Glorot and Bengio, 2010). Both keep the variance of the signal about the same from
// layer to layer, so that a deep stack neither explodes nor dies at the start of training.
inline std::vector<float> initial_weights(std::int64_t count, double fan_in, double fan_out,
                                          Activation followed_by, std::uint64_t seed) {
    const double limit = followed_by == Activation::relu ? std::sqrt(6.0 / fan_in)
                                                         : std::sqrt(6.0 / (fan_in + fan_out));
    std::vector<float> weights(static_cast<std::size_t>(count));
    Rng rng(seed);
    rng.uniform(weights, float(-limit), float(limit));
    return weights;
}

class Layer {
public:
    explicit Layer(const Backend& backend) : backend_(&backend) {}
    virtual ~Layer() = default;

    virtual std::string name() const = 0;
    virtual const Tensor& forward(const Tensor& x) = 0;
    virtual const Tensor& backward(const Tensor& dy) = 0;
    virtual std::vector<Parameter*> parameters() { return {}; }

    const Backend& backend() const { return *backend_; }

    // Whether backward must compute dLoss/dInput. A model's first layer has no layer before it to
    // pass that to: Sequential turns it off there, and backward may then return an empty tensor
    // (Dense and Conv2d skip their dx GEMM / backward-data pass).
    void set_input_gradient(bool needed) { input_gradient_ = needed; }
    bool input_gradient() const { return input_gradient_; }

protected:
    // `t`, reallocated only when the shape changes (a new batch size), so steady-state training
    // allocates nothing.
    Tensor& ensure(Tensor& t, const Shape& shape) const {
        if (t.data() == nullptr || t.shape() != shape) t = backend_->allocate(shape);
        return t;
    }

private:
    const Backend* backend_;
    bool input_gradient_ = true;
};

}  // namespace triptych::nn
