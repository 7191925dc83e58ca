#include "common/nn/dense.hpp"

#include <vector>

namespace triptych::nn {

Dense::Dense(const Backend& backend, std::int64_t in, std::int64_t out, Activation activation,
             std::uint64_t seed)
    : Layer(backend), in_(in), out_(out), activation_(activation) {
    DenseShape{1, in, out, activation}.validate();
    const std::vector<float> weights =
        initial_weights(in * out, double(in), double(out), activation, seed);
    W_ = Parameter{"dense.W", backend.upload(Shape{out, in}, weights),
                   backend.allocate(Shape{out, in})};
    const std::vector<float> zeros(static_cast<std::size_t>(out), 0.0f);
    b_ = Parameter{"dense.b", backend.upload(Shape{out}, zeros), backend.allocate(Shape{out})};
}

std::string Dense::name() const {
    return "dense " + std::to_string(in_) + "->" + std::to_string(out_) +
           (activation_ == Activation::none ? "" : " " + to_string(activation_));
}

const Tensor& Dense::forward(const Tensor& x) {
    x_ = x;
    ensure(y_, Shape{x.shape()[0], out_});
    if (backward_works_from_output(activation_)) {
        backend().dense_forward(x, W_.value, b_.value, activation_, y_);
    } else {
        backend().dense_forward(x, W_.value, b_.value, Activation::none, ensure(z_, y_.shape()));
        backend().activation_forward(activation_, z_, y_);
    }
    return y_;
}

const Tensor& Dense::backward(const Tensor& dy) {
    const std::int64_t batch = x_.shape()[0];
    // dz = dy * act'(z); with no activation dz is dy itself.
    const Tensor* dz = &dy;
    if (activation_ != Activation::none) {
        // ReLU's mask is read from y (y > 0 exactly where z > 0); sigmoid and tanh take y.
        const Tensor& in = backward_works_from_output(activation_) ? y_ : z_;
        backend().activation_backward(activation_, in, dy, ensure(dz_, dy.shape()));
        dz = &dz_;
    }
    // dW = dz^T x: (out, batch) x (batch, in).
    backend().gemm(GemmShape{out_, in_, batch, true, false, 1.0f, 0.0f}, *dz, x_, W_.grad);
    backend().bias_backward(*dz, b_.grad);
    if (!input_gradient()) {  // dx is not wanted: see Layer::set_input_gradient
        dx_ = Tensor();
        return dx_;
    }
    // dx = dz W: (batch, out) x (out, in).
    backend().gemm(GemmShape{batch, in_, out_, false, false, 1.0f, 0.0f}, *dz, W_.value,
                   ensure(dx_, x_.shape()));
    return dx_;
}

ActivationLayer::ActivationLayer(const Backend& backend, Activation activation)
    : Layer(backend), activation_(activation) {}

const Tensor& ActivationLayer::forward(const Tensor& x) {
    x_ = x;
    if (activation_ == Activation::none) {
        y_ = x;
        return y_;
    }
    backend().activation_forward(activation_, x, ensure(y_, x.shape()));
    return y_;
}

const Tensor& ActivationLayer::backward(const Tensor& dy) {
    if (activation_ == Activation::none) return dy;
    const Tensor& in = backward_takes_output(activation_) ? y_ : x_;
    backend().activation_backward(activation_, in, dy, ensure(dx_, dy.shape()));
    return dx_;
}

}  // namespace triptych::nn
