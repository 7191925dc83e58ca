// gpu_tiled: see ops.hpp in this folder. Memory comes from GpuBackend; each op's kernel is
// registered at the bottom of its .cu file.
#include "common/registry.hpp"
#include "gpu/runtime/gpu_backend.hpp"

namespace triptych::gpu_tiled {
namespace {

class GpuTiled final : public gpu::GpuBackend {
public:
    GpuTiled() : GpuBackend("gpu_tiled") {}
    // Direct first (a tile and its halo in shared memory), then im2col + the tiled GEMM, then the
    // hand-written FFT. With im2col, the weight-gradient GEMM of LeNet's first layer (6 x 25,
    // summed over 50,176 terms) fills one block of the GPU; the direct pass splits the images
    // over many warps, and was many times faster on an H200 (the H200 table of
    // lessons/09_conv_im2col/README.md, "On a GPU").
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::fft,
                ConvAlgorithm::implicit_gemm};
    }
};

[[maybe_unused]] const bool registered = register_backend(
    "gpu_tiled", 3, [] { return std::make_unique<GpuTiled>(); }, gpu::available);

}  // namespace
}  // namespace triptych::gpu_tiled
