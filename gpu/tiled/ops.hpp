// gpu_tiled: the optimised hand-written kernels. GEMM stages tiles of A and B in shared memory and
// gives each thread an 8x8 block of C in registers (versions 3-8 of the ladder, gemm.cu); the
// fused dense forward is that GEMM with bias and activation applied before the store. Elementwise ops, which have no data to reuse, use
// float4 loads and a grid-stride loop instead (elementwise.hpp); reductions use shared-memory trees
// and warp shuffles (block_reduce.hpp). See each .cu file for why.
// Host launchers, one op per .cu file; every pointer is device memory.
#pragma once

#include <cstdint>
#include <span>

#include "common/ops.hpp"
#include "common/optimizer_rule.hpp"

namespace triptych::gpu_tiled {

// gemm.cu: the default GEMM (version 8 of the ladder, see gemm.cu), which the im2col
// convolution also runs; and Y = act(X * W^T + b) in one kernel, version 8 with a bias +
// activation epilogue. The other versions are registered in their own files (gemm_v*.cu).
void gemm(const GemmShape& s, const float* A, const float* B, float* C);
void dense_forward(const DenseShape& s, const float* X, const float* W, const float* b, float* Y);

// relu.cu, sigmoid.cu, tanh.cu: elementwise over n floats; y may be x.
void relu_forward(std::int64_t n, const float* x, float* y);
void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx);
void sigmoid_forward(std::int64_t n, const float* x, float* y);
void sigmoid_backward(std::int64_t n, const float* y, const float* dy, float* dx);
void tanh_forward(std::int64_t n, const float* x, float* y);
void tanh_backward(std::int64_t n, const float* y, const float* dy, float* dx);

// bias.cu: x, y, dy are (rows, cols); bias, dbias are (cols); y may be x.
void bias_add(std::int64_t rows, std::int64_t cols, const float* x, const float* bias, float* y);
void bias_backward(std::int64_t rows, std::int64_t cols, const float* dy, float* dbias);

// softmax.cu: row-wise over (rows, cols).
void softmax_forward(std::int64_t rows, std::int64_t cols, const float* x, float* y);
void softmax_backward(std::int64_t rows, std::int64_t cols, const float* y, const float* dy,
                      float* dx);

// reduce.cu: the sum of n floats, returned to the host.
float sum(std::int64_t n, const float* x, Reduction mode);

// losses.cu: the mean loss, returned to the host; the gradient written to grad. Both reduce in
// Reduction::deterministic mode. softmax_cross_entropy sets first_bad_label to the first row whose
// label is not a class index in [0, classes), or -1.
float mse_loss(std::int64_t n, const float* prediction, const float* target, float* grad);
float softmax_cross_entropy(std::int64_t rows, std::int64_t classes, const float* logits,
                            const float* labels, float* grad, std::int64_t& first_bad_label);

// conv2d.cpp / conv2d.cu: the three conv2d passes with `algorithm` one of the variant's
// conv2d_algorithms(); shapes as in Backend::conv2d_forward (common/backend.hpp).
void conv2d_forward(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x, const float* w,
                    const float* b, float* y);
void conv2d_backward_data(const Conv2dShape& s, ConvAlgorithm algorithm, const float* dy,
                          const float* w, float* dx);
void conv2d_backward_weights(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                             const float* dy, float* dw, float* db);

// pool2d.cpp / pool2d.cu: max and average pooling, as Backend::max_pool2d_forward and friends.
void max_pool2d_forward(const Pool2dShape& s, const float* x, float* y, float* argmax);
void max_pool2d_backward(const Pool2dShape& s, const float* dy, const float* argmax, float* dx);
void avg_pool2d_forward(const Pool2dShape& s, const float* x, float* y);
void avg_pool2d_backward(const Pool2dShape& s, const float* dy, float* dx);

// optimizer.cu: one step of `rule` over every tensor of `tensors` in one launch (a multi-tensor
// apply; several launches for more than 64 tensors). Each tensor: n elements of value, updated in
// place from grad, with the state tensors the rule uses (the others null).
void optimizer_step(const OptimizerRule<float>& rule, std::span<const OptimizerSlot> tensors);

}  // namespace triptych::gpu_tiled
