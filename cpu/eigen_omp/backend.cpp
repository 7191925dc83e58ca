// cpu_eigen_omp: Eigen + OpenMP on every CPU thread; the CPU side of every speedup.
#include <omp.h>

#include "common/host_backend.hpp"
#include "common/registry.hpp"
#include "cpu/eigen_omp/ops.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

class CpuEigenOmp final : public HostBackend {
public:
    CpuEigenOmp() { use_one_thread_pool(); }
    std::string name() const override { return "cpu_eigen_omp"; }
    DeviceKind device_kind() const override { return DeviceKind::Cpu; }
    std::string device() const override {
        const int threads = omp_get_max_threads();
        return "CPU, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
    }

protected:
    void gemm_impl(const GemmShape& s, const float* A, const float* B, float* C) const override {
        cpu_eigen_omp::gemm(s, A, B, C);
    }
    void relu_forward_impl(std::int64_t n, const float* x, float* y) const override {
        cpu_eigen_omp::relu_forward(n, x, y);
    }
    void relu_backward_impl(std::int64_t n, const float* x, const float* dy,
                            float* dx) const override {
        cpu_eigen_omp::relu_backward(n, x, dy, dx);
    }
    void bias_add_impl(std::int64_t rows, std::int64_t cols, const float* x, const float* bias,
                       float* y) const override {
        cpu_eigen_omp::bias_add(rows, cols, x, bias, y);
    }
    void bias_backward_impl(std::int64_t rows, std::int64_t cols, const float* dy,
                            float* dbias) const override {
        cpu_eigen_omp::bias_backward(rows, cols, dy, dbias);
    }
    void sigmoid_forward_impl(std::int64_t n, const float* x, float* y) const override {
        cpu_eigen_omp::sigmoid_forward(n, x, y);
    }
    void sigmoid_backward_impl(std::int64_t n, const float* y, const float* dy,
                               float* dx) const override {
        cpu_eigen_omp::sigmoid_backward(n, y, dy, dx);
    }
    void tanh_forward_impl(std::int64_t n, const float* x, float* y) const override {
        cpu_eigen_omp::tanh_forward(n, x, y);
    }
    void tanh_backward_impl(std::int64_t n, const float* y, const float* dy,
                            float* dx) const override {
        cpu_eigen_omp::tanh_backward(n, y, dy, dx);
    }
    void softmax_forward_impl(std::int64_t rows, std::int64_t cols, const float* x,
                              float* y) const override {
        cpu_eigen_omp::softmax_forward(rows, cols, x, y);
    }
    void softmax_backward_impl(std::int64_t rows, std::int64_t cols, const float* y,
                               const float* dy, float* dx) const override {
        cpu_eigen_omp::softmax_backward(rows, cols, y, dy, dx);
    }
    float mse_loss_impl(std::int64_t n, const float* prediction, const float* target,
                        float* grad) const override {
        return cpu_eigen_omp::mse_loss(n, prediction, target, grad);
    }
    LossResult softmax_cross_entropy_impl(std::int64_t rows, std::int64_t classes,
                                          const float* logits, const float* labels,
                                          float* grad) const override {
        LossResult result;
        result.loss = cpu_eigen_omp::softmax_cross_entropy(rows, classes, logits, labels, grad,
                                                           result.first_bad_label);
        return result;
    }
    float sum_impl(std::int64_t n, const float* x, Reduction mode) const override {
        return cpu_eigen_omp::sum(n, x, mode);
    }
    // Fused: one GEMM, then bias and activation in one pass over Y (dense.cpp).
    void dense_forward_impl(const DenseShape& s, const float* X, const float* W, const float* b,
                            float* Y) const override {
        cpu_eigen_omp::dense_forward(s, X, W, b, Y);
    }

public:
    // im2col first: one big GEMM is what this variant does best.
    // Direct first: the register-blocked kernels of conv_direct.cpp beat im2col + sgemm 3-7x on
    // LeNet's layers, forward and backward (bench, 2-core machine); FFT pays only for large
    // filters (lesson 10's crossover). The Conv2d layer takes the first.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::fft};
    }

protected:
    void conv2d_forward_impl(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                             const float* w, const float* b, float* y) const override {
        cpu_eigen_omp::conv2d_forward(s, algorithm, x, w, b, y);
    }
    void conv2d_backward_data_impl(const Conv2dShape& s, ConvAlgorithm algorithm,
                                   const float* dy, const float* w, float* dx) const override {
        cpu_eigen_omp::conv2d_backward_data(s, algorithm, dy, w, dx);
    }
    void conv2d_backward_weights_impl(const Conv2dShape& s, ConvAlgorithm algorithm,
                                      const float* x, const float* dy, float* dw,
                                      float* db) const override {
        cpu_eigen_omp::conv2d_backward_weights(s, algorithm, x, dy, dw, db);
    }
    void max_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y,
                                 float* argmax) const override {
        cpu_eigen_omp::max_pool2d_forward(s, x, y, argmax);
    }
    void max_pool2d_backward_impl(const Pool2dShape& s, const float* dy, const float* argmax,
                                  float* dx) const override {
        cpu_eigen_omp::max_pool2d_backward(s, dy, argmax, dx);
    }
    void avg_pool2d_forward_impl(const Pool2dShape& s, const float* x, float* y) const override {
        cpu_eigen_omp::avg_pool2d_forward(s, x, y);
    }
    void avg_pool2d_backward_impl(const Pool2dShape& s, const float* dy,
                                  float* dx) const override {
        cpu_eigen_omp::avg_pool2d_backward(s, dy, dx);
    }
    // One tensor after the other, each sliced over the threads if it is large (optimizer.cpp).
    void optimizer_step_impl(const OptimizerConfig& config, std::int64_t step,
                             std::span<const OptimizerSlot> slots) const override {
        const OptimizerRule<float> rule = optimizer_rule<float>(config, step);
        for (const OptimizerSlot& t : slots)
            cpu_eigen_omp::optimizer_step(rule, t.n, t.value, t.grad, t.state0, t.state1);
    }
};

[[maybe_unused]] const bool registered =
    register_backend("cpu_eigen_omp", 1, [] { return std::make_unique<CpuEigenOmp>(); });

}  // namespace
}  // namespace triptych::cpu_eigen_omp
