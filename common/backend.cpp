#include "common/backend.hpp"

#include <cstring>
#include <vector>

#include "common/errors.hpp"

namespace triptych {

Backend::Backend(std::string variant) : variant_(std::move(variant)), kernels_(all_ops().size()) {
    for (Op op : all_ops())
        for (const KernelVersion& v : kernel_versions(variant_, op))
            if (v.is_default) bind(op, v.kernel, v);
}

std::string Backend::name() const {
    return pinned_version_ == 0 ? variant_ : variant_ + "@" + std::to_string(pinned_version_);
}

const KernelVersion* Backend::version_of(Op op) const {
    const Bound& b = kernels_[static_cast<std::size_t>(op)];
    return b.kernel == nullptr ? nullptr : &b.version;
}

void Backend::bind(Op op, void (*kernel)(), KernelVersion version) {
    kernels_[static_cast<std::size_t>(op)] = Bound{kernel, std::move(version)};
}

void Backend::pin_version(int number, const Backend& memory_owner) {
    pinned_version_ = number;
    memory_owner_ = &memory_owner;
    for (Op op : all_ops())
        for (const KernelVersion& v : kernel_versions(variant_, op))
            if (v.number == number) bind(op, v.kernel, v);
}

void Backend::unsupported_kernel(Op op) const { unsupported(std::string(op_name(op))); }

Tensor Backend::allocate(const Shape& shape) const {
    for (std::int64_t d : shape.dims())
        if (d < 1)
            throw InvalidArgument("allocate: every dimension must be >= 1, got shape " +
                                  shape.str() + " on " + name());
    return Tensor(shape, allocate_buffer(shape.elements()), memory_owner_);
}

Tensor Backend::upload(const Shape& shape, std::span<const float> values) const {
    Tensor t = allocate(shape);
    upload(t, values);
    return t;
}

void Backend::upload(Tensor& dst, std::span<const float> values) const {
    require(dst, dst.shape(), "upload", "destination");
    if (static_cast<std::int64_t>(values.size()) != dst.elements())
        throw InvalidArgument("upload: " + std::to_string(values.size()) +
                              " values for a tensor of shape " + dst.shape().str() + " (" +
                              std::to_string(dst.elements()) + " elements)");
    copy_to_backend(dst.data(), values.data(), dst.elements());
}

std::vector<float> Backend::download(const Tensor& src) const {
    require(src, src.shape(), "download", "source");
    std::vector<float> host(static_cast<std::size_t>(src.elements()));
    copy_to_host(host.data(), src.data(), src.elements());
    return host;
}

void Backend::require(const Tensor& t, const Shape& expected, const std::string& op,
                      const std::string& what) const {
    if (t.data() == nullptr)
        throw InvalidArgument(op + ": " + what + " is an empty tensor (no buffer)");
    if (t.owner() != memory_owner_)
        throw InvalidArgument(op + ": " + what + " lives on backend " + t.owner()->name() +
                              ", not " + name() + "; move it with upload/download first");
    if (t.shape() != expected)
        throw InvalidArgument(op + ": " + what + " has shape " + t.shape().str() + ", expected " +
                              expected.str());
}

void Backend::gemm(const GemmShape& s, const Tensor& A, const Tensor& B, Tensor& C) const {
    s.validate();
    const std::string op = "gemm " + s.str();
    require(A, s.a_shape(), op, "A");
    require(B, s.b_shape(), op, "B");
    require(C, s.c_shape(), op, "C");
    kernel(ops::gemm)(s, A.data(), B.data(), C.data());
}

namespace {
std::string activation_op(Activation activation, const char* pass) {
    return to_string(activation) + "_" + pass;
}
}  // namespace

void Backend::activation_forward(Activation activation, const Tensor& x, Tensor& y) const {
    if (activation == Activation::none)
        throw InvalidArgument("activation_forward: Activation::none has no kernel");
    const std::string op = activation_op(activation, "forward");
    require(x, x.shape(), op, "x");
    require(y, x.shape(), op, "y");
    kernel(forward_op(activation))(x.elements(), x.data(), y.data());
}

void Backend::activation_backward(Activation activation, const Tensor& in, const Tensor& dy,
                                  Tensor& dx) const {
    if (activation == Activation::none)
        throw InvalidArgument("activation_backward: Activation::none has no kernel");
    const std::string op = activation_op(activation, "backward");
    require(in, in.shape(), op, backward_takes_output(activation) ? "y" : "x");
    require(dy, in.shape(), op, "dy");
    require(dx, in.shape(), op, "dx");
    kernel(backward_op(activation))(in.elements(), in.data(), dy.data(), dx.data());
}

namespace {
std::int64_t columns(const Tensor& t) { return t.shape().columns(); }
std::int64_t rows(const Tensor& t) { return t.shape().rows(); }
}  // namespace

void Backend::bias_add(const Tensor& x, const Tensor& bias, Tensor& y) const {
    require(x, x.shape(), "bias_add", "x");
    require(bias, Shape{columns(x)}, "bias_add", "bias");
    require(y, x.shape(), "bias_add", "y");
    kernel(ops::bias_add)(rows(x), columns(x), x.data(), bias.data(), y.data());
}

void Backend::bias_backward(const Tensor& dy, Tensor& dbias) const {
    require(dy, dy.shape(), "bias_backward", "dy");
    require(dbias, Shape{columns(dy)}, "bias_backward", "dbias");
    kernel(ops::bias_backward)(rows(dy), columns(dy), dy.data(), dbias.data());
}

void Backend::softmax_forward(const Tensor& x, Tensor& y) const {
    require(x, x.shape(), "softmax_forward", "x");
    require(y, x.shape(), "softmax_forward", "y");
    kernel(ops::softmax_forward)(rows(x), columns(x), x.data(), y.data());
}

void Backend::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) const {
    require(y, y.shape(), "softmax_backward", "y");
    require(dy, y.shape(), "softmax_backward", "dy");
    require(dx, y.shape(), "softmax_backward", "dx");
    kernel(ops::softmax_backward)(rows(y), columns(y), y.data(), dy.data(), dx.data());
}

float Backend::mse_loss(const Tensor& prediction, const Tensor& target, Tensor& grad) const {
    require(prediction, prediction.shape(), "mse_loss", "prediction");
    require(target, prediction.shape(), "mse_loss", "target");
    require(grad, prediction.shape(), "mse_loss", "grad");
    return kernel(ops::mse_loss)(prediction.elements(), prediction.data(), target.data(),
                                 grad.data());
}

float Backend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                     Tensor& grad) const {
    Tensor result = allocate(Shape{cross_entropy_result_floats});
    softmax_cross_entropy(logits, labels, grad, result);
    return cross_entropy_loss(result, labels, columns(logits));
}

void Backend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& grad,
                                    Tensor& result) const {
    const std::string op = "softmax_cross_entropy";
    require(logits, logits.shape(), op, "logits");
    if (logits.shape().rank() != 2)
        throw InvalidArgument(op + ": logits must be (rows, classes), got shape " +
                              logits.shape().str());
    require(labels, Shape{rows(logits)}, op, "labels");
    require(grad, logits.shape(), op, "grad");
    require(result, Shape{cross_entropy_result_floats}, op, "result");
    kernel(ops::softmax_cross_entropy)(rows(logits), columns(logits), logits.data(), labels.data(),
                                       grad.data(),
                                       reinterpret_cast<CrossEntropyResult*>(result.data()));
}

float Backend::cross_entropy_loss(const Tensor& result, const Tensor& labels,
                                  std::int64_t classes) const {
    const std::string op = "softmax_cross_entropy";
    require(result, Shape{cross_entropy_result_floats}, op, "result");
    CrossEntropyResult values{};
    std::memcpy(&values, download(result).data(), sizeof values);
    if (values.first_bad_row != no_bad_row) {
        const auto row = static_cast<std::size_t>(values.first_bad_row);
        const float bad = download(labels)[row];
        throw InvalidArgument(op + ": label " + std::to_string(bad) + " at index " +
                              std::to_string(row) + " is not a class index in [0, " +
                              std::to_string(classes) + ")");
    }
    return values.loss;
}

float Backend::sum(const Tensor& x, Reduction mode) const {
    require(x, x.shape(), "sum", "x");
    return kernel(ops::sum)(x.elements(), x.data(), mode);
}

float Backend::mean(const Tensor& x, Reduction mode) const {
    require(x, x.shape(), "mean", "x");
    return kernel(ops::sum)(x.elements(), x.data(), mode) / static_cast<float>(x.elements());
}

namespace {
DenseShape dense_shape(const Tensor& X, const Tensor& W, Activation activation) {
    if (X.shape().rank() != 2 || W.shape().rank() != 2)
        throw InvalidArgument("dense_forward: X must be (batch, in) and W (out, in), got " +
                              X.shape().str() + " and " + W.shape().str());
    DenseShape s{X.shape()[0], X.shape()[1], W.shape()[0], activation};
    s.validate();
    return s;
}
}  // namespace

void Backend::dense_forward(const Tensor& X, const Tensor& W, const Tensor& b,
                            Activation activation, Tensor& Y) const {
    require(X, X.shape(), "dense_forward", "X");
    const DenseShape s = dense_shape(X, W, activation);
    require(W, Shape{s.out, s.in}, "dense_forward " + s.str(), "W");
    require(b, Shape{s.out}, "dense_forward " + s.str(), "b");
    require(Y, Shape{s.batch, s.out}, "dense_forward " + s.str(), "Y");
    if (implements(Op::dense_forward))
        kernel(ops::dense_forward)(s, X.data(), W.data(), b.data(), Y.data());
    else
        dense_forward_steps(s, X.data(), W.data(), b.data(), Y.data());
}

void Backend::dense_forward_unfused(const Tensor& X, const Tensor& W, const Tensor& b,
                                    Activation activation, Tensor& Y) const {
    require(X, X.shape(), "dense_forward_unfused", "X");
    const DenseShape s = dense_shape(X, W, activation);
    require(W, Shape{s.out, s.in}, "dense_forward_unfused " + s.str(), "W");
    require(b, Shape{s.out}, "dense_forward_unfused " + s.str(), "b");
    require(Y, Shape{s.batch, s.out}, "dense_forward_unfused " + s.str(), "Y");
    dense_forward_steps(s, X.data(), W.data(), b.data(), Y.data());
}

void Backend::dense_forward_steps(const DenseShape& s, const float* X, const float* W,
                                  const float* b, float* Y) const {
    kernel(ops::gemm)(s.gemm(), X, W, Y);
    kernel(ops::bias_add)(s.batch, s.out, Y, b, Y);
    if (s.activation != Activation::none) kernel(forward_op(s.activation))(s.batch * s.out, Y, Y);
}

void Backend::optimizer_step(const OptimizerConfig& config, std::int64_t step,
                             std::span<const OptimizerTensor> tensors,
                             const Tensor* corrections) const {
    config.validate();
    // Called once per training step, so the messages are only built when one is due.
    const auto op = [&] { return "optimizer_step " + config.str(); };
    if (step < 1) throw InvalidArgument(op() + ": step counts from 1, got " + std::to_string(step));
    const int states = config.state_tensors();
    const auto fits = [&](const Tensor* t, const Tensor& value) {
        return t != nullptr && t->data() != nullptr && t->owner() == this &&
               t->shape() == value.shape();
    };
    // The one allocation of a step: the raw pointers the variants' kernels take, a few dozen bytes
    // per tensor.
    std::vector<OptimizerSlot> slots;
    slots.reserve(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const OptimizerTensor& t = tensors[i];
        const auto which = [i] { return "tensor " + std::to_string(i); };
        if (t.value == nullptr || t.grad == nullptr)
            throw InvalidArgument(op() + ": " + which() + " has no value or no gradient");
        const Shape& shape = t.value->shape();
        if (!fits(t.value, *t.value)) require(*t.value, shape, op(), which() + "'s value");
        if (!fits(t.grad, *t.value)) require(*t.grad, shape, op(), which() + "'s gradient");
        for (int s = 0; s < 2; ++s) {
            if ((t.state[s] != nullptr) != (s < states))
                throw InvalidArgument(op() + ": " + which() + " needs " + std::to_string(states) +
                                      " state tensors, state " + std::to_string(s) +
                                      (s < states ? " is missing" : " is one too many"));
            if (s < states && !fits(t.state[s], *t.value))
                require(*t.state[s], shape, op(), which() + "'s state");
        }
        slots.push_back({t.value->elements(), t.value->data(), t.grad->data(),
                         states > 0 ? t.state[0]->data() : nullptr,
                         states > 1 ? t.state[1]->data() : nullptr});
    }
    OptimizerRule<float> rule = optimizer_rule<float>(config, step);
    if (corrections != nullptr) {
        require(*corrections, Shape{2}, op(), "the bias corrections");
        rule.corrections = corrections->data();
    }
    if (!slots.empty()) kernel(ops::optimizer_step)(rule, slots);
}

void Backend::unsupported(const std::string& op) const {
    throw Unsupported(name() + " does not implement " + op);
}

// --- convolution and pooling -------------------------------------------------------------------

namespace {
// The channel count of an NCHW tensor (dimension 1), or -1 if it is not rank 4.
std::int64_t channels(const Tensor& t) { return t.shape().rank() == 4 ? t.shape()[1] : -1; }

// Input and filters must agree on C; said in those words rather than as a shape mismatch.
void require_same_channels(const std::string& op, const Tensor& input, const Tensor& filters) {
    const std::int64_t c_in = channels(input), c_w = channels(filters);
    if (c_in > 0 && c_w > 0 && c_in != c_w)
        throw InvalidArgument(op + ": the input has " + std::to_string(c_in) +
                              " channels but the filters have " + std::to_string(c_w));
}
}  // namespace

std::string Backend::conv2d_op(const std::string& pass, const Conv2dShape& s,
                               ConvAlgorithm algorithm) const {
    s.validate();
    const std::string op = pass + " " + s.str() + " " + to_string(algorithm);
    const std::vector<ConvAlgorithm> have = conv2d_algorithms();
    for (ConvAlgorithm a : have)
        if (a == algorithm) return op;
    if (have.empty()) unsupported(pass);
    std::string names;
    for (ConvAlgorithm a : have) names += (names.empty() ? "" : ", ") + to_string(a);
    throw Unsupported(name() + " has no " + to_string(algorithm) + " algorithm for " + pass +
                      "; it has: " + names);
}

void Backend::conv2d_forward(const Conv2dShape& s, ConvAlgorithm algorithm, const Tensor& x,
                             const Tensor& w, const Tensor& b, Tensor& y) const {
    const std::string op = conv2d_op("conv2d_forward", s, algorithm);
    require_same_channels(op, x, w);
    require(x, s.x_shape(), op, "x");
    require(w, s.w_shape(), op, "w");
    require(b, s.b_shape(), op, "b");
    require(y, s.y_shape(), op, "y");
    kernel(ops::conv2d_forward)(s.with_unused_strides_small(), algorithm, x.data(), w.data(),
                                b.data(), y.data());
}

void Backend::conv2d_backward_data(const Conv2dShape& s, ConvAlgorithm algorithm, const Tensor& dy,
                                   const Tensor& w, Tensor& dx) const {
    const std::string op = conv2d_op("conv2d_backward_data", s, algorithm);
    require_same_channels(op, dx, w);
    require(dy, s.y_shape(), op, "dy");
    require(w, s.w_shape(), op, "w");
    require(dx, s.x_shape(), op, "dx");
    kernel(ops::conv2d_backward_data)(s.with_unused_strides_small(), algorithm, dy.data(), w.data(),
                                      dx.data());
}

void Backend::conv2d_backward_weights(const Conv2dShape& s, ConvAlgorithm algorithm,
                                      const Tensor& x, const Tensor& dy, Tensor& dw,
                                      Tensor& db) const {
    const std::string op = conv2d_op("conv2d_backward_weights", s, algorithm);
    require_same_channels(op, x, dw);
    require(x, s.x_shape(), op, "x");
    require(dy, s.y_shape(), op, "dy");
    require(dw, s.w_shape(), op, "dw");
    require(db, s.b_shape(), op, "db");
    kernel(ops::conv2d_backward_weights)(s.with_unused_strides_small(), algorithm, x.data(),
                                         dy.data(), dw.data(), db.data());
}

void Backend::max_pool2d_forward(const Pool2dShape& s, const Tensor& x, Tensor& y,
                                 Tensor& argmax) const {
    const std::string op = "max_pool2d_forward";
    s.validate(op);
    require(x, s.x_shape(), op, "x");
    require(y, s.y_shape(), op, "y");
    require(argmax, s.y_shape(), op, "argmax");
    kernel(ops::max_pool2d_forward)(s.with_unused_strides_small(), x.data(), y.data(),
                                    argmax.data());
}

void Backend::max_pool2d_backward(const Pool2dShape& s, const Tensor& dy, const Tensor& argmax,
                                  Tensor& dx) const {
    const std::string op = "max_pool2d_backward";
    s.validate(op);
    require(dy, s.y_shape(), op, "dy");
    require(argmax, s.y_shape(), op, "argmax");
    require(dx, s.x_shape(), op, "dx");
    kernel(ops::max_pool2d_backward)(s.with_unused_strides_small(), dy.data(), argmax.data(),
                                     dx.data());
}

void Backend::avg_pool2d_forward(const Pool2dShape& s, const Tensor& x, Tensor& y) const {
    const std::string op = "avg_pool2d_forward";
    s.validate(op);
    require(x, s.x_shape(), op, "x");
    require(y, s.y_shape(), op, "y");
    kernel(ops::avg_pool2d_forward)(s.with_unused_strides_small(), x.data(), y.data());
}

void Backend::avg_pool2d_backward(const Pool2dShape& s, const Tensor& dy, Tensor& dx) const {
    const std::string op = "avg_pool2d_backward";
    s.validate(op);
    require(dy, s.y_shape(), op, "dy");
    require(dx, s.x_shape(), op, "dx");
    kernel(ops::avg_pool2d_backward)(s.with_unused_strides_small(), dy.data(), dx.data());
}

}  // namespace triptych
