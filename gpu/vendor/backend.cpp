// gpu_vendor: NVIDIA's libraries, the ceiling every hand-written kernel is measured against.
// Built only for a real GPU (TRIPTYCH_GPU=cuda). GEMM is cuBLAS (gemm.cpp); ReLU, sigmoid, tanh,
// softmax (activations.cpp), the bias and its gradient (bias.cpp), conv2d (conv2d.cpp) and
// average pooling forward (pool2d.cpp) are cuDNN (cudnn.hpp); sum is CUB (reduce.cu). The other
// ops throw Unsupported, so checks and benchmarks skip them: pool2d.cpp says why for pooling;
// the losses and the optimizers' steps are no call of these libraries.
#include "common/registry.hpp"
#include "gpu/runtime/gpu_backend.hpp"

namespace triptych::gpu_vendor {
namespace {

class GpuVendor final : public gpu::GpuBackend {
public:
    GpuVendor() : GpuBackend("gpu_vendor") {}
    // direct is cuDNN's fastest algorithm for the shape, the true ceiling, so it comes first.
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::fft,
                ConvAlgorithm::implicit_gemm};
    }
};

[[maybe_unused]] const bool registered = register_backend(
    "gpu_vendor", 4, [] { return std::make_unique<GpuVendor>(); }, gpu::available);

}  // namespace
}  // namespace triptych::gpu_vendor
