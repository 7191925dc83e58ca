// gpu_tiled ReLU: y = max(x, 0), and its gradient dx = (x > 0 ? dy : 0), elementwise over n floats.
//
// version 2: activation_forward_kernel<Relu> / activation_backward_kernel<Relu>
// (elementwise.hpp), float4 loads in a grid-stride loop
// (version 1 is gpu/naive/relu.cu).
//
// Why there is no shared-memory tiling here: tiling pays when a value loaded once is used many
// times (a GEMM uses each element of A N times). ReLU uses each input exactly once, one compare per
// 8 bytes moved (12 backward), so it is bound by memory bandwidth and no arithmetic trick helps.
// What remains is to move the bytes with as few instructions as possible:
//   - float4: one 16-byte load or store per thread instead of four 4-byte ones;
//   - a grid-stride loop: a fixed grid that fills the GPU a few times over, each thread looping
//     over several float4s, instead of one thread (and its index arithmetic) per element.
// The next gain would be fusion: applying ReLU as the producing op writes its output saves a whole
// round trip through memory.
//
// The float4 loop, its alignment split and the grid size live in elementwise.hpp, shared with the
// other elementwise kernels (sigmoid.cu, tanh.cu, bias.cu).
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/tiled/elementwise.hpp"

namespace triptych::gpu_tiled {

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::relu_forward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", activation_forward<Relu>}) &&
    register_kernel("gpu_tiled", ops::relu_backward,
                    {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop", activation_backward<Relu>});

}  // namespace triptych::gpu_tiled
