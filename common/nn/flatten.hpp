// Flatten: (N, d1, d2, ...) -> (N, d1 * d2 * ...), the step from image layers to dense layers.
//
// Row-major storage makes the flattened tensor the same bytes in the same order, so both passes
// are views (Tensor::reshaped) of their argument's buffer: nothing is copied, nothing computed.
// Backward gives dy the input's shape back.
#pragma once

#include "common/nn/layer.hpp"

namespace triptych::nn {

class Flatten final : public Layer {
public:
    explicit Flatten(const Backend& backend) : Layer(backend) {}
    std::string name() const override { return "flatten"; }
    // x must have rank >= 2, a batch dimension first (InvalidArgument otherwise).
    const Tensor& forward(const Tensor& x) override;
    const Tensor& backward(const Tensor& dy) override;

private:
    Shape input_shape_;  // of the last forward
    Tensor y_, dx_;      // views of x and dy
};

}  // namespace triptych::nn
