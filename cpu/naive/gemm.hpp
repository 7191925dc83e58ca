// cpu_naive gemm: the textbook triple loop, C = alpha * op(A) * op(B) + beta * C (see GemmShape).
//
// A template, so the same lines are both the float32 cpu_naive variant and, instantiated for
// double, the float64 reference that every other variant is checked against.
#pragma once

#include <cstdint>

#include "common/kernels.hpp"
#include "common/ops.hpp"

namespace triptych::cpu_naive {

// A is (M, K) or (K, M) if trans_a; B is (K, N) or (N, K) if trans_b; C is (M, N); row-major.
// Each C[m, n] is one dot product over k, accumulated in T.
template <typename T>
void gemm(const GemmShape& s, const T* A, const T* B, T* C) {
    const std::int64_t M = s.M, N = s.N, K = s.K;
    for (std::int64_t m = 0; m < M; ++m) {
        for (std::int64_t n = 0; n < N; ++n) {
            T dot = 0;
            for (std::int64_t k = 0; k < K; ++k) {
                const T a = s.trans_a ? A[k * M + m] : A[m * K + k];
                const T b = s.trans_b ? B[n * K + k] : B[k * N + n];
                dot += a * b;
            }
            // beta == 0 means "do not read C": it may hold NaN.
            const T scaled_c = s.beta == 0 ? T(0) : T(s.beta) * C[m * N + n];
            C[m * N + n] = T(s.alpha) * dot + scaled_c;
        }
    }
}

// The variant's kernel (common/kernels.hpp): version 1 of the CPU ladder.
[[maybe_unused]] inline const bool gemm_registered = register_kernel(
    "cpu_naive", ops::gemm,
    {1, "loops", "the definition: a dot product of K terms for every element of C", gemm<float>});

}  // namespace triptych::cpu_naive
