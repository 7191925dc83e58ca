// cpu_naive: the textbook loops, one thread, no library. The kernels are the templates of this
// folder (one header per op: gemm.hpp, activations.hpp, bias.hpp, softmax.hpp,
// losses.hpp, reduce.hpp, dense.hpp, conv2d.hpp, pool2d.hpp, optimizer.hpp), instantiated for
// float and registered at the bottom of each header; in double they are the reference that every
// check compares against.
#include "common/host_backend.hpp"
#include "common/registry.hpp"
#include "cpu/naive/activations.hpp"
#include "cpu/naive/bias.hpp"
#include "cpu/naive/conv2d.hpp"
#include "cpu/naive/dense.hpp"
#include "cpu/naive/gemm.hpp"
#include "cpu/naive/losses.hpp"
#include "cpu/naive/optimizer.hpp"
#include "cpu/naive/pool2d.hpp"
#include "cpu/naive/reduce.hpp"
#include "cpu/naive/softmax.hpp"

namespace triptych::cpu_naive {
namespace {

class CpuNaive final : public HostBackend {
public:
    CpuNaive() : HostBackend("cpu_naive") {}
    DeviceKind device_kind() const override { return DeviceKind::Cpu; }
    std::string device() const override { return "CPU, 1 thread"; }
    // The definition only: im2col and FFT are ways to go faster, which is not this variant's job.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct};
    }
};

[[maybe_unused]] const bool registered =
    register_backend("cpu_naive", 0, [] { return std::make_unique<CpuNaive>(); });

}  // namespace
}  // namespace triptych::cpu_naive
