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
