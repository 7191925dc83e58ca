// gpu_vendor: NVIDIA's libraries, the ceiling every hand-written kernel is measured against.
// Built only for a real GPU (TRIPTYCH_GPU=cuda). GEMM is cuBLAS; ReLU, sigmoid, tanh, softmax,
// conv2d (conv2d.cpp) and average pooling forward are cuDNN (cudnn.hpp). The other ops throw
// Unsupported (see Backend), so checks and benchmarks skip them; the class says why for pooling.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "gpu/runtime/gpu_backend.hpp"
#include "gpu/vendor/conv2d.hpp"
#include "gpu/vendor/cudnn.hpp"
#include "gpu/vendor/owned.hpp"

namespace triptych::gpu_vendor {
namespace {

// Throws CudaError("<what>: CUBLAS_STATUS_...: <cuBLAS's explanation>") unless `status` is success.
void check_cublas(cublasStatus_t status, const std::string& what) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    throw CudaError(what + ": " + cublasGetStatusName(status) + ": " +
                    cublasGetStatusString(status));
}

// The cuBLAS handle, destroyed with the backend.
using CublasHandle = Owned<cublasHandle_t, cublasDestroy>;

CublasHandle create_cublas_handle() {
    cublasHandle_t handle = nullptr;
    check_cublas(cublasCreate(&handle), "cublasCreate");
    CublasHandle owned(handle);
    // Plain FP32, so that the ceiling is measured on the same arithmetic as our kernels.
    // CUBLAS_DEFAULT_MATH never lowers the precision of sgemm: TF32 tensor cores need
    // CUBLAS_TF32_TENSOR_OP_MATH, BF16x9 emulation CUBLAS_FP32_EMULATED_BF16X9_MATH.
    // CUBLAS_PEDANTIC_MATH would also be FP32, but may pick slower kernels, flattering ours.
    check_cublas(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return owned;
}

// n floats as the 4D tensor cuDNN's elementwise ops take: any dense shape of n elements serves.
TensorDescriptor vector_descriptor(std::int64_t n) {
    return tensor_descriptor(Shape{n, 1, 1, 1});
}

class GpuVendor final : public gpu::GpuBackend {
  public:
    std::string name() const override { return "gpu_vendor"; }

    // direct is cuDNN's fastest algorithm for the shape, the true ceiling, so it comes first.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::fft};
    }

  protected:
    // cuBLAS is column-major; our matrices are row-major. A row-major (R, C) matrix, read as
    // column-major, is its transpose (C, R) with leading dimension C, at no cost. So we ask cuBLAS
    // for C^T = op(B)^T * op(A)^T, an N x M column-major product, which lands in memory exactly
    // as the row-major M x N C:
    //   - B stored (K, N) reads as B^T = op(B)^T: no transpose, ld N. Stored (N, K) (trans_b):
    //     reads as op(B), so cuBLAS transposes it, ld K. Likewise for A, with M.
    //   - The operands swap places: B comes first.
    // beta == 0 follows BLAS: C is not read.
    void gemm_impl(const GemmShape& s, const float* A, const float* B, float* C) const override {
        const cublasOperation_t op_b = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasOperation_t op_a = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        const std::int64_t ld_b = s.trans_b ? s.K : s.N;
        const std::int64_t ld_a = s.trans_a ? s.M : s.K;
        // The _64 entry point takes 64-bit sizes, so no dimension can overflow an int.
        check_cublas(cublasSgemm_64(cublas_.get(), op_b, op_a, s.N, s.M, s.K, &s.alpha, B, ld_b, A,
                                    ld_a, &s.beta, C, s.N),
                     "cublasSgemm " + s.str());
    }

    // Activations: cudnnActivationForward and cudnnActivationBackward. In place (y == x, or
    // dx == dy) is allowed because both sides share one descriptor, as cuDNN requires.
    void relu_forward_impl(std::int64_t n, const float* x, float* y) const override {
        activation_forward(relu_, "relu_forward", n, x, y);
    }
    // cuDNN's backward takes y and x, and passes dy where y > 0. We have x, not y; but y = max(x,
    // 0) is > 0 exactly where x > 0 (at x == 0 both give gradient 0), so x stands in for y.
    void relu_backward_impl(std::int64_t n, const float* x, const float* dy,
                            float* dx) const override {
        activation_backward(relu_, "relu_backward", n, x, dy, dx);
    }
    void sigmoid_forward_impl(std::int64_t n, const float* x, float* y) const override {
        activation_forward(sigmoid_, "sigmoid_forward", n, x, y);
    }
    // Sigmoid's and tanh's derivatives come from the output: dy * y * (1 - y), dy * (1 - y^2).
    // cuDNN computes them from y; x, in its signature for activations that need it, is given y.
    void sigmoid_backward_impl(std::int64_t n, const float* y, const float* dy,
                               float* dx) const override {
        activation_backward(sigmoid_, "sigmoid_backward", n, y, dy, dx);
    }
    void tanh_forward_impl(std::int64_t n, const float* x, float* y) const override {
        activation_forward(tanh_, "tanh_forward", n, x, y);
    }
    void tanh_backward_impl(std::int64_t n, const float* y, const float* dy,
                            float* dx) const override {
        activation_backward(tanh_, "tanh_backward", n, y, dy, dx);
    }

    // Softmax over each row: (rows, cols) described as (rows, cols, 1, 1), and INSTANCE mode
    // normalises each n over its C * H * W = cols values. ACCURATE subtracts the row max first,
    // as ours does (FAST would not; LOG would give log-softmax).
    void softmax_forward_impl(std::int64_t rows, std::int64_t cols, const float* x,
                              float* y) const override {
        const TensorDescriptor matrix = tensor_descriptor(Shape{rows, cols, 1, 1});
        check_cudnn(cudnnSoftmaxForward(cudnn_.handle.get(), CUDNN_SOFTMAX_ACCURATE,
                                        CUDNN_SOFTMAX_MODE_INSTANCE, &alpha_one, matrix.get(), x,
                                        &beta_zero, matrix.get(), y),
                    "cudnnSoftmaxForward " + Shape{rows, cols}.str());
    }
    // dx = y * (dy - sum(dy * y)) per row, from the output, as Backend defines it.
    void softmax_backward_impl(std::int64_t rows, std::int64_t cols, const float* y,
                               const float* dy, float* dx) const override {
        const TensorDescriptor matrix = tensor_descriptor(Shape{rows, cols, 1, 1});
        check_cudnn(cudnnSoftmaxBackward(cudnn_.handle.get(), CUDNN_SOFTMAX_ACCURATE,
                                         CUDNN_SOFTMAX_MODE_INSTANCE, &alpha_one, matrix.get(), y,
                                         matrix.get(), dy, &beta_zero, matrix.get(), dx),
                    "cudnnSoftmaxBackward " + Shape{rows, cols}.str());
    }

    void conv2d_forward_impl(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                             const float* w, const float* b, float* y) const override {
        gpu_vendor::conv2d_forward(cudnn_, s, algorithm, x, w, b, y);
    }
    void conv2d_backward_data_impl(const Conv2dShape& s, ConvAlgorithm algorithm, const float* dy,
                                   const float* w, float* dx) const override {
        gpu_vendor::conv2d_backward_data(cudnn_, s, algorithm, dy, w, dx);
    }
    void conv2d_backward_weights_impl(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                                      const float* dy, float* dw, float* db) const override {
        gpu_vendor::conv2d_backward_weights(cudnn_, s, algorithm, x, dy, dw, db);
    }

    // Pooling: only average forward is cuDNN's; the other passes stay Unsupported.
    //   - Max pooling, both passes: cuDNN returns no argmax, which our interface hands from the
    //     forward pass to the backward one; its backward finds each maximum again from x and y,
    //     which max_pool2d_backward is not given.
    //   - Average backward: cudnnPoolingBackward takes y and x as inputs, and its documentation
    //     makes no exception for the average modes. avg_pool2d_backward is given neither, and
    //     stand-ins would rest on cuDNN not reading them, which nothing promises.
    void avg_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y) const override {
        const PoolingDescriptor pooling = avg_pooling_descriptor(s);
        const TensorDescriptor input = tensor_descriptor(s.x_shape());
        const TensorDescriptor output = tensor_descriptor(s.y_shape());
        check_cudnn(cudnnPoolingForward(cudnn_.handle.get(), pooling.get(), &alpha_one, input.get(),
                                        x, &beta_zero, output.get(), y),
                    "cudnnPoolingForward " + s.str());
    }

  private:
    void activation_forward(const ActivationDescriptor& activation, const std::string& op,
                            std::int64_t n, const float* x, float* y) const {
        const TensorDescriptor vector = vector_descriptor(n);
        check_cudnn(cudnnActivationForward(cudnn_.handle.get(), activation.get(), &alpha_one,
                                           vector.get(), x, &beta_zero, vector.get(), y),
                    "cudnnActivationForward (" + op + ", n = " + std::to_string(n) + ")");
    }
    // `y` is the output cuDNN's formula reads; the callers above say what they pass.
    void activation_backward(const ActivationDescriptor& activation, const std::string& op,
                             std::int64_t n, const float* y, const float* dy, float* dx) const {
        const TensorDescriptor vector = vector_descriptor(n);
        const float* x = y;
        check_cudnn(cudnnActivationBackward(cudnn_.handle.get(), activation.get(), &alpha_one,
                                            vector.get(), y, vector.get(), dy, vector.get(), x,
                                            &beta_zero, vector.get(), dx),
                    "cudnnActivationBackward (" + op + ", n = " + std::to_string(n) + ")");
    }

    CublasHandle cublas_ = create_cublas_handle();
    // Mutable: the convolutions remember cuDNN's fastest algorithms, state that changes no
    // result. Like the handles, it is not for use from two threads at once.
    mutable Cudnn cudnn_;
    const ActivationDescriptor relu_ = activation_descriptor(CUDNN_ACTIVATION_RELU);
    const ActivationDescriptor sigmoid_ = activation_descriptor(CUDNN_ACTIVATION_SIGMOID);
    const ActivationDescriptor tanh_ = activation_descriptor(CUDNN_ACTIVATION_TANH);
};

[[maybe_unused]] const bool registered = register_backend(
    "gpu_vendor", 4, [] { return std::make_unique<GpuVendor>(); }, gpu::available);

}  // namespace
}  // namespace triptych::gpu_vendor
