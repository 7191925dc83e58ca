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

}  // namespace triptych
