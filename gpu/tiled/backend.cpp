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
    // hand-written FFT. Measured on an H200 training LeNet (triptych train --profile): with
    // im2col the backward pass of the first convolution took 2.0 ms per batch of 64, its
    // weight-gradient GEMM (6 x 25, summed over 50,176 terms) filling one block of the GPU; the
    // direct pass, whose weight gradient splits the images over many warps, 0.16 ms.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::fft};
    }
};

[[maybe_unused]] const bool registered = register_backend(
    "gpu_tiled", 3, [] { return std::make_unique<GpuTiled>(); }, gpu::available);

}  // namespace
}  // namespace triptych::gpu_tiled
