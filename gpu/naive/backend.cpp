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
};

[[maybe_unused]] const bool registered = register_backend(
    "gpu_naive", 2, [] { return std::make_unique<GpuNaive>(); }, gpu::available);

}  // namespace
}  // namespace triptych::gpu_naive
