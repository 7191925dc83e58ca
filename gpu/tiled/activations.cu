// gpu_tiled activations: every activation of common/activations.hpp (ReLU, sigmoid, tanh, GELU),
// forward and backward, elementwise over n floats. y may be x, dx may be dy (in place).
//
// version 2: activation_forward_kernel<Act> / activation_backward_kernel<Act> (elementwise.hpp),
// float4 loads in a grid-stride loop (version 1 is gpu/naive/activations.cu).
//
// Why there is no shared-memory tiling here: tiling pays when a value loaded once is used many
// times (a GEMM uses each element of A N times). An activation uses each input exactly once, a few
// operations per 8 bytes moved (12 backward), so it is bound by memory bandwidth and no arithmetic
// trick helps; even sigmoid's exponential and division, or GELU's tanh and five multiplications,
// are far below what the GPU computes in the time the bytes take. What remains is to move the
// bytes with as few instructions as possible:
//   - float4: one 16-byte load or store per thread instead of four 4-byte ones;
//   - a grid-stride loop: a fixed grid that fills the GPU a few times over, each thread looping
//     over several float4s, instead of one thread (and its index arithmetic) per element.
// The next gain would be fusion: applying the activation as the producing op writes its output
// saves a whole round trip through memory (the dense layer's epilogue, gemm.cu).
//
// The float4 loop, its alignment split and the grid size live in elementwise.hpp, shared with the
// other elementwise kernels (bias.cu, and the sum and MSE kernels).
#include "gpu/runtime/cuda.hpp"

#include "common/activations.hpp"
#include "common/kernels.hpp"
#include "gpu/tiled/elementwise.hpp"

namespace triptych::gpu_tiled {

[[maybe_unused]] const bool registered = [] {
    for_each_activation([](auto act) {
        using Act = decltype(act);
        register_kernel("gpu_tiled", forward_op(Act::kind),
                        {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop",
                         activation_forward<Act>});
        register_kernel("gpu_tiled", backward_op(Act::kind),
                        {2, "float4_grid_stride", "float4 loads and stores in a grid-stride loop",
                         activation_backward<Act>});
    });
    return true;
}();

}  // namespace triptych::gpu_tiled
