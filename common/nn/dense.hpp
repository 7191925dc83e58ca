// Dense (fully connected) layer: y = act(x * W^T + b), with an optional fused activation.
//
//   x is (batch, in), W is (out, in), b is (out), y is (batch, out).
// Forward is one `dense_forward` call: on gpu_tiled and cpu_eigen_omp the bias and activation
// run in the GEMM's epilogue. Backward, with dz = dy * act'(z), act' read from the output y where
// that is enough (ReLU, sigmoid, tanh); for GELU, whose slope needs z, the forward keeps z: it runs
// dense_forward without the activation, then the activation on its own.
//   dW = dz^T * x   a GEMM (out, batch) x (batch, in): A = dz transposed
//   db = sum over the batch of dz   (bias_backward, a column sum)
//   dx = dz * W     a GEMM (batch, out) x (out, in)
// lessons/04_dense_layer derives these three.
#pragma once

#include <cstdint>

#include "common/nn/layer.hpp"

namespace triptych::nn {

// Initial weights: uniform in [-limit, limit], with limit = sqrt(6 / in) for ReLU (He et al.,
// 2015) and sqrt(6 / (in + out)) otherwise (Glorot and Bengio, 2010); biases start at 0.
class Dense final : public Layer {
public:
    Dense(const Backend& backend, std::int64_t in, std::int64_t out,
          Activation activation = Activation::none, std::uint64_t seed = 1);

    std::string name() const override;
    const Tensor& forward(const Tensor& x) override;
    const Tensor& backward(const Tensor& dy) override;
    std::vector<Parameter*> parameters() override { return {&W_, &b_}; }

    std::int64_t in() const { return in_; }
    std::int64_t out() const { return out_; }
    Activation activation() const { return activation_; }
    Parameter& weights() { return W_; }
    Parameter& bias() { return b_; }

private:
    std::int64_t in_, out_;
    Activation activation_;
    Parameter W_, b_;
    Tensor x_;  // the last input (kept for dW)
    Tensor y_;  // the last output (kept for act')
    Tensor z_;  // x * W^T + b, kept where act' needs it (backward_works_from_output is false)
    Tensor dz_, dx_;
};

// Activation layers on their own: y = act(x), dx = dy * act'(x), act' read from x or y, whichever
// the activation's backward pass takes (common/activations.hpp).
class ActivationLayer final : public Layer {
public:
    ActivationLayer(const Backend& backend, Activation activation);
    std::string name() const override { return to_string(activation_); }
    const Tensor& forward(const Tensor& x) override;
    const Tensor& backward(const Tensor& dy) override;

private:
    Activation activation_;
    Tensor x_, y_, dx_;
};

}  // namespace triptych::nn
