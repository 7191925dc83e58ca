// gpu_tiled tanh: y = tanh(x), and its gradient from the forward's output, dx = dy * (1 - y^2),
// elementwise over n floats. y may be x, dx may be dy (in place).
//
// version 2: activation_forward_kernel<Tanh> / activation_backward_kernel<Tanh>
// (elementwise.hpp), float4 loads in a grid-stride loop
// (version 1 is gpu/naive/tanh.cu). Bound by memory bandwidth like every elementwise op: see
// relu.cu for why, and sigmoid.cu, its twin.
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/tiled/elementwise.hpp"

namespace triptych::gpu_tiled {

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::tanh_forward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", activation_forward<Tanh>}) &&
    register_kernel("gpu_tiled", ops::tanh_backward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", activation_backward<Tanh>});

}  // namespace triptych::gpu_tiled
