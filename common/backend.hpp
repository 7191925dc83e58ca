// Backend: the one interface every variant implements (cpu_naive, cpu_eigen_omp, gpu_naive,
// gpu_tiled, gpu_vendor).
//
// - Memory: `allocate` (filled with NaN, so an output nobody writes is caught), `upload`,
//   `download`, `synchronize`.
// - Ops: one public method per op. It validates the parameters and the tensors (sizes, owner)
//   once, here, for every backend, then calls the kernel the variant registered for it
//   (common/kernels.hpp), in the version this instance runs. A backend without one throws
//   Unsupported.
//
// NaN and infinities: a NaN input propagates, as in PyTorch, so that a diverging training run
// shows as NaN instead of silently turning into numbers; infinities follow IEEE arithmetic and
// the formulas' limits. Each op's rule is stated with it below, every panel follows it, and the
// cross-check plants NaN, +inf and -inf among the inputs of every op (the elementwise ops, bias,
// softmax, the losses, sum, GEMM and dense layers, convolution, pooling and the optimizers) to
// hold them to it (check::Values::non_finite, check::Summands).
//
// Backends are found by name through the registry (common/registry.hpp).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/async_device.hpp"
#include "common/kernels.hpp"
#include "common/ops.hpp"
#include "common/tensor.hpp"

namespace triptych {

// Where a backend's ops run. Timings of Simulator backends say nothing about a GPU.
enum class DeviceKind { Cpu, Simulator, Gpu };

class Backend {
public:
    virtual ~Backend() = default;

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
    // Streams, events, pinned memory and graphs (common/async_device.hpp), for code that overlaps
    // this backend's work or replays it: the GPU backends' device; null on the CPU.
    virtual const AsyncDevice* async() const { return nullptr; }

    // --- ops ----------------------------------------------------------------------------------
    // C = alpha * op(A) * op(B) + beta * C; see GemmShape. Non-finite values in A or B: an element
    // whose sum holds a NaN, or infinities of both signs, is NaN, and one whose sum holds
    // infinities of one sign is that infinity (times alpha's sign); the others are their numbers.
    void gemm(const GemmShape& shape, const Tensor& A, const Tensor& B, Tensor& C) const;
    // The activations, elementwise (ReLU, sigmoid, tanh, GELU: common/activations.hpp has their
    // formulas, NaN rule included): y = act(x); dx = dy * act'(...) from `in`, the forward's input
    // x or its output y, whichever the activation's backward takes (backward_takes_output: x for
    // ReLU and GELU, y for sigmoid and tanh). y may be x, dx may be dy. Activation::none is an
    // InvalidArgument: it has no kernel.
    void activation_forward(Activation activation, const Tensor& x, Tensor& y) const;
    void activation_backward(Activation activation, const Tensor& in, const Tensor& dy,
                             Tensor& dx) const;

    // Elementwise ops (the activations, bias_add) may write their output over their input.
    // "Rows" below: a tensor of any rank seen as (rows, cols), cols = its last dimension.
    // y[i, j] = x[i, j] + bias[j]: the bias broadcast over the batch. y may be x (in place).
    void bias_add(const Tensor& x, const Tensor& bias, Tensor& y) const;
    // dbias[j] = sum_i dy[i, j]: the column sums, a reduction over the batch. A column holding a
    // NaN, or +inf and -inf together, sums to NaN; one holding infinities of one sign, to that
    // infinity (sum's rule, column by column).
    void bias_backward(const Tensor& dy, Tensor& dbias) const;
    // Row-wise softmax, y[i, j] = e^(x[i, j] - max_i) / sum_k e^(x[i, k] - max_i); the row max is
    // subtracted so that no exponential overflows. Backward, from the output:
    // dx[i, j] = y[i, j] * (dy[i, j] - sum_k dy[i, k] * y[i, k]).
    // Non-finite logits, as PyTorch: a -inf logit has probability 0; a row holding a NaN or a +inf
    // (inf - inf), or only -inf (no finite max), is NaN throughout. In the backward pass a NaN in a
    // row's y or dy makes the row's dot product, hence all of its dx, NaN.
    void softmax_forward(const Tensor& x, Tensor& y) const;
    void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) const;

    // Losses return the mean loss and write its gradient with respect to their first argument.
    // Mean squared error over all n elements: mean((p - t)^2); grad = 2 (p - t) / n.
    float mse_loss(const Tensor& prediction, const Tensor& target, Tensor& grad) const;
    // Cross-entropy of softmax(logits), computed from the logits with log-sum-exp (never
    // log(softmax)). logits is (rows, classes); labels is (rows), class indices held as floats
    // (exact up to 2^24). Loss = mean_i (logsumexp(logits[i]) - logits[i, label_i]);
    // grad = (softmax(logits) - one_hot(labels)) / rows. A label outside [0, classes) is an
    // InvalidArgument naming the first bad index. Non-finite values: as their formulas; a NaN or
    // +inf logit makes its row's gradient NaN (as softmax) and the loss NaN, and the MSE of a NaN
    // is NaN in the loss and in that element's gradient.
    float softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& grad) const;
    // The same without waiting for the loss, for a step that must not stop the device (the
    // trainer's overlapped and graph-captured steps): writes grad and leaves the loss in `result`,
    // a tensor of this backend of shape {cross_entropy_result_floats}. cross_entropy_loss reads it
    // later, and reports a bad label then.
    void softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& grad,
                               Tensor& result) const;
    // The mean loss a softmax_cross_entropy of these labels and `classes` classes left in `result`
    // (waiting for it); InvalidArgument naming the first bad label, as softmax_cross_entropy.
    float cross_entropy_loss(const Tensor& result, const Tensor& labels,
                             std::int64_t classes) const;

    // The sum and mean of every element (see Reduction for the modes); a NaN, or +inf and -inf
    // together, give NaN.
    float sum(const Tensor& x, Reduction mode = Reduction::deterministic) const;
    float mean(const Tensor& x, Reduction mode = Reduction::deterministic) const;

    // Y = act(X * W^T + b) (see DenseShape), fused into one pass where the variant can: GEMM,
    // bias and activation before a single store. Non-finite values in X: gemm's rule, then the
    // activation's (relu(-inf) = 0, sigmoid(+inf) = 1, a NaN stays NaN). `dense_forward_unfused`
    // always runs the three steps (gemm, bias_add, activation) one after the other, so benchmarks
    // can compare.
    void dense_forward(const Tensor& X, const Tensor& W, const Tensor& b, Activation activation,
                       Tensor& Y) const;
    void dense_forward_unfused(const Tensor& X, const Tensor& W, const Tensor& b,
                               Activation activation, Tensor& Y) const;

    // --- convolution and pooling (NCHW; see Conv2dShape and Pool2dShape) ------------------------
    // The algorithms this backend's conv2d passes implement, in the order it prefers them.
    // Asking for another is Unsupported naming these.
    // Non-finite values in x or dy: an output whose sum holds a NaN is NaN, and one whose sum holds
    // an infinity is that infinity, or NaN where both infinities meet; never a number. Beyond
    // that, what is computed decides: an infinity times a zero the kernel multiplies but the
    // definition does not is NaN. So dw may be NaN where its sum alone is a number or an infinity
    // (x's padding, or vector lanes past the edge of a plane, multiplied by an infinite dy), and
    // fft and winograd, which mix a whole plane or tile before their products, may make any
    // output of it non-finite. The other outputs are their numbers.
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
    void conv2d_backward_weights(const Conv2dShape& shape, ConvAlgorithm algorithm, const Tensor& x,
                                 const Tensor& dy, Tensor& dw, Tensor& db) const;

    // Max pooling: y (N, C, P, Q) is each window's largest input; argmax (N, C, P, Q) where it was,
    // as the index h * W + w within its (n, c) plane, held as a float. A tie goes to the first
    // element in row-major order within the window. A window holding a NaN gives NaN, with the
    // index of its first NaN (PyTorch gives NaN too, with its last): common/pooling.hpp's
    // replaces_max. Backward: dx (N, C, H, W) = 0, then every dy[n, c, p, q] added at its argmax
    // (overlapping windows can add twice to one element).
    void max_pool2d_forward(const Pool2dShape& shape, const Tensor& x, Tensor& y,
                            Tensor& argmax) const;
    void max_pool2d_backward(const Pool2dShape& shape, const Tensor& dy, const Tensor& argmax,
                             Tensor& dx) const;
    // Average pooling: the mean of the input elements each window covers (padding not counted);
    // NaN and infinities propagate through the sums. Backward: each dy spread evenly over those
    // elements.
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
    // per tensor, gpu_tiled one kernel over all of them (a multi-tensor apply). `corrections`,
    // if given, is a tensor of 2 floats on this backend that the kernels read Adam's bias
    // corrections {1 - beta1^t, 1 - beta2^t} from when they run, instead of computing them from
    // `step` now (OptimizerRule::corrections): an update captured in a graph once, replayed at
    // every step with new corrections.
    // Non-finite gradients: every element gets the rule's formulas in IEEE arithmetic, as
    // torch.optim does; nothing is skipped or clipped. A NaN gradient makes its weight and state
    // NaN; a +inf one makes SGD's weight -inf at that step and Adam's and RMSprop's NaN
    // (inf / sqrt(inf)); the state carries them into every later step.
    void optimizer_step(const OptimizerConfig& config, std::int64_t step,
                        std::span<const OptimizerTensor> tensors,
                        const Tensor* corrections = nullptr) const;

    // --- kernels and versions (common/kernels.hpp) -------------------------------------------
    // The variant, and "@N" when this instance runs version N of the ops that have one
    // ("gpu_tiled@5"; the others run their default version).
    std::string name() const;
    const std::string& variant() const { return variant_; }
    // The version asked for by name, or 0: every op runs its default version.
    int pinned_version() const { return pinned_version_; }
    // The version of `op` this instance runs; null when it has none (Unsupported if called).
    const KernelVersion* version_of(Op op) const;
    bool implements(Op op) const { return version_of(op) != nullptr; }

protected:
    // `variant` is the registry name whose kernels this backend runs (kernels.hpp).
    explicit Backend(std::string variant);

    // Memory of this backend: `count` floats, filled with NaN; freed when the last Tensor goes.
    virtual std::shared_ptr<float> allocate_buffer(std::int64_t count) const = 0;
    virtual void copy_to_backend(float* dst, const float* src, std::int64_t count) const = 0;
    virtual void copy_to_host(float* dst, const float* src, std::int64_t count) const = 0;

    // Runs `kernel` for `key` instead of the registered one: for tests and lessons that make a
    // backend of their own (a deliberately broken kernel, say).
    template <typename Signature>
    void use_kernel(OpKey<Signature> key, std::type_identity_t<Signature>* kernel) {
        KernelVersion own;
        own.name = "own";
        bind(key.op, reinterpret_cast<void (*)()>(kernel), own);
    }

    // Throws Unsupported("<backend> does not implement <op>").
    [[noreturn]] void unsupported(const std::string& op) const;

private:
    friend Backend& backend(const std::string& name);  // common/registry.cpp pins versions

    struct Bound {
        void (*kernel)() = nullptr;
        KernelVersion version;
    };
    // The kernel of `key`, or Unsupported naming the op and the versions there are.
    template <typename Signature>
    Signature* kernel(OpKey<Signature> key) const {
        const Bound& b = kernels_[static_cast<std::size_t>(key.op)];
        if (b.kernel == nullptr) unsupported_kernel(key.op);
        return reinterpret_cast<Signature*>(b.kernel);
    }
    [[noreturn]] void unsupported_kernel(Op op) const;
    void bind(Op op, void (*kernel)(), KernelVersion version);
    // Makes this instance run version `number` of every op that has one (the others keep their
    // default), with the memory of
    // `memory_owner` (the unpinned instance of the same variant), so that tensors pass between the
    // two.
    void pin_version(int number, const Backend& memory_owner);

    // The three steps of dense_forward, through this backend's kernels.
    void dense_forward_steps(const DenseShape& shape, const float* X, const float* W,
                             const float* b, float* Y) const;
    // Throws InvalidArgument unless `t` is a non-empty tensor of this backend with `expected`
    // shape.
    void require(const Tensor& t, const Shape& expected, const std::string& op,
                 const std::string& what) const;
    // Validates a conv2d pass's shape and algorithm; returns the op's name for messages.
    std::string conv2d_op(const std::string& pass, const Conv2dShape& shape,
                          ConvAlgorithm algorithm) const;

    std::string variant_;
    int pinned_version_ = 0;
    const Backend* memory_owner_ = this;
    std::vector<Bound> kernels_;
};

}  // namespace triptych
