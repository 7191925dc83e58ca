// Parameter structs of the ops. Each has a `validate()` that throws InvalidArgument naming the op
// and the offending values, so every backend rejects bad input the same way.
#pragma once

#include <cstdint>
#include <string>

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

// The activation a fused dense layer applies before its store.
enum class Activation { none, relu, sigmoid, tanh };
std::string to_string(Activation activation);

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

}  // namespace triptych
