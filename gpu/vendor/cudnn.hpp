// cuDNN for gpu_vendor: error checking, owned handles and descriptors. (The workspace some
// convolution algorithms need is gpu::workspace, the scratch memory every GPU op shares.)
//
// cuDNN describes every tensor with a descriptor (sizes, strides, data type) instead of taking
// sizes as arguments. Ours are all dense NCHW float tensors, so one helper builds them from a
// rank-4 Shape; filters (K, C, R, S), convolutions and pooling windows have their own descriptor
// types. We use cuDNN's legacy API (cudnnConvolutionForward, cudnnPoolingForward, ...): cuDNN 9
// marks most of it deprecated in favour of its graph API, but still ships it, and one call per op
// reads far more plainly than building a graph.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "common/ops.hpp"
#include "common/shape.hpp"
#include "gpu/vendor/owned.hpp"

namespace triptych::gpu_vendor {

// Throws CudaError("<what>: CUDNN_STATUS_...: <cuDNN's last message>") unless `status` is success.
void check_cudnn(cudnnStatus_t status, const std::string& what);
// Whether `status` says cuDNN has no implementation for the request (the shape, the algorithm),
// as opposed to a failure: cuDNN 9 codes are grouped by thousands, NOT_SUPPORTED_SHAPE and the
// others of the 3000s all count.
bool not_supported(cudnnStatus_t status);

using CudnnHandle = Owned<cudnnHandle_t, cudnnDestroy>;
using TensorDescriptor = Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor = Owned<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
using ActivationDescriptor = Owned<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;

CudnnHandle create_cudnn_handle();
// A dense NCHW float tensor of a rank-4 shape. cuDNN takes int sizes: a larger one is Unsupported.
TensorDescriptor tensor_descriptor(const Shape& nchw);
// The filters w (K, C, R, S) of a convolution.
FilterDescriptor filter_descriptor(const Conv2dShape& s);
// Cross-correlation (no filter flip, as Conv2dShape defines it), zero padding, stride, no
// dilation, float accumulation, and FP32 FMA math only (see convolution_descriptor in cudnn.cpp).
ConvolutionDescriptor convolution_descriptor(const Conv2dShape& s);
// An average over each window's input elements, padding not counted (Pool2dShape's definition).
PoolingDescriptor avg_pooling_descriptor(const Pool2dShape& s);
ActivationDescriptor activation_descriptor(cudnnActivationMode_t mode);

// cuDNN's scaling factors, read from host memory: out = alpha * op(in) + beta * out. Every op
// passes alpha = 1, beta = 0, which overwrites out without reading it (ours may hold NaN).
inline constexpr float alpha_one = 1.0f;
inline constexpr float beta_zero = 0.0f;

// Everything gpu_vendor's cuDNN calls share.
struct Cudnn {
    CudnnHandle handle = create_cudnn_handle();
    // For ConvAlgorithm::direct, the cuDNN algorithm that cudnnFind* timed fastest, per
    // "<pass> <shape>" (see conv2d.cpp): finding runs every algorithm, so it runs once a shape.
    std::map<std::string, int> fastest_algorithm;
};

// The process's cuDNN state, made on first use. Like the handle inside it, it is not for use from
// two host threads at once.
Cudnn& cudnn();

}  // namespace triptych::gpu_vendor
