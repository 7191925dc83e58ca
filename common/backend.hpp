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

protected:
    // Memory of this backend: `count` floats, filled with NaN; freed when the last Tensor goes.
    virtual std::shared_ptr<float> allocate_buffer(std::int64_t count) const = 0;
    virtual void copy_to_backend(float* dst, const float* src, std::int64_t count) const = 0;
    virtual void copy_to_host(float* dst, const float* src, std::int64_t count) const = 0;

    virtual void gemm_impl(const GemmShape& shape, const float* A, const float* B, float* C) const;
    virtual void relu_forward_impl(std::int64_t n, const float* x, float* y) const;
    virtual void relu_backward_impl(std::int64_t n, const float* x, const float* dy,
                                    float* dx) const;

    // Throws Unsupported("<backend> does not implement <op>").
    [[noreturn]] void unsupported(const std::string& op) const;

private:
    // Throws InvalidArgument unless `t` is a non-empty tensor of this backend with `expected` shape.
    void require(const Tensor& t, const Shape& expected, const std::string& op,
                 const std::string& what) const;
};

}  // namespace triptych
