// cpu_eigen_omp sum, in the two modes of Reduction. Both cut x into 4096-element chunks and let
// Eigen sum each chunk in float with 16-lane SIMD partial sums (each lane adds at most
// 4096 / 16 = 256 terms, then the lanes are added as a tree); they differ in how the chunk sums
// are combined.
//
//   deterministic: sum_in_fixed_chunks (parallel.hpp): each chunk sum lands in its own slot, the
//                  slots are added in chunk order, in double. The chunks depend only on n, so the
//                  bits are the same on every run and for any thread count. Error: at most about
//                  260 u sum|x| inside the chunks (u = 2^-24), next to nothing in the double
//                  additions, and u |sum| for the final rounding to float, whatever n is.
//                  cpu_naive's one accumulator allows (n - 1) u sum|x|.
//   fast:          OpenMP's reduction: each thread adds its chunks' sums in float, then the
//                  threads' totals are added in whatever order they finish, so the last bits may
//                  change from run to run and with the thread count. Error: at most about
//                  (260 + n / 4096) u sum|x|.
//
// Both read each element once and cost the same: a sum does one addition per 4 bytes read, so
// memory bandwidth bounds it, not the order of the additions. (An earlier version summed each
// chunk in double, `.cast<double>().sum()`: Eigen does not vectorise that widening, and the
// deterministic mode ran several times slower than the fast one.)
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

float sum_fast(std::int64_t n, const float* x) {
    const std::int64_t chunks = ceil_div(n, reduction_chunk);
    float total = 0.0f;
#pragma omp parallel for schedule(static) reduction(+ : total) if (worth_threads(n))
    for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t begin = c * reduction_chunk;
        total += Eigen::Map<const Array>(x + begin, std::min(reduction_chunk, n - begin)).sum();
    }
    return total;
}

}  // namespace

float sum(std::int64_t n, const float* x, Reduction mode) {
    if (mode == Reduction::fast) return sum_fast(n, x);
    return static_cast<float>(
        sum_in_fixed_chunks(n, 1, [&](std::int64_t begin, std::int64_t count) {
            return double(Eigen::Map<const Array>(x + begin, count).sum());
        }));
}

[[maybe_unused]] const bool registered = register_kernel(
    "cpu_eigen_omp", ops::sum,
    {2, "simd_chunks", "4096-element chunks summed in 16 SIMD lanes, the chunks over the threads",
     sum, AdditionOrder::arrival});  // in the fast mode: the threads' totals, as they finish

}  // namespace triptych::cpu_eigen_omp
