// Parameter structs of the ops. Each has a `validate()` that throws InvalidArgument naming the op
// and the offending values, so every backend rejects bad input the same way.
#pragma once

#include <cstdint>
#include <string>

#include "common/activations.hpp"
#include "common/shape.hpp"

namespace triptych {

// C = alpha * op(A) * op(B) + beta * C, row-major, as in BLAS sgemm.
//   op(A) is M x K: A is stored (M, K), or (K, M) when trans_a.
//   op(B) is K x N: B is stored (K, N), or (N, K) when trans_b.
//   C is (M, N). When beta == 0, C is not read (it may hold garbage or NaN), as in BLAS.
struct GemmShape {
    std::int64_t M = 1, N = 1, K = 1;
    bool trans_a = false, trans_b = false;
    float alpha = 1.0f, beta = 0.0f;

    void validate() const;
    Shape a_shape() const { return trans_a ? Shape{K, M} : Shape{M, K}; }
    Shape b_shape() const { return trans_b ? Shape{N, K} : Shape{K, N}; }
    Shape c_shape() const { return Shape{M, N}; }
    // "67x45x91 NT": sizes, then N or T for A and B.
    std::string str() const;
    // 2*M*N*K: one multiply and one add per term of every dot product.
    double flops() const { return 2.0 * double(M) * double(N) * double(K); }
};

// Activation (the activation a fused dense layer applies before its store): common/activations.hpp.

// A fully connected layer's forward pass: Y = act(X * W^T + b).
//   X is (batch, in), W is (out, in) (one row of weights per output, as PyTorch stores them),
//   b is (out), Y is (batch, out).
struct DenseShape {
    std::int64_t batch = 1, in = 1, out = 1;
    Activation activation = Activation::none;

    void validate() const;
    // The GEMM inside it: M = batch, N = out, K = in, B transposed.
    GemmShape gemm() const { return GemmShape{batch, out, in, false, true, 1.0f, 0.0f}; }
    // "64x784->256 relu"
    std::string str() const;
};

// How a reduction adds its terms.
//   deterministic: a fixed order, so the same input gives the same bits on every run
//                  (the losses use this mode);
//   fast:          whatever order is quickest (atomics on a GPU); the last bits may vary.
enum class Reduction { deterministic, fast };

// Whether `label`, a class index stored as a float (or double, in the reference), names one of
// `classes` classes: an integer in [0, classes). NaN and 2.5 are not class indices.
template <typename T>
bool is_class_index(T label, std::int64_t classes) {
    return label >= T(0) && label < T(classes) && T(static_cast<std::int64_t>(label)) == label;
}

// What softmax_cross_entropy's kernel leaves in its backend's memory, so that a step need not wait
// for its loss: the mean loss, and the first row whose label is not a class index, or all ones
// (no_bad_row) when every label is one. 16 bytes: cross_entropy_result_floats floats of a tensor.
struct CrossEntropyResult {
    float loss;
    float padding;  // puts first_bad_row on its 8-byte boundary
    std::uint64_t first_bad_row;
};
static_assert(sizeof(CrossEntropyResult) == 16);
inline constexpr std::int64_t cross_entropy_result_floats = 4;
inline constexpr std::uint64_t no_bad_row = ~std::uint64_t(0);

// --- convolution and pooling (NCHW) ------------------------------------------------------------

// How a convolution is computed (lessons 08-10):
//   direct  the definition: every output a sum over C x R x S input-filter products;
//   im2col  the input unrolled into a matrix of patches, then one GEMM (col2im for dX);
//   fft     the convolution theorem: transform, multiply pointwise, transform back;
//   implicit_gemm  im2col's GEMM with its tiles of patches gathered from the input as it goes,
//           the matrix never stored (GPU panels only);
//   winograd  Winograd's minimal filtering, for 3x3 and 5x5 filters at stride 1 only
//           (winograd_applies; cpu_eigen_omp only): F(2x2, 3x3), each 2x2 block of outputs from
//           16 multiplications instead of 36; for 5x5, F(4, 5) down the columns, each 4 outputs
//           of a filter column from 8 instead of 20.
// Every algorithm computes the same numbers; each variant implements those that make sense for it
// (Backend::conv2d_algorithms).
enum class ConvAlgorithm { direct, im2col, fft, implicit_gemm, winograd };
inline constexpr ConvAlgorithm conv_algorithms[] = {
    ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::fft, ConvAlgorithm::implicit_gemm,
    ConvAlgorithm::winograd};
std::string to_string(ConvAlgorithm algorithm);

// A 2D convolution, as every deep-learning framework defines it (a cross-correlation: the filter
// is not flipped):
//   x (N, C, H, W), w (K, C, R, S), b (K)  ->  y (N, K, P, Q)
//   y[n, k, p, q] = b[k] + sum_{c, r, s} x[n, c, p*stride_h + r - pad_h, q*stride_w + s - pad_w]
//                                         * w[k, c, r, s]
// where x reads as 0 outside the image (zero padding). P = (H + 2 pad_h - R) / stride_h + 1,
// Q likewise (rounded down: a window that would run past the padded edge is dropped).
struct Conv2dShape {
    std::int64_t N = 1, C = 1, H = 1, W = 1;  // input
    std::int64_t K = 1, R = 1, S = 1;         // K filters of C x R x S
    std::int64_t stride_h = 1, stride_w = 1;
    std::int64_t pad_h = 0, pad_w = 0;

    // InvalidArgument naming the values: sizes < 1, stride < 1, padding < 0, a padded input of
    // 2^31 rows or columns or more, or a filter larger than the padded input.
    void validate() const;
    // The same convolution with the stride of each axis that has one output (P or Q of 1) made
    // the smallest that keeps it one: a single window never moves, so every pass computes the
    // same numbers, and the kernels' 32-bit arithmetic never meets a stride of billions. What
    // Backend hands the variants.
    Conv2dShape with_unused_strides_small() const;
    std::int64_t P() const { return (H + 2 * pad_h - R) / stride_h + 1; }
    std::int64_t Q() const { return (W + 2 * pad_w - S) / stride_w + 1; }
    Shape x_shape() const { return Shape{N, C, H, W}; }
    Shape w_shape() const { return Shape{K, C, R, S}; }
    Shape b_shape() const { return Shape{K}; }
    Shape y_shape() const { return Shape{N, K, P(), Q()}; }
    // "N64 C1 H28 W28 K6 R5 S5 stride 1,1 pad 2,2"
    std::string str() const;
    // 2*N*K*P*Q*C*R*S: the direct algorithm's multiplies and adds (the benchmarks count every
    // algorithm's work this way, so GFLOP/s compare time for the same result).
    double flops() const {
        return 2.0 * double(N) * double(K) * double(P()) * double(Q()) * double(C) * double(R) *
               double(S);
    }
};

// Whether the winograd algorithm computes this shape: a 3x3 or 5x5 filter at stride 1 (any
// padding, channels and sizes; the stride of an axis with one output counts as none, as Backend
// hands it on). Winograd's transforms are made for one filter size each, as cuDNN's are; a
// variant asked for anything else throws Unsupported.
inline bool winograd_applies(const Conv2dShape& s) {
    const Conv2dShape used = s.with_unused_strides_small();
    return s.R == s.S && (s.R == 3 || s.R == 5) && used.stride_h == 1 && used.stride_w == 1;
}

// Whether `algorithm` is defined for this shape at all: every algorithm but winograd is (a
// variant may still refuse a shape its library lacks, as cuDNN's FFT does strides). Benchmarks,
// tests and lessons skip the shapes an algorithm is not defined for.
inline bool conv_algorithm_applies(ConvAlgorithm algorithm, const Conv2dShape& s) {
    return algorithm != ConvAlgorithm::winograd || winograd_applies(s);
}

// A 2D pooling window slid over every channel of x (N, C, H, W) -> y (N, C, P, Q), with
// P = (H + 2 pad_h - window_h) / stride_h + 1 and Q likewise. Padding is never a candidate: a max
// ignores it, an average divides by the number of input elements its window covers (PyTorch's
// count_include_pad=False). Windows may overlap (3x3 stride 2).
struct Pool2dShape {
    std::int64_t N = 1, C = 1, H = 1, W = 1;
    std::int64_t window_h = 2, window_w = 2;
    std::int64_t stride_h = 2, stride_w = 2;
    std::int64_t pad_h = 0, pad_w = 0;

    // InvalidArgument naming the values: sizes, windows or strides < 1, padding < 0 or more than
    // half the window (as PyTorch: every window then covers at least one input element), a padded
    // input of 2^31 rows or columns or more, a window larger than the padded input, or a plane of
    // more than 2^24 elements (max pooling keeps its argmax indices as floats, exact up to 2^24).
    void validate(const std::string& op = "pool2d") const;
    // As Conv2dShape's: each stride that moves no window made the smallest that keeps one.
    Pool2dShape with_unused_strides_small() const;
    std::int64_t P() const { return (H + 2 * pad_h - window_h) / stride_h + 1; }
    std::int64_t Q() const { return (W + 2 * pad_w - window_w) / stride_w + 1; }
    Shape x_shape() const { return Shape{N, C, H, W}; }
    Shape y_shape() const { return Shape{N, C, P(), Q()}; }
    // "N64 C6 H28 W28 window 2x2 stride 2,2 pad 0,0"
    std::string str() const;
};

// --- optimizers (lesson 12) -----------------------------------------------------------------

enum class OptimizerKind { sgd, adam, rmsprop };
std::string to_string(OptimizerKind kind);

// The hyperparameters of an optimizer, with PyTorch's defaults and update rules
// (torch.optim.SGD, Adam/AdamW and RMSprop), written out in common/optimizer_rule.hpp. Fields a
// kind does not use are ignored.
struct OptimizerConfig {
    OptimizerKind kind = OptimizerKind::sgd;
    float lr = 0.01f;
    float weight_decay = 0.0f;            // L2 penalty added to the gradient (decoupled for AdamW)
    float momentum = 0.0f;                // sgd, rmsprop
    bool nesterov = false;                // sgd (needs momentum > 0)
    float beta1 = 0.9f, beta2 = 0.999f;   // adam: decay of the gradient's mean and mean square
    bool decoupled_weight_decay = false;  // adam: AdamW, w -= lr * weight_decay * w apart
    float alpha = 0.99f;                  // rmsprop: decay of the mean square
    float eps = 1e-8f;                    // adam, rmsprop: keeps the division finite

    // InvalidArgument naming the values: lr <= 0 or not finite, momentum/betas/alpha outside
    // [0, 1), eps <= 0, weight_decay < 0, nesterov without momentum.
    void validate() const;
    // How many state tensors (each the shape of its parameter, zero at the start) a parameter
    // needs: sgd 1 with momentum else 0; adam 2 (mean, mean square); rmsprop 1, 2 with momentum.
    int state_tensors() const;
    // "adam lr=0.001 betas=0.9,0.999 eps=1e-08"
    std::string str() const;
};

// One parameter tensor of an optimizer step, as raw pointers (what the variants' code receives
// from Backend::optimizer_step, which has checked the tensors): n elements of value, grad, and
// state0 / state1 (null when the optimizer needs fewer state tensors).
struct OptimizerSlot {
    std::int64_t n = 0;
    float* value = nullptr;
    const float* grad = nullptr;
    float* state0 = nullptr;
    float* state1 = nullptr;
};

}  // namespace triptych
