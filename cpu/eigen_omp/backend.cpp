// cpu_eigen_omp: Eigen + OpenMP on every CPU thread; the CPU side of every speedup. Each op's
// kernel is registered at the bottom of its file (see ops.hpp).
#include <omp.h>

#include <algorithm>

#include "common/host_backend.hpp"
#include "common/registry.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

class CpuEigenOmp final : public HostBackend {
public:
    CpuEigenOmp() : HostBackend("cpu_eigen_omp") { use_one_thread_pool(); }
    DeviceKind device_kind() const override { return DeviceKind::Cpu; }
    std::string device() const override {
        const int threads = omp_get_max_threads();
        return "CPU, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
    }
    // Direct first: the register-blocked kernels of conv_direct.cpp beat im2col + sgemm several
    // times over on LeNet's layers, forward and backward (lesson 08's table); FFT pays only for
    // large filters (lesson 10's crossover); Winograd computes 3x3 and 5x5 filters at stride 1
    // only. The Conv2d layer takes the first.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::fft,
                ConvAlgorithm::winograd};
    }

protected:
    // An upload (a training batch) copied by slices, as every op splits its work (parallel.hpp):
    // each thread writes the images it computes first.
    void copy_to_backend(float* dst, const float* src, std::int64_t count) const override {
        for_each_slice(count, 2, [&](std::int64_t begin, std::int64_t n) {
            std::copy(src + begin, src + begin + n, dst + begin);
        });
    }
};

[[maybe_unused]] const bool registered =
    register_backend("cpu_eigen_omp", 1, [] { return std::make_unique<CpuEigenOmp>(); });

}  // namespace
}  // namespace triptych::cpu_eigen_omp
