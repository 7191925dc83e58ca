// gpu_vendor bias: a dense layer's bias and its gradient, as cuDNN's tensor operations.
//   bias_add:      y[i, j] = x[i, j] + bias[j]   cudnnOpTensor ADD (cudnnAddTensor in place)
//   bias_backward: dbias[j] = sum_i dy[i, j]     cudnnConvolutionBackwardBias
// Both see a (rows, cols) matrix as a (rows, cols, 1, 1) NCHW tensor, so a column is a channel and
// the bias a (1, cols, 1, 1) tensor: cudnnOpTensor broadcasts a tensor of B whose size is 1 in a
// dimension where C's is not, and a convolution's bias gradient sums dy over N, H and W for each
// channel, which for H = W = 1 is a column sum.
// cuDNN does not say in what order it adds a column, so bias_backward is registered as adding in
// arrival order: the last bits may change from run to run.
#include <string>

#include "common/kernels.hpp"
#include "common/shape.hpp"
#include "gpu/vendor/cudnn.hpp"

namespace triptych::gpu_vendor {
namespace {

using OpTensorDescriptor = Owned<cudnnOpTensorDescriptor_t, cudnnDestroyOpTensorDescriptor>;

// C = alpha1 * A + alpha2 * B (+ beta * C), in float, NaN propagated as our kernels do.
const OpTensorDescriptor& add_operation() {
    static const OpTensorDescriptor descriptor = [] {
        cudnnOpTensorDescriptor_t raw = nullptr;
        check_cudnn(cudnnCreateOpTensorDescriptor(&raw), "cudnnCreateOpTensorDescriptor");
        OpTensorDescriptor owned(raw);
        check_cudnn(cudnnSetOpTensorDescriptor(raw, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT,
                                               CUDNN_PROPAGATE_NAN),
                    "cudnnSetOpTensorDescriptor ADD");
        return owned;
    }();
    return descriptor;
}

// y may be x. Out of place, cudnnOpTensor writes y = x + bias with beta = 0, not reading y
// (which may hold NaN). In place, cudnnAddTensor adds the bias to y where it is (C = alpha * A +
// beta * C with beta = 1), the case it is made for, rather than trusting cudnnOpTensor with C = A.
void bias_add(std::int64_t rows, std::int64_t cols, const float* x, const float* bias, float* y) {
    const TensorDescriptor matrix = tensor_descriptor(Shape{rows, cols, 1, 1});
    const TensorDescriptor row = tensor_descriptor(Shape{1, cols, 1, 1});
    const std::string what = Shape{rows, cols}.str();
    if (x == y) {
        const float beta_one = 1.0f;
        check_cudnn(cudnnAddTensor(cudnn().handle.get(), &alpha_one, row.get(), bias, &beta_one,
                                   matrix.get(), y),
                    "cudnnAddTensor " + what);
        return;
    }
    check_cudnn(cudnnOpTensor(cudnn().handle.get(), add_operation().get(), &alpha_one, matrix.get(),
                              x, &alpha_one, row.get(), bias, &beta_zero, matrix.get(), y),
                "cudnnOpTensor ADD " + what);
}

void bias_backward(std::int64_t rows, std::int64_t cols, const float* dy, float* dbias) {
    const TensorDescriptor matrix = tensor_descriptor(Shape{rows, cols, 1, 1});
    const TensorDescriptor row = tensor_descriptor(Shape{1, cols, 1, 1});
    check_cudnn(cudnnConvolutionBackwardBias(cudnn().handle.get(), &alpha_one, matrix.get(), dy,
                                             &beta_zero, row.get(), dbias),
                "cudnnConvolutionBackwardBias " + Shape{rows, cols}.str());
}

[[maybe_unused]] const bool registered =
    register_kernel(
        "gpu_vendor", ops::bias_add,
        {1, "cudnn",
         "cudnnOpTensor ADD (cudnnAddTensor in place): the bias broadcast over the rows",
         bias_add}) &&
    register_kernel("gpu_vendor", ops::bias_backward,
                    {1, "cudnn", "cudnnConvolutionBackwardBias: each column a channel",
                     bias_backward, AdditionOrder::arrival});

}  // namespace
}  // namespace triptych::gpu_vendor
