// gpu_tiled sigmoid: y = 1 / (1 + e^-x), and its gradient from the forward's output,
// dx = dy * y * (1 - y), elementwise over n floats. y may be x, dx may be dy (in place).
//
// version 2: activation_forward_kernel<Sigmoid> / activation_backward_kernel<Sigmoid>
// (elementwise.hpp), float4 loads in a grid-stride loop
// (version 1 is gpu/naive/sigmoid.cu).
//
// Like ReLU (see relu.cu), sigmoid uses each input once: one exponential and a division per 8 bytes
// moved is still far below what the GPU can compute in the time the bytes take, so the kernel is
// bound by memory bandwidth, and the gain over version 1 comes from moving the bytes in 16-byte
// accesses (elementwise.hpp). The backward pass reads y rather than x so that it needs no
// exponential at all.
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/tiled/elementwise.hpp"

namespace triptych::gpu_tiled {

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::sigmoid_forward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", activation_forward<Sigmoid>}) &&
    register_kernel("gpu_tiled", ops::sigmoid_backward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", activation_backward<Sigmoid>});

}  // namespace triptych::gpu_tiled
