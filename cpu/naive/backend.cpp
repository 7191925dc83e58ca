// cpu_naive: the textbook loops, one thread, no library. Every op forwards to the templates in
// this folder (gemm.hpp, relu.hpp), instantiated for float.
#include "common/host_backend.hpp"
#include "common/registry.hpp"
#include "cpu/naive/gemm.hpp"
#include "cpu/naive/relu.hpp"

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
};

[[maybe_unused]] const bool registered =
    register_backend("cpu_naive", 0, [] { return std::make_unique<CpuNaive>(); });

}  // namespace
}  // namespace triptych::cpu_naive
