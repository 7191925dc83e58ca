#include "common/nn/flatten.hpp"

#include "common/errors.hpp"

namespace triptych::nn {

const Tensor& Flatten::forward(const Tensor& x) {
    const Shape& in = x.shape();
    if (in.rank() < 2)
        throw InvalidArgument("flatten: the input has shape " + in.str() +
                              ", expected rank >= 2 (a batch dimension, then the features)");
    input_shape_ = in;
    y_ = x.reshaped(Shape{in[0], x.elements() / in[0]});
    return y_;
}

const Tensor& Flatten::backward(const Tensor& dy) {
    dx_ = dy.reshaped(input_shape_);
    return dx_;
}

}  // namespace triptych::nn
