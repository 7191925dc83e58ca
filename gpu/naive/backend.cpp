// gpu_naive: see ops.hpp in this folder. Memory comes from GpuBackend; each op calls its launcher.
#include "common/registry.hpp"
#include "gpu/naive/ops.hpp"
#include "gpu/runtime/gpu_backend.hpp"

namespace triptych::gpu_naive {
namespace {

class GpuNaive final : public gpu::GpuBackend {
  public:
    std::string name() const override { return "gpu_naive"; }

  protected:
    void gemm_impl(const GemmShape& s, const float* A, const float* B, float* C) const override {
        gpu_naive::gemm(s, A, B, C);
    }
    void relu_forward_impl(std::int64_t n, const float* x, float* y) const override {
        gpu_naive::relu_forward(n, x, y);
    }
    void relu_backward_impl(std::int64_t n, const float* x, const float* dy,
                            float* dx) const override {
        gpu_naive::relu_backward(n, x, dy, dx);
    }
    void bias_add_impl(std::int64_t rows, std::int64_t cols, const float* x, const float* bias,
                       float* y) const override {
        gpu_naive::bias_add(rows, cols, x, bias, y);
    }
    void bias_backward_impl(std::int64_t rows, std::int64_t cols, const float* dy,
                            float* dbias) const override {
        gpu_naive::bias_backward(rows, cols, dy, dbias);
    }
    void sigmoid_forward_impl(std::int64_t n, const float* x, float* y) const override {
        gpu_naive::sigmoid_forward(n, x, y);
    }
    void sigmoid_backward_impl(std::int64_t n, const float* y, const float* dy,
                               float* dx) const override {
        gpu_naive::sigmoid_backward(n, y, dy, dx);
    }
    void tanh_forward_impl(std::int64_t n, const float* x, float* y) const override {
        gpu_naive::tanh_forward(n, x, y);
    }
    void tanh_backward_impl(std::int64_t n, const float* y, const float* dy,
                            float* dx) const override {
        gpu_naive::tanh_backward(n, y, dy, dx);
    }
    void softmax_forward_impl(std::int64_t rows, std::int64_t cols, const float* x,
                              float* y) const override {
        gpu_naive::softmax_forward(rows, cols, x, y);
    }
    void softmax_backward_impl(std::int64_t rows, std::int64_t cols, const float* y,
                               const float* dy, float* dx) const override {
        gpu_naive::softmax_backward(rows, cols, y, dy, dx);
    }
    float mse_loss_impl(std::int64_t n, const float* prediction, const float* target,
                        float* grad) const override {
        return gpu_naive::mse_loss(n, prediction, target, grad);
    }
    LossResult softmax_cross_entropy_impl(std::int64_t rows, std::int64_t classes,
                                          const float* logits, const float* labels,
                                          float* grad) const override {
        LossResult result;
        result.loss = gpu_naive::softmax_cross_entropy(rows, classes, logits, labels, grad,
                                                       result.first_bad_label);
        return result;
    }
    float sum_impl(std::int64_t n, const float* x, Reduction mode) const override {
        return gpu_naive::sum(n, x, mode);
    }
    // dense_forward_impl is not overridden: the Backend's default runs gemm, bias_add and the
    // activation as three launches (see ops.hpp).
  public:
    // One thread per output, the definition on a GPU.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct};
    }

  protected:
    void conv2d_forward_impl(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                             const float* w, const float* b, float* y) const override {
        gpu_naive::conv2d_forward(s, algorithm, x, w, b, y);
    }
    void conv2d_backward_data_impl(const Conv2dShape& s, ConvAlgorithm algorithm,
                                   const float* dy, const float* w, float* dx) const override {
        gpu_naive::conv2d_backward_data(s, algorithm, dy, w, dx);
    }
    void conv2d_backward_weights_impl(const Conv2dShape& s, ConvAlgorithm algorithm,
                                      const float* x, const float* dy, float* dw,
                                      float* db) const override {
        gpu_naive::conv2d_backward_weights(s, algorithm, x, dy, dw, db);
    }
    void max_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y,
                                 float* argmax) const override {
        gpu_naive::max_pool2d_forward(s, x, y, argmax);
    }
    void max_pool2d_backward_impl(const Pool2dShape& s, const float* dy, const float* argmax,
                                  float* dx) const override {
        gpu_naive::max_pool2d_backward(s, dy, argmax, dx);
    }
    void avg_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y) const override {
        gpu_naive::avg_pool2d_forward(s, x, y);
    }
    void avg_pool2d_backward_impl(const Pool2dShape& s, const float* dy,
                                  float* dx) const override {
        gpu_naive::avg_pool2d_backward(s, dy, dx);
    }
    // One launch per parameter tensor (optimizer.cu); gpu_tiled fuses them into one.
    void optimizer_step_impl(const OptimizerConfig& config, std::int64_t step,
                             std::span<const OptimizerSlot> slots) const override {
        const OptimizerRule<float> rule = optimizer_rule<float>(config, step);
        for (const OptimizerSlot& t : slots)
            gpu_naive::optimizer_step(rule, t.n, t.value, t.grad, t.state0, t.state1);
    }
};

[[maybe_unused]] const bool registered = register_backend(
    "gpu_naive", 2, [] { return std::make_unique<GpuNaive>(); }, gpu::available);

}  // namespace
}  // namespace triptych::gpu_naive
