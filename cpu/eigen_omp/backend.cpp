// cpu_eigen_omp: Eigen + OpenMP on every CPU thread; the CPU side of every speedup.
#include <omp.h>

#include "common/host_backend.hpp"
#include "common/registry.hpp"
#include "cpu/eigen_omp/ops.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

class CpuEigenOmp final : public HostBackend {
public:
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
};

[[maybe_unused]] const bool registered =
    register_backend("cpu_eigen_omp", 1, [] { return std::make_unique<CpuEigenOmp>(); });

}  // namespace
}  // namespace triptych::cpu_eigen_omp
