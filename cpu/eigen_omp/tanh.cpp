// cpu_eigen_omp tanh: y = tanh(x) and dx = dy * (1 - y^2), with Eigen arrays for the SIMD and
// OpenMP for the threads (one slice per thread, for_each_slice in parallel.hpp).
//
// Eigen's float tanh is a vectorised rational approximation (clamped to +-1 beyond |x| ~ 8, where
// tanh rounds to 1 anyway); measured within 4.8 u of tanh over [-30, 30], inside the
// cross-check's 8 u.
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

void tanh_forward(std::int64_t n, const float* x, float* y) {
    for_each_slice(n, 1, [&](std::int64_t begin, std::int64_t count) {
        Eigen::Map<const Array> in(x + begin, count);
        Eigen::Map<Array> out(y + begin, count);
        out = in.tanh();
    });
}

void tanh_backward(std::int64_t n, const float* y, const float* dy, float* dx) {
    for_each_slice(n, 1, [&](std::int64_t begin, std::int64_t count) {
        Eigen::Map<const Array> out(y + begin, count);
        Eigen::Map<const Array> grad_out(dy + begin, count);
        Eigen::Map<Array> grad_in(dx + begin, count);
        grad_in = grad_out * (1.0f - out.square());
    });
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("cpu_eigen_omp", ops::tanh_forward,
                    {2, "simd_threads", "Eigen's vectorised tanh over one slice per OpenMP thread",
                     tanh_forward}) &&
    register_kernel(
        "cpu_eigen_omp", ops::tanh_backward,
        {2, "simd_threads", "Eigen arrays over one slice per OpenMP thread", tanh_backward});

}  // namespace triptych::cpu_eigen_omp
