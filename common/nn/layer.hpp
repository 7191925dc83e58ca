// Layer: a step of a network, written once over Backend, so the same layer runs on every variant.
//
//   forward(x)   computes the output for a batch and keeps what backward will need;
//   backward(dy) takes dLoss/dOutput, writes the gradients of the layer's parameters (overwriting
//                the previous ones) and returns dLoss/dInput.
// The tensors a layer returns belong to it and stay valid until its next forward/backward.
#pragma once

#include <string>
#include <vector>

#include "common/backend.hpp"

namespace triptych::nn {

// A trainable tensor and its gradient, both on the layer's backend.
struct Parameter {
    std::string name;  // "dense.W"
    Tensor value;
    Tensor grad;
};

class Layer {
public:
    explicit Layer(const Backend& backend) : backend_(&backend) {}
    virtual ~Layer() = default;

    virtual std::string name() const = 0;
    virtual const Tensor& forward(const Tensor& x) = 0;
    virtual const Tensor& backward(const Tensor& dy) = 0;
    virtual std::vector<Parameter*> parameters() { return {}; }

    const Backend& backend() const { return *backend_; }

protected:
    // `t`, reallocated only when the shape changes (a new batch size), so steady-state training
    // allocates nothing.
    Tensor& ensure(Tensor& t, const Shape& shape) const {
        if (t.data() == nullptr || t.shape() != shape) t = backend_->allocate(shape);
        return t;
    }

private:
    const Backend* backend_;
};

}  // namespace triptych::nn
