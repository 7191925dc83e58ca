// Conv2d layer: y = conv(x, W) + b over a batch of images, in NCHW.
//
//   x is (N, C, H, W), W is (K, C, R, S), b is (K), y is (N, K, P, Q); see Conv2dShape
//   (common/ops.hpp) for the definition, the padding and P, Q.
// Forward is one `conv2d_forward` call, the Conv2dShape built from x's shape, so one layer takes
// any batch size and image size. Backward, with dy (N, K, P, Q):
//   dW, db  conv2d_backward_weights: dW correlates x with dy, db sums dy over (n, p, q)
//   dx      conv2d_backward_data: dy spread back through W (a transposed convolution)
// All three passes use the same ConvAlgorithm, by default the backend's preferred one (the first
// of conv2d_algorithms()); lessons 08-10 derive the passes and the algorithms.
#pragma once

#include <cstdint>
#include <optional>

#include "common/nn/layer.hpp"

namespace triptych::nn {

// The layer's hyperparameters, named at the call site:
//   Conv2d conv(backend, {.in_channels = 1, .out_channels = 6, .kernel_h = 5, .kernel_w = 5,
//                         .pad_h = 2, .pad_w = 2});
struct Conv2dOptions {
    std::int64_t in_channels = 1, out_channels = 1;  // C and K
    std::int64_t kernel_h = 3, kernel_w = 3;         // R and S
    std::int64_t stride_h = 1, stride_w = 1;
    std::int64_t pad_h = 0, pad_w = 0;
    // The activation that follows the layer, which picks the initialisation (as Dense's does).
    Activation followed_by = Activation::relu;

    // The convolution these options make of an (N, in_channels, H, W) input.
    Conv2dShape shape(std::int64_t N, std::int64_t H, std::int64_t W) const {
        return Conv2dShape{.N = N,
                           .C = in_channels,
                           .H = H,
                           .W = W,
                           .K = out_channels,
                           .R = kernel_h,
                           .S = kernel_w,
                           .stride_h = stride_h,
                           .stride_w = stride_w,
                           .pad_h = pad_h,
                           .pad_w = pad_w};
    }
};

// Initial weights: uniform in [-limit, limit], with fan_in = C*R*S and fan_out = K*R*S (the inputs
// and outputs one weight touches), limit = sqrt(6 / fan_in) when ReLU follows (He et al., 2015)
// and sqrt(6 / (fan_in + fan_out)) otherwise (Glorot and Bengio, 2010); biases start at 0.
class Conv2d final : public Layer {
public:
    // `algorithm` defaults to the backend's preferred one; Unsupported if it has none. One it
    // lacks is refused by the first forward, with the list of those it has.
    Conv2d(const Backend& backend, const Conv2dOptions& options, std::uint64_t seed = 1,
           std::optional<ConvAlgorithm> algorithm = std::nullopt);

    std::string name() const override;
    // x must be (N, C, H, W) with C = in_channels (InvalidArgument otherwise).
    const Tensor& forward(const Tensor& x) override;
    const Tensor& backward(const Tensor& dy) override;
    std::vector<Parameter*> parameters() override { return {&W_, &b_}; }

    const Conv2dOptions& options() const { return options_; }
    ConvAlgorithm algorithm() const { return algorithm_; }
    Parameter& weights() { return W_; }
    Parameter& bias() { return b_; }

private:
    Conv2dOptions options_;
    ConvAlgorithm algorithm_;
    Parameter W_, b_;
    Conv2dShape shape_;  // of the last forward
    Tensor x_;           // the last input (kept for dW)
    Tensor y_, dx_;
};

// Throws InvalidArgument, naming `layer` and x's shape, unless x is rank 4: (N, C, H, W). Shared
// by the image layers (Conv2d, MaxPool2d, AvgPool2d).
void require_image_batch(const std::string& layer, const Tensor& x);

}  // namespace triptych::nn
