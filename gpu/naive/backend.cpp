// gpu_naive: see ops.hpp in this folder. Memory comes from GpuBackend; each op's kernel is
// registered at the bottom of its .cu file.
#include "common/registry.hpp"
#include "gpu/runtime/gpu_backend.hpp"

namespace triptych::gpu_naive {
namespace {

class GpuNaive final : public gpu::GpuBackend {
public:
    GpuNaive() : GpuBackend("gpu_naive") {}
    // One thread per output, the definition on a GPU. dense_forward has no kernel here: the
    // Backend runs gemm, bias_add and the activation as three launches (see ops.hpp).
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct};
    }
};

[[maybe_unused]] const bool registered = register_backend(
    "gpu_naive", 2, [] { return std::make_unique<GpuNaive>(); }, gpu::available);

}  // namespace
}  // namespace triptych::gpu_naive
