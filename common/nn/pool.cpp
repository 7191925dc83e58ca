#include "common/nn/pool.hpp"

#include "common/nn/conv.hpp"

namespace triptych::nn {

namespace {
// "max_pool2d 2x2 stride 2,2 pad 0,0"
std::string pool_name(const std::string& kind, const Pool2dOptions& o) {
    return kind + " " + std::to_string(o.window_h) + "x" + std::to_string(o.window_w) + " stride " +
           std::to_string(o.stride_h) + "," + std::to_string(o.stride_w) + " pad " +
           std::to_string(o.pad_h) + "," + std::to_string(o.pad_w);
}

// The Pool2dShape of `options` over x, validated: InvalidArgument naming the layer when x is not
// (N, C, H, W), naming `kind` and the values when the window does not fit.
Pool2dShape pool_shape(const std::string& kind, const Pool2dOptions& o, const Tensor& x) {
    require_image_batch(pool_name(kind, o), x);
    const Shape& in = x.shape();
    const Pool2dShape shape = o.shape(in[0], in[1], in[2], in[3]);
    shape.validate(kind);  // an image smaller than the window, before y is allocated P x Q
    return shape;
}

// On an image as large as the window: checks every option at construction.
void validate_options(const std::string& kind, const Pool2dOptions& o) {
    o.shape(1, 1, o.window_h, o.window_w).validate(kind);
}
}  // namespace

MaxPool2d::MaxPool2d(const Backend& backend, const Pool2dOptions& options)
    : Layer(backend), options_(options) {
    validate_options("max_pool2d", options);
}

std::string MaxPool2d::name() const { return pool_name("max_pool2d", options_); }

const Tensor& MaxPool2d::forward(const Tensor& x) {
    shape_ = pool_shape("max_pool2d", options_, x);
    backend().max_pool2d_forward(shape_, x, ensure(y_, shape_.y_shape()),
                                 ensure(argmax_, shape_.y_shape()));
    return y_;
}

const Tensor& MaxPool2d::backward(const Tensor& dy) {
    backend().max_pool2d_backward(shape_, dy, argmax_, ensure(dx_, shape_.x_shape()));
    return dx_;
}

AvgPool2d::AvgPool2d(const Backend& backend, const Pool2dOptions& options)
    : Layer(backend), options_(options) {
    validate_options("avg_pool2d", options);
}

std::string AvgPool2d::name() const { return pool_name("avg_pool2d", options_); }

const Tensor& AvgPool2d::forward(const Tensor& x) {
    shape_ = pool_shape("avg_pool2d", options_, x);
    backend().avg_pool2d_forward(shape_, x, ensure(y_, shape_.y_shape()));
    return y_;
}

const Tensor& AvgPool2d::backward(const Tensor& dy) {
    backend().avg_pool2d_backward(shape_, dy, ensure(dx_, shape_.x_shape()));
    return dx_;
}

}  // namespace triptych::nn
