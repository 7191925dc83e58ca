// gpu_vendor pooling: only average forward is cuDNN's; the other passes stay Unsupported.
//   - Max pooling, both passes: cuDNN returns no argmax, which our interface hands from the
//     forward pass to the backward one; its backward finds each maximum again from x and y,
//     which max_pool2d_backward is not given.
//   - Average backward: cudnnPoolingBackward takes y and x as inputs, and its documentation
//     makes no exception for the average modes. avg_pool2d_backward is given neither, and
//     stand-ins would rest on cuDNN not reading them, which nothing promises.
#include "common/kernels.hpp"
#include "gpu/vendor/cudnn.hpp"

namespace triptych::gpu_vendor {
namespace {

void avg_pool2d_forward(const Pool2dShape& s, const float* x, float* y) {
    const PoolingDescriptor pooling = avg_pooling_descriptor(s);
    const TensorDescriptor input = tensor_descriptor(s.x_shape());
    const TensorDescriptor output = tensor_descriptor(s.y_shape());
    check_cudnn(cudnnPoolingForward(cudnn().handle.get(), pooling.get(), &alpha_one, input.get(), x,
                                    &beta_zero, output.get(), y),
                "cudnnPoolingForward " + s.str());
}

[[maybe_unused]] const bool registered =
    register_kernel("gpu_vendor", ops::avg_pool2d_forward,
                    {1, "cudnn", "cudnnPoolingForward, padding not counted", avg_pool2d_forward});

}  // namespace
}  // namespace triptych::gpu_vendor
