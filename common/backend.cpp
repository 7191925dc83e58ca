#include "common/backend.hpp"

#include "common/errors.hpp"

namespace triptych {

Tensor Backend::allocate(const Shape& shape) const {
    for (std::int64_t d : shape.dims())
        if (d < 1)
            throw InvalidArgument("allocate: every dimension must be >= 1, got shape " +
                                  shape.str() + " on " + name());
    return Tensor(shape, allocate_buffer(shape.elements()), this);
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
    if (t.owner() != this)
        throw InvalidArgument(op + ": " + what + " lives on backend " + t.owner()->name() +
                              ", not " + name() + "; move it with upload/download first");
    if (t.shape() != expected)
        throw InvalidArgument(op + ": " + what + " has shape " + t.shape().str() +
                              ", expected " + expected.str());
}

void Backend::gemm(const GemmShape& s, const Tensor& A, const Tensor& B, Tensor& C) const {
    s.validate();
    const std::string op = "gemm " + s.str();
    require(A, s.a_shape(), op, "A");
    require(B, s.b_shape(), op, "B");
    require(C, s.c_shape(), op, "C");
    gemm_impl(s, A.data(), B.data(), C.data());
}

void Backend::relu_forward(const Tensor& x, Tensor& y) const {
    require(x, x.shape(), "relu_forward", "x");
    require(y, x.shape(), "relu_forward", "y");
    relu_forward_impl(x.elements(), x.data(), y.data());
}

void Backend::relu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) const {
    require(x, x.shape(), "relu_backward", "x");
    require(dy, x.shape(), "relu_backward", "dy");
    require(dx, x.shape(), "relu_backward", "dx");
    relu_backward_impl(x.elements(), x.data(), dy.data(), dx.data());
}

namespace {
std::int64_t columns(const Tensor& t) { return t.shape().columns(); }
std::int64_t rows(const Tensor& t) { return t.shape().rows(); }
}  // namespace

void Backend::bias_add(const Tensor& x, const Tensor& bias, Tensor& y) const {
    require(x, x.shape(), "bias_add", "x");
    require(bias, Shape{columns(x)}, "bias_add", "bias");
    require(y, x.shape(), "bias_add", "y");
    bias_add_impl(rows(x), columns(x), x.data(), bias.data(), y.data());
}

void Backend::bias_backward(const Tensor& dy, Tensor& dbias) const {
    require(dy, dy.shape(), "bias_backward", "dy");
    require(dbias, Shape{columns(dy)}, "bias_backward", "dbias");
    bias_backward_impl(rows(dy), columns(dy), dy.data(), dbias.data());
}

void Backend::sigmoid_forward(const Tensor& x, Tensor& y) const {
    require(x, x.shape(), "sigmoid_forward", "x");
    require(y, x.shape(), "sigmoid_forward", "y");
    sigmoid_forward_impl(x.elements(), x.data(), y.data());
}

void Backend::sigmoid_backward(const Tensor& y, const Tensor& dy, Tensor& dx) const {
    require(y, y.shape(), "sigmoid_backward", "y");
    require(dy, y.shape(), "sigmoid_backward", "dy");
    require(dx, y.shape(), "sigmoid_backward", "dx");
    sigmoid_backward_impl(y.elements(), y.data(), dy.data(), dx.data());
}

void Backend::tanh_forward(const Tensor& x, Tensor& y) const {
    require(x, x.shape(), "tanh_forward", "x");
    require(y, x.shape(), "tanh_forward", "y");
    tanh_forward_impl(x.elements(), x.data(), y.data());
}

void Backend::tanh_backward(const Tensor& y, const Tensor& dy, Tensor& dx) const {
    require(y, y.shape(), "tanh_backward", "y");
    require(dy, y.shape(), "tanh_backward", "dy");
    require(dx, y.shape(), "tanh_backward", "dx");
    tanh_backward_impl(y.elements(), y.data(), dy.data(), dx.data());
}

void Backend::softmax_forward(const Tensor& x, Tensor& y) const {
    require(x, x.shape(), "softmax_forward", "x");
    require(y, x.shape(), "softmax_forward", "y");
    softmax_forward_impl(rows(x), columns(x), x.data(), y.data());
}

void Backend::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) const {
    require(y, y.shape(), "softmax_backward", "y");
    require(dy, y.shape(), "softmax_backward", "dy");
    require(dx, y.shape(), "softmax_backward", "dx");
    softmax_backward_impl(rows(y), columns(y), y.data(), dy.data(), dx.data());
}

float Backend::mse_loss(const Tensor& prediction, const Tensor& target, Tensor& grad) const {
    require(prediction, prediction.shape(), "mse_loss", "prediction");
    require(target, prediction.shape(), "mse_loss", "target");
    require(grad, prediction.shape(), "mse_loss", "grad");
    return mse_loss_impl(prediction.elements(), prediction.data(), target.data(), grad.data());
}

float Backend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                     Tensor& grad) const {
    const std::string op = "softmax_cross_entropy";
    require(logits, logits.shape(), op, "logits");
    if (logits.shape().rank() != 2)
        throw InvalidArgument(op + ": logits must be (rows, classes), got shape " +
                              logits.shape().str());
    require(labels, Shape{rows(logits)}, op, "labels");
    require(grad, logits.shape(), op, "grad");
    const LossResult result = softmax_cross_entropy_impl(rows(logits), columns(logits),
                                                         logits.data(), labels.data(), grad.data());
    if (result.first_bad_label >= 0) {
        const float bad = download(labels)[static_cast<std::size_t>(result.first_bad_label)];
        throw InvalidArgument(op + ": label " + std::to_string(bad) + " at index " +
                              std::to_string(result.first_bad_label) +
                              " is not a class index in [0, " + std::to_string(columns(logits)) +
                              ")");
    }
    return result.loss;
}

float Backend::sum(const Tensor& x, Reduction mode) const {
    require(x, x.shape(), "sum", "x");
    return sum_impl(x.elements(), x.data(), mode);
}

float Backend::mean(const Tensor& x, Reduction mode) const {
    require(x, x.shape(), "mean", "x");
    return sum_impl(x.elements(), x.data(), mode) / static_cast<float>(x.elements());
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
    dense_forward_impl(s, X.data(), W.data(), b.data(), Y.data());
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
    gemm_impl(s.gemm(), X, W, Y);
    bias_add_impl(s.batch, s.out, Y, b, Y);
    const std::int64_t n = s.batch * s.out;
    switch (s.activation) {
        case Activation::none:
            break;
        case Activation::relu:
            relu_forward_impl(n, Y, Y);
            break;
        case Activation::sigmoid:
            sigmoid_forward_impl(n, Y, Y);
            break;
        case Activation::tanh:
            tanh_forward_impl(n, Y, Y);
            break;
    }
}

void Backend::dense_forward_impl(const DenseShape& s, const float* X, const float* W,
                                 const float* b, float* Y) const {
    dense_forward_steps(s, X, W, b, Y);
}

void Backend::bias_add_impl(std::int64_t, std::int64_t, const float*, const float*, float*) const {
    unsupported("bias_add");
}
void Backend::bias_backward_impl(std::int64_t, std::int64_t, const float*, float*) const {
    unsupported("bias_backward");
}
void Backend::sigmoid_forward_impl(std::int64_t, const float*, float*) const {
    unsupported("sigmoid_forward");
}
void Backend::sigmoid_backward_impl(std::int64_t, const float*, const float*, float*) const {
    unsupported("sigmoid_backward");
}
void Backend::tanh_forward_impl(std::int64_t, const float*, float*) const {
    unsupported("tanh_forward");
}
void Backend::tanh_backward_impl(std::int64_t, const float*, const float*, float*) const {
    unsupported("tanh_backward");
}
void Backend::softmax_forward_impl(std::int64_t, std::int64_t, const float*, float*) const {
    unsupported("softmax_forward");
}
void Backend::softmax_backward_impl(std::int64_t, std::int64_t, const float*, const float*,
                                    float*) const {
    unsupported("softmax_backward");
}
float Backend::mse_loss_impl(std::int64_t, const float*, const float*, float*) const {
    unsupported("mse_loss");
}
Backend::LossResult Backend::softmax_cross_entropy_impl(std::int64_t, std::int64_t, const float*,
                                                        const float*, float*) const {
    unsupported("softmax_cross_entropy");
}
float Backend::sum_impl(std::int64_t, const float*, Reduction) const { unsupported("sum"); }

void Backend::unsupported(const std::string& op) const {
    throw Unsupported(name() + " does not implement " + op);
}

void Backend::gemm_impl(const GemmShape&, const float*, const float*, float*) const {
    unsupported("gemm");
}

void Backend::relu_forward_impl(std::int64_t, const float*, float*) const {
    unsupported("relu_forward");
}

void Backend::relu_backward_impl(std::int64_t, const float*, const float*, float*) const {
    unsupported("relu_backward");
}

}  // namespace triptych
