// cpu_eigen_omp ReLU: Eigen arrays for the SIMD, OpenMP for the threads.
//
// ReLU does one comparison per 8 bytes moved, so it is bound by memory bandwidth, not arithmetic.
// Each OpenMP thread takes one contiguous slice, which Eigen vectorises. Below `parallel_threshold`
// elements the cost of waking the threads exceeds the work, so small tensors stay on one thread.
#include <omp.h>

// GCC 12 reports a false "may be used uninitialized" inside its own AVX-512 intrinsics when
// Eigen's array max is inlined; the warning is silenced for Eigen's code only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include "cpu/eigen_omp/ops.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

constexpr std::int64_t parallel_threshold = 1 << 16;

using Array = Eigen::Array<float, Eigen::Dynamic, 1>;

// Runs body(begin, count) over `n` elements split into one contiguous slice per OpenMP thread.
template <typename Body>
void for_each_slice(std::int64_t n, Body body) {
#pragma omp parallel if (n >= parallel_threshold)
    {
        const std::int64_t threads = omp_get_num_threads();
        const std::int64_t t = omp_get_thread_num();
        const std::int64_t begin = n * t / threads;
        const std::int64_t end = n * (t + 1) / threads;
        if (end > begin) body(begin, end - begin);
    }
}

}  // namespace

void relu_forward(std::int64_t n, const float* x, float* y) {
    for_each_slice(n, [&](std::int64_t begin, std::int64_t count) {
        Eigen::Map<const Array> in(x + begin, count);
        Eigen::Map<Array> out(y + begin, count);
        out = in.max(0.0f);
    });
}

void relu_backward(std::int64_t n, const float* x, const float* dy, float* dx) {
    for_each_slice(n, [&](std::int64_t begin, std::int64_t count) {
        Eigen::Map<const Array> in(x + begin, count);
        Eigen::Map<const Array> grad_out(dy + begin, count);
        Eigen::Map<Array> grad_in(dx + begin, count);
        grad_in = (in > 0.0f).select(grad_out, 0.0f);
    });
}

}  // namespace triptych::cpu_eigen_omp
