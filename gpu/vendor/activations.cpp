// gpu_vendor activations and softmax: cuDNN's cudnnActivationForward/Backward and
// cudnnSoftmaxForward/Backward. In place (y == x, or dx == dy) is allowed because both sides
// share one descriptor, as cuDNN requires.
#include <string>

#include "common/kernels.hpp"
#include "common/shape.hpp"
#include "gpu/vendor/cudnn.hpp"

namespace triptych::gpu_vendor {
namespace {

// n floats as the 4D tensor cuDNN's elementwise ops take: any dense shape of n elements serves.
TensorDescriptor vector_descriptor(std::int64_t n) { return tensor_descriptor(Shape{n, 1, 1, 1}); }

template <cudnnActivationMode_t mode>
const ActivationDescriptor& activation() {
    static const ActivationDescriptor descriptor = activation_descriptor(mode);
    return descriptor;
}

template <cudnnActivationMode_t mode>
void activation_forward(std::int64_t n, const float* x, float* y) {
    const TensorDescriptor vector = vector_descriptor(n);
    check_cudnn(cudnnActivationForward(cudnn().handle.get(), activation<mode>().get(), &alpha_one,
                                       vector.get(), x, &beta_zero, vector.get(), y),
                "cudnnActivationForward (n = " + std::to_string(n) + ")");
}

// `y` is the output cuDNN's formula reads. Sigmoid's and tanh's derivatives come from the
// output: dy * y * (1 - y), dy * (1 - y^2); cuDNN computes them from y, and x, in its signature
// for activations that need it, is given y. ReLU's backward takes x, not y; but y = max(x, 0) is
// > 0 exactly where x > 0 (at x == 0 both give gradient 0), so x stands in for y.
template <cudnnActivationMode_t mode>
void activation_backward(std::int64_t n, const float* y, const float* dy, float* dx) {
    const TensorDescriptor vector = vector_descriptor(n);
    const float* x = y;
    check_cudnn(cudnnActivationBackward(cudnn().handle.get(), activation<mode>().get(), &alpha_one,
                                        vector.get(), y, vector.get(), dy, vector.get(), x,
                                        &beta_zero, vector.get(), dx),
                "cudnnActivationBackward (n = " + std::to_string(n) + ")");
}

// Softmax over each row: (rows, cols) described as (rows, cols, 1, 1), and INSTANCE mode
// normalises each n over its C * H * W = cols values. ACCURATE subtracts the row max first,
// as ours does (FAST would not; LOG would give log-softmax).
void softmax_forward(std::int64_t rows, std::int64_t cols, const float* x, float* y) {
    const TensorDescriptor matrix = tensor_descriptor(Shape{rows, cols, 1, 1});
    check_cudnn(cudnnSoftmaxForward(cudnn().handle.get(), CUDNN_SOFTMAX_ACCURATE,
                                    CUDNN_SOFTMAX_MODE_INSTANCE, &alpha_one, matrix.get(), x,
                                    &beta_zero, matrix.get(), y),
                "cudnnSoftmaxForward " + Shape{rows, cols}.str());
}

// dx = y * (dy - sum(dy * y)) per row, from the output, as Backend defines it.
void softmax_backward(std::int64_t rows, std::int64_t cols, const float* y, const float* dy,
                      float* dx) {
    const TensorDescriptor matrix = tensor_descriptor(Shape{rows, cols, 1, 1});
    check_cudnn(cudnnSoftmaxBackward(cudnn().handle.get(), CUDNN_SOFTMAX_ACCURATE,
                                     CUDNN_SOFTMAX_MODE_INSTANCE, &alpha_one, matrix.get(), y,
                                     matrix.get(), dy, &beta_zero, matrix.get(), dx),
                "cudnnSoftmaxBackward " + Shape{rows, cols}.str());
}

[[maybe_unused]] const bool registered =
    register_kernel(
        "gpu_vendor", ops::relu_forward,
        {1, "cudnn", "cudnnActivationForward", activation_forward<CUDNN_ACTIVATION_RELU>}) &&
    register_kernel(
        "gpu_vendor", ops::relu_backward,
        {1, "cudnn", "cudnnActivationBackward", activation_backward<CUDNN_ACTIVATION_RELU>}) &&
    register_kernel(
        "gpu_vendor", ops::sigmoid_forward,
        {1, "cudnn", "cudnnActivationForward", activation_forward<CUDNN_ACTIVATION_SIGMOID>}) &&
    register_kernel(
        "gpu_vendor", ops::sigmoid_backward,
        {1, "cudnn", "cudnnActivationBackward", activation_backward<CUDNN_ACTIVATION_SIGMOID>}) &&
    register_kernel(
        "gpu_vendor", ops::tanh_forward,
        {1, "cudnn", "cudnnActivationForward", activation_forward<CUDNN_ACTIVATION_TANH>}) &&
    register_kernel(
        "gpu_vendor", ops::tanh_backward,
        {1, "cudnn", "cudnnActivationBackward", activation_backward<CUDNN_ACTIVATION_TANH>}) &&
    register_kernel(
        "gpu_vendor", ops::softmax_forward,
        {1, "cudnn", "cudnnSoftmaxForward, ACCURATE (the row max subtracted)", softmax_forward}) &&
    register_kernel("gpu_vendor", ops::softmax_backward,
                    {1, "cudnn", "cudnnSoftmaxBackward", softmax_backward});

}  // namespace
}  // namespace triptych::gpu_vendor
