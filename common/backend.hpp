// Backend: the one interface every variant implements (cpu_naive, cpu_eigen_omp, gpu_naive,
// gpu_tiled, gpu_vendor).
//
// - Memory: `allocate` (filled with NaN, so an output nobody writes is caught), `upload`,
//   `download`, `synchronize`.
// - Ops: one public method per op. It validates the parameters and the tensors (sizes, owner)
//   once, here, for every backend, then calls the backend's `*_impl`. A backend that does not
//   override an `*_impl` throws Unsupported.
//
// Backends are found by name through the registry (common/registry.hpp).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/ops.hpp"
#include "common/tensor.hpp"

namespace triptych {

// Where a backend's ops run. Timings of Simulator backends say nothing about a GPU.
enum class DeviceKind { Cpu, Simulator, Gpu };

class Backend {
public:
    virtual ~Backend() = default;

    virtual std::string name() const = 0;
    virtual DeviceKind device_kind() const = 0;
    // One line for tables: "CPU, 2 threads", "simulator", "NVIDIA H200".
    virtual std::string device() const = 0;

    // --- memory -------------------------------------------------------------------------------
    // A tensor of this backend, every element NaN until written.
    Tensor allocate(const Shape& shape) const;
    // A tensor of this backend holding `values` (values.size() must equal shape.elements()).
    Tensor upload(const Shape& shape, std::span<const float> values) const;
    void upload(Tensor& dst, std::span<const float> values) const;
    std::vector<float> download(const Tensor& src) const;
    // Waits until every op issued so far has finished (a no-op on the CPU).
    virtual void synchronize() const {}

    // --- ops ----------------------------------------------------------------------------------
    // C = alpha * op(A) * op(B) + beta * C; see GemmShape.
    void gemm(const GemmShape& shape, const Tensor& A, const Tensor& B, Tensor& C) const;
    // y = max(x, 0), elementwise.
    void relu_forward(const Tensor& x, Tensor& y) const;
    // dx = dy where x > 0, else 0 (the gradient at exactly 0 is taken as 0).
    void relu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) const;

    // Elementwise ops (ReLU, sigmoid, tanh, bias_add) may write their output over their input.
    // "Rows" below: a tensor of any rank seen as (rows, cols), cols = its last dimension.
    // y[i, j] = x[i, j] + bias[j]: the bias broadcast over the batch. y may be x (in place).
    void bias_add(const Tensor& x, const Tensor& bias, Tensor& y) const;
    // dbias[j] = sum_i dy[i, j]: the column sums, a reduction over the batch.
    void bias_backward(const Tensor& dy, Tensor& dbias) const;
    // y = 1 / (1 + e^-x); the backward pass takes the forward's output: dx = dy * y * (1 - y).
    void sigmoid_forward(const Tensor& x, Tensor& y) const;
    void sigmoid_backward(const Tensor& y, const Tensor& dy, Tensor& dx) const;
    // y = tanh(x); dx = dy * (1 - y^2), from the forward's output.
    void tanh_forward(const Tensor& x, Tensor& y) const;
    void tanh_backward(const Tensor& y, const Tensor& dy, Tensor& dx) const;
    // Row-wise softmax, y[i, j] = e^(x[i, j] - max_i) / sum_k e^(x[i, k] - max_i); the row max is
    // subtracted so that no exponential overflows. Backward, from the output:
    // dx[i, j] = y[i, j] * (dy[i, j] - sum_k dy[i, k] * y[i, k]).
    void softmax_forward(const Tensor& x, Tensor& y) const;
    void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) const;

    // Losses return the mean loss and write its gradient with respect to their first argument.
    // Mean squared error over all n elements: mean((p - t)^2); grad = 2 (p - t) / n.
    float mse_loss(const Tensor& prediction, const Tensor& target, Tensor& grad) const;
    // Cross-entropy of softmax(logits), computed from the logits with log-sum-exp (never
    // log(softmax)). logits is (rows, classes); labels is (rows), class indices held as floats
    // (exact up to 2^24). Loss = mean_i (logsumexp(logits[i]) - logits[i, label_i]);
    // grad = (softmax(logits) - one_hot(labels)) / rows. A label outside [0, classes) is an
    // InvalidArgument naming the first bad index.
    float softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& grad) const;

    // The sum and mean of every element (see Reduction for the modes).
    float sum(const Tensor& x, Reduction mode = Reduction::deterministic) const;
    float mean(const Tensor& x, Reduction mode = Reduction::deterministic) const;

    // Y = act(X * W^T + b) (see DenseShape), fused into one pass where the variant can: GEMM,
    // bias and activation before a single store. `dense_forward_unfused` always runs the three
    // steps (gemm, bias_add, activation) one after the other, so benchmarks can compare.
    void dense_forward(const Tensor& X, const Tensor& W, const Tensor& b, Activation activation,
                       Tensor& Y) const;
    void dense_forward_unfused(const Tensor& X, const Tensor& W, const Tensor& b,
                               Activation activation, Tensor& Y) const;

    // --- convolution and pooling (NCHW; see Conv2dShape and Pool2dShape) ------------------------
    // The algorithms this backend's conv2d passes implement, in the order it prefers them.
    // Asking for another is Unsupported naming these.
    virtual std::vector<ConvAlgorithm> conv2d_algorithms() const { return {}; }
    // y = conv(x, w) + b: x (N, C, H, W), w (K, C, R, S), b (K), y (N, K, P, Q).
    void conv2d_forward(const Conv2dShape& shape, ConvAlgorithm algorithm, const Tensor& x,
                        const Tensor& w, const Tensor& b, Tensor& y) const;
    // dx = dLoss/dx from dy = dLoss/dy: every input element collects dy * w over the outputs its
    // value reached (a transposed convolution).
    void conv2d_backward_data(const Conv2dShape& shape, ConvAlgorithm algorithm, const Tensor& dy,
                              const Tensor& w, Tensor& dx) const;
    // dw[k, c, r, s] = sum_{n, p, q} dy[n, k, p, q] * x[n, c, p*stride_h + r - pad_h, ...] and
    // db[k] = sum_{n, p, q} dy[n, k, p, q]. Both overwritten.
    void conv2d_backward_weights(const Conv2dShape& shape, ConvAlgorithm algorithm,
                                 const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) const;

    // Max pooling: y (N, C, P, Q) is each window's largest input; argmax (N, C, P, Q) where it was,
    // as the index h * W + w within its (n, c) plane, held as a float. A tie goes to the first
    // element in row-major order within the window. Backward: dx (N, C, H, W) = 0, then every
    // dy[n, c, p, q] added at its argmax (overlapping windows can add twice to one element).
    void max_pool2d_forward(const Pool2dShape& shape, const Tensor& x, Tensor& y,
                            Tensor& argmax) const;
    void max_pool2d_backward(const Pool2dShape& shape, const Tensor& dy, const Tensor& argmax,
                             Tensor& dx) const;
    // Average pooling: the mean of the input elements each window covers (padding not counted).
    // Backward: each dy spread evenly over those elements.
    void avg_pool2d_forward(const Pool2dShape& shape, const Tensor& x, Tensor& y) const;
    void avg_pool2d_backward(const Pool2dShape& shape, const Tensor& dy, Tensor& dx) const;

    // --- optimizers (see OptimizerConfig; the rules are in common/optimizer_rule.hpp) ---------
    // One parameter tensor of an optimizer step: the value (updated in place), its gradient, and
    // its config.state_tensors() state tensors (each the value's shape, zero before the first
    // step, updated in place; the rest null). Everything on this backend: the optimizer's state
    // lives where the parameters do.
    struct OptimizerTensor {
        Tensor* value = nullptr;
        const Tensor* grad = nullptr;
        Tensor* state[2] = {nullptr, nullptr};
    };
    // Step `step` (1 for the first; Adam's bias correction counts it) of `config`, over every
    // tensor of `tensors`. How it is launched is the variant's choice: gpu_naive runs one kernel
    // per tensor, gpu_tiled one kernel over all of them (a multi-tensor apply).
    void optimizer_step(const OptimizerConfig& config, std::int64_t step,
                        std::span<const OptimizerTensor> tensors) const;

protected:
    // Memory of this backend: `count` floats, filled with NaN; freed when the last Tensor goes.
    virtual std::shared_ptr<float> allocate_buffer(std::int64_t count) const = 0;
    virtual void copy_to_backend(float* dst, const float* src, std::int64_t count) const = 0;
    virtual void copy_to_host(float* dst, const float* src, std::int64_t count) const = 0;

    virtual void gemm_impl(const GemmShape& shape, const float* A, const float* B, float* C) const;
    virtual void relu_forward_impl(std::int64_t n, const float* x, float* y) const;
    virtual void relu_backward_impl(std::int64_t n, const float* x, const float* dy,
                                    float* dx) const;
    virtual void bias_add_impl(std::int64_t rows, std::int64_t cols, const float* x,
                               const float* bias, float* y) const;
    virtual void bias_backward_impl(std::int64_t rows, std::int64_t cols, const float* dy,
                                    float* dbias) const;
    virtual void sigmoid_forward_impl(std::int64_t n, const float* x, float* y) const;
    virtual void sigmoid_backward_impl(std::int64_t n, const float* y, const float* dy,
                                       float* dx) const;
    virtual void tanh_forward_impl(std::int64_t n, const float* x, float* y) const;
    virtual void tanh_backward_impl(std::int64_t n, const float* y, const float* dy,
                                    float* dx) const;
    virtual void softmax_forward_impl(std::int64_t rows, std::int64_t cols, const float* x,
                                      float* y) const;
    virtual void softmax_backward_impl(std::int64_t rows, std::int64_t cols, const float* y,
                                       const float* dy, float* dx) const;
    virtual float mse_loss_impl(std::int64_t n, const float* prediction, const float* target,
                                float* grad) const;
    // Returns the mean loss and the index of the first label outside [0, classes), or -1.
    struct LossResult {
        float loss = 0.0f;
        std::int64_t first_bad_label = -1;
    };
    virtual LossResult softmax_cross_entropy_impl(std::int64_t rows, std::int64_t classes,
                                                  const float* logits, const float* labels,
                                                  float* grad) const;
    virtual float sum_impl(std::int64_t n, const float* x, Reduction mode) const;
    // Default: the unfused three steps. Variants with a fused kernel override it.
    virtual void dense_forward_impl(const DenseShape& shape, const float* X, const float* W,
                                    const float* b, float* Y) const;
    // The conv2d passes: `algorithm` is one of conv2d_algorithms(), the shape valid.
    virtual void conv2d_forward_impl(const Conv2dShape& shape, ConvAlgorithm algorithm,
                                     const float* x, const float* w, const float* b,
                                     float* y) const;
    virtual void conv2d_backward_data_impl(const Conv2dShape& shape, ConvAlgorithm algorithm,
                                           const float* dy, const float* w, float* dx) const;
    virtual void conv2d_backward_weights_impl(const Conv2dShape& shape, ConvAlgorithm algorithm,
                                              const float* x, const float* dy, float* dw,
                                              float* db) const;
    virtual void max_pool2d_forward_impl(const Pool2dShape& shape, const float* x, float* y,
                                         float* argmax) const;
    virtual void max_pool2d_backward_impl(const Pool2dShape& shape, const float* dy,
                                          const float* argmax, float* dx) const;
    virtual void avg_pool2d_forward_impl(const Pool2dShape& shape, const float* x,
                                         float* y) const;
    virtual void avg_pool2d_backward_impl(const Pool2dShape& shape, const float* dy,
                                          float* dx) const;
    virtual void optimizer_step_impl(const OptimizerConfig& config, std::int64_t step,
                                     std::span<const OptimizerSlot> slots) const;

    // Throws Unsupported("<backend> does not implement <op>").
    [[noreturn]] void unsupported(const std::string& op) const;

private:
    // The three steps of dense_forward, through the *_impl methods of this backend.
    void dense_forward_steps(const DenseShape& shape, const float* X, const float* W,
                             const float* b, float* Y) const;
    // Throws InvalidArgument unless `t` is a non-empty tensor of this backend with `expected` shape.
    void require(const Tensor& t, const Shape& expected, const std::string& op,
                 const std::string& what) const;
    // Validates a conv2d pass's shape and algorithm; returns the op's name for messages.
    std::string conv2d_op(const std::string& pass, const Conv2dShape& shape,
                          ConvAlgorithm algorithm) const;
};

}  // namespace triptych
