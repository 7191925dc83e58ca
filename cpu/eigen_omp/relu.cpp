// cpu_eigen_omp ReLU: Eigen arrays for the SIMD, OpenMP for the threads. The formulas are Relu's
// (common/activations.hpp), NaN rule included, written as Eigen selects so that they vectorise.
//
// ReLU does one comparison per 8 bytes moved, so it is bound by memory bandwidth, not arithmetic.
// Each OpenMP thread takes one contiguous slice, which Eigen vectorises (for_each_slice in
// parallel.hpp; small tensors stay on one thread).
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

void relu_forward(std::int64_t n, const float* x, float* y) {
    for_each_slice(n, 1, [&](std::int64_t begin, std::int64_t count) {
        Eigen::Map<const Array> in(x + begin, count);
        Eigen::Map<Array> out(y + begin, count);
        out = (in < 0.0f).select(0.0f, in);  // Relu::forward: NaN fails the test, stays NaN
    });
}

void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx) {
    for_each_slice(n, 1, [&](std::int64_t begin, std::int64_t count) {
        Eigen::Map<const Array> in(x + begin, count);
        Eigen::Map<const Array> grad_out(dy + begin, count);
        Eigen::Map<Array> grad_in(dx + begin, count);
        // Relu::backward: dy where x > 0, 0 where x <= 0, and x itself (NaN) where it is neither.
        grad_in = (in > 0.0f).select(grad_out, (in <= 0.0f).select(0.0f, in));
    });
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("cpu_eigen_omp", ops::relu_forward,
                    {2, "simd_threads", "Eigen's SIMD select over one slice per OpenMP thread",
                     relu_forward}) &&
    register_kernel(
        "cpu_eigen_omp", ops::relu_backward,
        {2, "simd_threads", "Eigen's SIMD select over one slice per OpenMP thread", relu_backward});

}  // namespace triptych::cpu_eigen_omp
