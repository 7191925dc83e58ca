// gpu_tiled: see ops.hpp in this folder. Memory comes from GpuBackend; each op calls its launcher.
#include <vector>

#include "common/registry.hpp"
#include "gpu/runtime/gpu_backend.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

class GpuTiled final : public gpu::GpuBackend {
  public:
    std::string name() const override { return "gpu_tiled"; }

  protected:
    void gemm_impl(const GemmShape& s, const float* A, const float* B, float* C) const override {
        gpu_tiled::gemm(s, A, B, C);
    }
    void relu_forward_impl(std::int64_t n, const float* x, float* y) const override {
        gpu_tiled::relu_forward(n, x, y);
    }
    void relu_backward_impl(std::int64_t n, const float* x, const float* dy,
                            float* dx) const override {
        gpu_tiled::relu_backward(n, x, dy, dx);
    }
    void bias_add_impl(std::int64_t rows, std::int64_t cols, const float* x, const float* bias,
                       float* y) const override {
        gpu_tiled::bias_add(rows, cols, x, bias, y);
    }
    void bias_backward_impl(std::int64_t rows, std::int64_t cols, const float* dy,
                            float* dbias) const override {
        gpu_tiled::bias_backward(rows, cols, dy, dbias);
    }
    void sigmoid_forward_impl(std::int64_t n, const float* x, float* y) const override {
        gpu_tiled::sigmoid_forward(n, x, y);
    }
    void sigmoid_backward_impl(std::int64_t n, const float* y, const float* dy,
                               float* dx) const override {
        gpu_tiled::sigmoid_backward(n, y, dy, dx);
    }
    void tanh_forward_impl(std::int64_t n, const float* x, float* y) const override {
        gpu_tiled::tanh_forward(n, x, y);
    }
    void tanh_backward_impl(std::int64_t n, const float* y, const float* dy,
                            float* dx) const override {
        gpu_tiled::tanh_backward(n, y, dy, dx);
    }
    void softmax_forward_impl(std::int64_t rows, std::int64_t cols, const float* x,
                              float* y) const override {
        gpu_tiled::softmax_forward(rows, cols, x, y);
    }
    void softmax_backward_impl(std::int64_t rows, std::int64_t cols, const float* y,
                               const float* dy, float* dx) const override {
        gpu_tiled::softmax_backward(rows, cols, y, dy, dx);
    }
    float mse_loss_impl(std::int64_t n, const float* prediction, const float* target,
                        float* grad) const override {
        return gpu_tiled::mse_loss(n, prediction, target, grad);
    }
    LossResult softmax_cross_entropy_impl(std::int64_t rows, std::int64_t classes,
                                          const float* logits, const float* labels,
                                          float* grad) const override {
        LossResult result;
        result.loss = gpu_tiled::softmax_cross_entropy(rows, classes, logits, labels, grad,
                                                       result.first_bad_label);
        return result;
    }
    float sum_impl(std::int64_t n, const float* x, Reduction mode) const override {
        return gpu_tiled::sum(n, x, mode);
    }
    // Fused: GEMM, bias and activation in one kernel (gemm.cu).
    void dense_forward_impl(const DenseShape& s, const float* X, const float* W, const float* b,
                            float* Y) const override {
        gpu_tiled::dense_forward(s, X, W, b, Y);
    }

  public:
    // Direct first (a tile and its halo in shared memory), then im2col + the tiled GEMM, then the
    // hand-written FFT. Measured on an H200 training LeNet (triptych train --profile): with
    // im2col the backward pass of the first convolution took 2.0 ms per batch of 64, its
    // weight-gradient GEMM (6 x 25, summed over 50,176 terms) filling one block of the GPU; the
    // direct pass, whose weight gradient splits the images over many warps, 0.16 ms.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::fft};
    }

  protected:
    void conv2d_forward_impl(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                             const float* w, const float* b, float* y) const override {
        gpu_tiled::conv2d_forward(s, algorithm, x, w, b, y);
    }
    void conv2d_backward_data_impl(const Conv2dShape& s, ConvAlgorithm algorithm,
                                   const float* dy, const float* w, float* dx) const override {
        gpu_tiled::conv2d_backward_data(s, algorithm, dy, w, dx);
    }
    void conv2d_backward_weights_impl(const Conv2dShape& s, ConvAlgorithm algorithm,
                                      const float* x, const float* dy, float* dw,
                                      float* db) const override {
        gpu_tiled::conv2d_backward_weights(s, algorithm, x, dy, dw, db);
    }
    void max_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y,
                                 float* argmax) const override {
        gpu_tiled::max_pool2d_forward(s, x, y, argmax);
    }
    void max_pool2d_backward_impl(const Pool2dShape& s, const float* dy, const float* argmax,
                                  float* dx) const override {
        gpu_tiled::max_pool2d_backward(s, dy, argmax, dx);
    }
    void avg_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y) const override {
        gpu_tiled::avg_pool2d_forward(s, x, y);
    }
    void avg_pool2d_backward_impl(const Pool2dShape& s, const float* dy,
                                  float* dx) const override {
        gpu_tiled::avg_pool2d_backward(s, dy, dx);
    }
    // Every parameter tensor in one launch (optimizer.cu); gpu_naive launches one per tensor.
    void optimizer_step_impl(const OptimizerConfig& config, std::int64_t step,
                             std::span<const OptimizerSlot> slots) const override {
        gpu_tiled::optimizer_step(optimizer_rule<float>(config, step), slots);
    }
};

[[maybe_unused]] const bool registered = register_backend(
    "gpu_tiled", 3, [] { return std::make_unique<GpuTiled>(); }, gpu::available);

}  // namespace
}  // namespace triptych::gpu_tiled
