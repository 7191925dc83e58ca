#include "common/nn/conv.hpp"

#include <vector>

#include "common/errors.hpp"

namespace triptych::nn {

namespace {
ConvAlgorithm preferred_algorithm(const Backend& backend) {
    const std::vector<ConvAlgorithm> have = backend.conv2d_algorithms();
    if (have.empty()) throw Unsupported(backend.name() + " does not implement conv2d");
    return have.front();
}
}  // namespace

Conv2d::Conv2d(const Backend& backend, const Conv2dOptions& options, std::uint64_t seed,
               std::optional<ConvAlgorithm> algorithm)
    : Layer(backend),
      options_(options),
      algorithm_(algorithm ? *algorithm : preferred_algorithm(backend)) {
    const std::int64_t C = options.in_channels, K = options.out_channels;
    const std::int64_t R = options.kernel_h, S = options.kernel_w;
    // On an image as large as the filter: checks every option now rather than at the first forward.
    options.shape(1, R, S).validate();
    const Shape w_shape{K, C, R, S};
    const std::vector<float> weights = initial_weights(
        w_shape.elements(), double(C * R * S), double(K * R * S), options.followed_by, seed);
    W_ = Parameter{"conv2d.W", backend.upload(w_shape, weights), backend.allocate(w_shape)};
    const std::vector<float> zeros(static_cast<std::size_t>(K), 0.0f);
    b_ = Parameter{"conv2d.b", backend.upload(Shape{K}, zeros), backend.allocate(Shape{K})};
}

std::string Conv2d::name() const {
    const Conv2dOptions& o = options_;
    return "conv2d " + std::to_string(o.in_channels) + "->" + std::to_string(o.out_channels) + " " +
           std::to_string(o.kernel_h) + "x" + std::to_string(o.kernel_w) + " stride " +
           std::to_string(o.stride_h) + "," + std::to_string(o.stride_w) + " pad " +
           std::to_string(o.pad_h) + "," + std::to_string(o.pad_w) + " " + to_string(algorithm_);
}

const Tensor& Conv2d::forward(const Tensor& x) {
    require_image_batch(name(), x);
    const Shape& in = x.shape();
    if (in[1] != options_.in_channels)
        throw InvalidArgument(name() + ": the input " + in.str() + " has " + std::to_string(in[1]) +
                              " channels, the layer expects " +
                              std::to_string(options_.in_channels));
    shape_ = options_.shape(in[0], in[2], in[3]);
    shape_.validate();  // an image smaller than the filter, before ensure allocates P x Q
    x_ = x;
    backend().conv2d_forward(shape_, algorithm_, x, W_.value, b_.value,
                             ensure(y_, shape_.y_shape()));
    return y_;
}

const Tensor& Conv2d::backward(const Tensor& dy) {
    backend().conv2d_backward_weights(shape_, algorithm_, x_, dy, W_.grad, b_.grad);
    if (!input_gradient()) {  // dx is not wanted: see Layer::set_input_gradient
        dx_ = Tensor();
        return dx_;
    }
    backend().conv2d_backward_data(shape_, algorithm_, dy, W_.value, ensure(dx_, x_.shape()));
    return dx_;
}

void require_image_batch(const std::string& layer, const Tensor& x) {
    if (x.shape().rank() != 4)
        throw InvalidArgument(layer + ": the input has shape " + x.shape().str() +
                              ", expected rank 4 (N, C, H, W)");
}

}  // namespace triptych::nn
