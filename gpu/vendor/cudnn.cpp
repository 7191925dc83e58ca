// See cudnn.hpp.
#include "gpu/vendor/cudnn.hpp"

#include <climits>

#include "common/errors.hpp"
#include "gpu/runtime/stream.hpp"

namespace triptych::gpu_vendor {

void check_cudnn(cudnnStatus_t status, const std::string& what) {
    if (status == CUDNN_STATUS_SUCCESS) return;
    // The status names the kind of error; the last message says which argument and why.
    char message[512] = "";
    cudnnGetLastErrorString(message, sizeof(message));
    throw CudaError(what + ": " + cudnnGetErrorString(status) + (message[0] ? ": " : "") + message);
}

bool not_supported(cudnnStatus_t status) {
    return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED;
}

CudnnHandle create_cudnn_handle() {
    cudnnHandle_t handle = nullptr;
    check_cudnn(cudnnCreate(&handle), "cudnnCreate");
    return CudnnHandle(handle);
}

Cudnn& cudnn() {
    static Cudnn state;
    // Its work goes to the calling thread's current stream, as our kernels' do.
    check_cudnn(cudnnSetStream(state.handle.get(),
                               static_cast<cudaStream_t>(gpu::current_stream().handle())),
                "cudnnSetStream");
    return state;
}

namespace {
// cuDNN's legacy descriptors take int sizes.
int to_int(std::int64_t size, const std::string& what) {
    if (size > INT_MAX)
        throw Unsupported("gpu_vendor: cuDNN takes sizes as int; " + what + " is " +
                          std::to_string(size));
    return static_cast<int>(size);
}
}  // namespace

TensorDescriptor tensor_descriptor(const Shape& nchw) {
    cudnnTensorDescriptor_t raw = nullptr;
    check_cudnn(cudnnCreateTensorDescriptor(&raw), "cudnnCreateTensorDescriptor");
    TensorDescriptor descriptor(raw);
    const std::string what = "tensor " + nchw.str();
    check_cudnn(cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                           to_int(nchw[0], what), to_int(nchw[1], what),
                                           to_int(nchw[2], what), to_int(nchw[3], what)),
                "cudnnSetTensor4dDescriptor " + what);
    return descriptor;
}

FilterDescriptor filter_descriptor(const Conv2dShape& s) {
    cudnnFilterDescriptor_t raw = nullptr;
    check_cudnn(cudnnCreateFilterDescriptor(&raw), "cudnnCreateFilterDescriptor");
    FilterDescriptor descriptor(raw);
    const std::string what = "filters " + s.w_shape().str();
    // Unlike cudnnSetTensor4dDescriptor, the data type comes before the format here.
    check_cudnn(
        cudnnSetFilter4dDescriptor(raw, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, to_int(s.K, what),
                                   to_int(s.C, what), to_int(s.R, what), to_int(s.S, what)),
        "cudnnSetFilter4dDescriptor " + what);
    return descriptor;
}

ConvolutionDescriptor convolution_descriptor(const Conv2dShape& s) {
    cudnnConvolutionDescriptor_t raw = nullptr;
    check_cudnn(cudnnCreateConvolutionDescriptor(&raw), "cudnnCreateConvolutionDescriptor");
    ConvolutionDescriptor descriptor(raw);
    const std::string what = "convolution " + s.str();
    const int dilation = 1;
    check_cudnn(cudnnSetConvolution2dDescriptor(raw, to_int(s.pad_h, what), to_int(s.pad_w, what),
                                                to_int(s.stride_h, what), to_int(s.stride_w, what),
                                                dilation, dilation, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT),
                "cudnnSetConvolution2dDescriptor " + what);
    // CUDNN_DEFAULT_MATH lets cuDNN run float convolutions on TF32 tensor cores (Ampere and
    // later), which round the inputs to 10 mantissa bits. CUDNN_FMA_MATH keeps to FP32 FMA
    // kernels, the arithmetic of our own kernels, so the ceiling measures the same work (as
    // CUBLAS_DEFAULT_MATH does for the GEMM, see backend.cpp).
    check_cudnn(cudnnSetConvolutionMathType(raw, CUDNN_FMA_MATH),
                "cudnnSetConvolutionMathType " + what);
    return descriptor;
}

PoolingDescriptor avg_pooling_descriptor(const Pool2dShape& s) {
    cudnnPoolingDescriptor_t raw = nullptr;
    check_cudnn(cudnnCreatePoolingDescriptor(&raw), "cudnnCreatePoolingDescriptor");
    PoolingDescriptor descriptor(raw);
    const std::string what = "pooling " + s.str();
    // The NaN option concerns max pooling only.
    check_cudnn(cudnnSetPooling2dDescriptor(
                    raw, CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN,
                    to_int(s.window_h, what), to_int(s.window_w, what), to_int(s.pad_h, what),
                    to_int(s.pad_w, what), to_int(s.stride_h, what), to_int(s.stride_w, what)),
                "cudnnSetPooling2dDescriptor " + what);
    return descriptor;
}

ActivationDescriptor activation_descriptor(cudnnActivationMode_t mode) {
    cudnnActivationDescriptor_t raw = nullptr;
    check_cudnn(cudnnCreateActivationDescriptor(&raw), "cudnnCreateActivationDescriptor");
    ActivationDescriptor descriptor(raw);
    // PROPAGATE_NAN: ReLU of NaN is NaN, the rule of common/activations.hpp. The coefficient (a
    // clipped ReLU's ceiling, ELU's alpha) means nothing to ReLU, sigmoid and tanh.
    const double unused_coefficient = 0.0;
    check_cudnn(cudnnSetActivationDescriptor(raw, mode, CUDNN_PROPAGATE_NAN, unused_coefficient),
                "cudnnSetActivationDescriptor");
    return descriptor;
}

}  // namespace triptych::gpu_vendor
