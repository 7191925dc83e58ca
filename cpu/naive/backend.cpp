// cpu_naive: the textbook loops, one thread, no library. Every op forwards to the templates in
// this folder (one header per op: gemm.hpp, relu.hpp, bias.hpp, sigmoid.hpp, tanh.hpp,
// softmax.hpp, losses.hpp, reduce.hpp, dense.hpp, conv2d.hpp, pool2d.hpp,
// optimizer.hpp), instantiated for float.
#include "common/host_backend.hpp"
#include "common/registry.hpp"
#include "cpu/naive/bias.hpp"
#include "cpu/naive/conv2d.hpp"
#include "cpu/naive/dense.hpp"
#include "cpu/naive/gemm.hpp"
#include "cpu/naive/losses.hpp"
#include "cpu/naive/optimizer.hpp"
#include "cpu/naive/pool2d.hpp"
#include "cpu/naive/reduce.hpp"
#include "cpu/naive/relu.hpp"
#include "cpu/naive/sigmoid.hpp"
#include "cpu/naive/softmax.hpp"
#include "cpu/naive/tanh.hpp"

namespace triptych::cpu_naive {
namespace {

class CpuNaive final : public HostBackend {
public:
    std::string name() const override { return "cpu_naive"; }
    DeviceKind device_kind() const override { return DeviceKind::Cpu; }
    std::string device() const override { return "CPU, 1 thread"; }

protected:
    void gemm_impl(const GemmShape& s, const float* A, const float* B, float* C) const override {
        cpu_naive::gemm(s, A, B, C);
    }
    void relu_forward_impl(std::int64_t n, const float* x, float* y) const override {
        cpu_naive::relu_forward(n, x, y);
    }
    void relu_backward_impl(std::int64_t n, const float* x, const float* dy,
                            float* dx) const override {
        cpu_naive::relu_backward(n, x, dy, dx);
    }
    void bias_add_impl(std::int64_t rows, std::int64_t cols, const float* x, const float* bias,
                       float* y) const override {
        cpu_naive::bias_add(rows, cols, x, bias, y);
    }
    void bias_backward_impl(std::int64_t rows, std::int64_t cols, const float* dy,
                            float* dbias) const override {
        cpu_naive::bias_backward(rows, cols, dy, dbias);
    }
    void sigmoid_forward_impl(std::int64_t n, const float* x, float* y) const override {
        cpu_naive::sigmoid_forward(n, x, y);
    }
    void sigmoid_backward_impl(std::int64_t n, const float* y, const float* dy,
                               float* dx) const override {
        cpu_naive::sigmoid_backward(n, y, dy, dx);
    }
    void tanh_forward_impl(std::int64_t n, const float* x, float* y) const override {
        cpu_naive::tanh_forward(n, x, y);
    }
    void tanh_backward_impl(std::int64_t n, const float* y, const float* dy,
                            float* dx) const override {
        cpu_naive::tanh_backward(n, y, dy, dx);
    }
    void softmax_forward_impl(std::int64_t rows, std::int64_t cols, const float* x,
                              float* y) const override {
        cpu_naive::softmax_forward(rows, cols, x, y);
    }
    void softmax_backward_impl(std::int64_t rows, std::int64_t cols, const float* y,
                               const float* dy, float* dx) const override {
        cpu_naive::softmax_backward(rows, cols, y, dy, dx);
    }
    float mse_loss_impl(std::int64_t n, const float* prediction, const float* target,
                        float* grad) const override {
        return cpu_naive::mse_loss(n, prediction, target, grad);
    }
    LossResult softmax_cross_entropy_impl(std::int64_t rows, std::int64_t classes,
                                          const float* logits, const float* labels,
                                          float* grad) const override {
        LossResult result;
        result.loss = cpu_naive::softmax_cross_entropy(rows, classes, logits, labels, grad,
                                                       result.first_bad_label);
        return result;
    }
    // One thread, one order: both Reduction modes are the same loop.
    float sum_impl(std::int64_t n, const float* x, Reduction) const override {
        return cpu_naive::sum(n, x);
    }
    void dense_forward_impl(const DenseShape& s, const float* X, const float* W, const float* b,
                            float* Y) const override {
        cpu_naive::dense_forward(s, X, W, b, Y);
    }

public:
    // The definition only: im2col and FFT are ways to go faster, which is not this variant's job.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct};
    }

protected:
    void conv2d_forward_impl(const Conv2dShape& s, ConvAlgorithm, const float* x, const float* w,
                             const float* b, float* y) const override {
        cpu_naive::conv2d_forward(s, x, w, b, y);
    }
    void conv2d_backward_data_impl(const Conv2dShape& s, ConvAlgorithm, const float* dy,
                                   const float* w, float* dx) const override {
        cpu_naive::conv2d_backward_data(s, dy, w, dx);
    }
    void conv2d_backward_weights_impl(const Conv2dShape& s, ConvAlgorithm, const float* x,
                                      const float* dy, float* dw, float* db) const override {
        cpu_naive::conv2d_backward_weights(s, x, dy, dw, db);
    }
    void max_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y,
                                 float* argmax) const override {
        cpu_naive::max_pool2d_forward(s, x, y, argmax);
    }
    void max_pool2d_backward_impl(const Pool2dShape& s, const float* dy, const float* argmax,
                                  float* dx) const override {
        cpu_naive::max_pool2d_backward(s, dy, argmax, dx);
    }
    void avg_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y) const override {
        cpu_naive::avg_pool2d_forward(s, x, y);
    }
    void avg_pool2d_backward_impl(const Pool2dShape& s, const float* dy,
                                  float* dx) const override {
        cpu_naive::avg_pool2d_backward(s, dy, dx);
    }
    void optimizer_step_impl(const OptimizerConfig& config, std::int64_t step,
                             std::span<const OptimizerSlot> slots) const override {
        const OptimizerRule<float> rule = optimizer_rule<float>(config, step);
        for (const OptimizerSlot& t : slots)
            cpu_naive::optimizer_step(rule, t.n, t.value, t.grad, t.state0, t.state1);
    }
};

[[maybe_unused]] const bool registered =
    register_backend("cpu_naive", 0, [] { return std::make_unique<CpuNaive>(); });

}  // namespace
}  // namespace triptych::cpu_naive
