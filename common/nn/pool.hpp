// Pooling layers: a window slid over every channel of a batch of images, in NCHW.
//
//   x is (N, C, H, W), y is (N, C, P, Q); see Pool2dShape (common/ops.hpp) for P, Q and padding.
//   MaxPool2d  y = each window's largest input. Forward keeps the argmax (where each maximum was),
//              so backward routes dy to exactly those inputs without looking at x again.
//   AvgPool2d  y = each window's mean (padding not counted). Backward spreads dy evenly over the
//              window, which needs only the shape.
// Neither has parameters. The Pool2dShape is built from x's shape at each forward, so one layer
// takes any batch size and image size.
#pragma once

#include <cstdint>

#include "common/nn/layer.hpp"

namespace triptych::nn {

// The window, stride and padding, named at the call site: MaxPool2d pool(backend, {.stride_h = 1}).
// The defaults are the common 2x2 window at stride 2, which halves H and W.
struct Pool2dOptions {
    std::int64_t window_h = 2, window_w = 2;
    std::int64_t stride_h = 2, stride_w = 2;
    std::int64_t pad_h = 0, pad_w = 0;

    // The pooling these options make of an (N, C, H, W) input.
    Pool2dShape shape(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W) const {
        return Pool2dShape{.N = N,
                           .C = C,
                           .H = H,
                           .W = W,
                           .window_h = window_h,
                           .window_w = window_w,
                           .stride_h = stride_h,
                           .stride_w = stride_w,
                           .pad_h = pad_h,
                           .pad_w = pad_w};
    }
};

class MaxPool2d final : public Layer {
public:
    MaxPool2d(const Backend& backend, const Pool2dOptions& options = {});
    std::string name() const override;
    // x must be rank 4, (N, C, H, W) (InvalidArgument otherwise).
    const Tensor& forward(const Tensor& x) override;
    const Tensor& backward(const Tensor& dy) override;

private:
    Pool2dOptions options_;
    Pool2dShape shape_;  // of the last forward
    Tensor y_, argmax_, dx_;
};

class AvgPool2d final : public Layer {
public:
    AvgPool2d(const Backend& backend, const Pool2dOptions& options = {});
    std::string name() const override;
    // x must be rank 4, (N, C, H, W) (InvalidArgument otherwise).
    const Tensor& forward(const Tensor& x) override;
    const Tensor& backward(const Tensor& dy) override;

private:
    Pool2dOptions options_;
    Pool2dShape shape_;  // of the last forward
    Tensor y_, dx_;
};

}  // namespace triptych::nn
