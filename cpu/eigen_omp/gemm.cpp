// cpu_eigen_omp gemm: C = alpha * op(A) * op(B) + beta * C with Eigen.
//
// The raw row-major buffers are wrapped in Eigen::Map (no copy); `.transpose()` is free, it only
// swaps strides. Eigen turns `c.noalias() += alpha * a * b` into one blocked, vectorised GEMM; with
// EIGEN_USE_BLAS (CMake option TRIPTYCH_EIGEN_BLAS, on by default) that GEMM is OpenBLAS's sgemm.
// With beta = 0 it is set_product (eigen.hpp): one sgemm at beta = 0, without Eigen's zeroing of C.
// Eigen over BLAS runs at the openblas row's speed, pure Eigen slower, and much slower while other
// work holds a core: hence BLAS by default. lessons/02_matmul_naive measures both builds.
//
// One pool of threads, not two. Debian's default OpenBLAS runs every sgemm on a thread pool of
// its own (pthreads), whose workers keep spinning for a while after each call, waiting for the
// next. The ops around a GEMM in a network (bias, ReLU, pooling, the direct convolution) run on
// OpenMP's team, so after every GEMM the two pools fought over the cores: LeNet's training step
// ran several times slower than with OpenBLAS on one thread, and far slower still on a 16-core
// machine (lessons/02_matmul_naive, "cpu_eigen_omp — a library", tells the story). So the
// backend keeps OpenBLAS on one thread (use_one_thread_pool, called when it is made) and gemm
// splits C among the OpenMP threads instead: each thread computes its panel of C's rows (or of
// its columns, when C is wider than tall and not a weight gradient) with one single-threaded
// sgemm. One thread is not yet no pool: OpenBLAS starts its pool as it loads, and the pool's
// threads spin for their first 2^28 cycles (OpenBLAS's default wait before a thread sleeps),
// taking a core from OpenMP's team at the start of every program. use_one_thread_pool stops them
// as well.
#include <cblas.h>

#include <algorithm>

#include "common/math.hpp"
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

// c = alpha * opA * opB + beta * c, never reading c when beta == 0 (it may hold NaN).
template <typename OpA, typename OpB, typename OpC>
void multiply(const OpA& opA, const OpB& opB, OpC c, float alpha, float beta) {
    if (beta == 0.0f) {
        set_product(c, opA, opB, alpha);
        return;
    }
    if (beta != 1.0f) c *= beta;
    c.noalias() += alpha * opA * opB;
}

// Panels narrower than this many columns (or rows) would leave sgemm's vector kernels half idle.
constexpr std::int64_t panel_multiple = 16;

// A product is split among the threads from this many multiply-adds on: a few microseconds of
// work, against the microsecond or two that waking the team costs. The elementwise ops' measure,
// floats touched (worth_threads), undercounts a product, whose work grows as M * N * K: at 128^3
// it kept on one thread a product that ran nearly twice as fast on two (Zen 5, 2 cores;
// triptych_bench --benchmark_filter='gemm/cpu_eigen_omp/128x' times it), and the MLP's 256 -> 128
// layer too.
constexpr double parallel_multiply_adds = 5e5;

// How a product's C is cut among the threads: into panels of rows, or of columns.
//   longer_side  rows when C is taller than wide, else columns: each thread reads the part of opA
//                (or of opB) its panel needs, and the smaller of the two whole.
//   rows         rows wherever there are two panels of them: for C = A^T * B, a weight gradient
//                (dW = dY^T * X, a sum over the batch), which the optimizer's update reads next,
//                slice by slice (for_each_slice over W's rows). Cut into columns, each thread's
//                slice of dW would be half written by the other thread, read from its cache
//                (parallel.hpp); with MLP's 256 x 784 dW that cost more than reading X whole twice.
enum class Panels { longer_side, rows };

// c = alpha * opA * opB + beta * c on every OpenMP thread, thread t taking the t-th panel of C's
// rows or columns (see Panels), a multiple of panel_multiple wide. Each panel is an independent
// product: the rows of opA (or the columns of opB) it needs, times the other whole.
template <typename OpA, typename OpB>
void multiply_in_panels(const OpA& opA, const OpB& opB, Eigen::Map<RowMajorMatrix>& c, float alpha,
                        float beta, Panels panels = Panels::longer_side) {
    const std::int64_t M = c.rows(), N = c.cols(), K = opA.cols();
    const bool by_rows = M >= N || (panels == Panels::rows && M >= 2 * panel_multiple);
    const std::int64_t length = by_rows ? M : N;
#pragma omp parallel if (double(M) * N * K >= parallel_multiply_adds && \
                         length >= 2 * panel_multiple && !omp_in_parallel())
    {
        const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
        const auto edge = [&](std::int64_t i) {
            return std::min(length,
                            ceil_div(length * i / threads, panel_multiple) * panel_multiple);
        };
        const std::int64_t begin = edge(t), count = edge(t + 1) - begin;
        if (count > 0 && by_rows)
            multiply(opA.middleRows(begin, count), opB, c.middleRows(begin, count), alpha, beta);
        if (count > 0 && !by_rows)
            multiply(opA, opB.middleCols(begin, count), c.middleCols(begin, count), alpha, beta);
    }
}

}  // namespace

// blas_thread_shutdown_ is OpenBLAS's own (exported, and what it runs before a fork): it stops
// the pool's threads. OpenBLAS starts them again by itself if it is later given more than one
// thread (the openblas benchmark row does so, and calls this again when it is done). Weak: a
// build of OpenBLAS without threads has no such function, and no pool to stop.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

void use_one_thread_pool() {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
}

void gemm(const GemmShape& s, const float* A, const float* B, float* C) {
    // M, N and K are also the matrices' strides, whichever of them is transposed.
    require_blas_sizes([&] { return "gemm " + s.str(); }, {{"M", s.M}, {"N", s.N}, {"K", s.K}});
    // A is stored (M, K) or (K, M); B is stored (K, N) or (N, K); C is (M, N).
    Eigen::Map<const RowMajorMatrix> a(A, s.trans_a ? s.K : s.M, s.trans_a ? s.M : s.K);
    Eigen::Map<const RowMajorMatrix> b(B, s.trans_b ? s.N : s.K, s.trans_b ? s.K : s.N);
    Eigen::Map<RowMajorMatrix> c(C, s.M, s.N);
    if (!s.trans_a && !s.trans_b) multiply_in_panels(a, b, c, s.alpha, s.beta);
    if (!s.trans_a && s.trans_b) multiply_in_panels(a, b.transpose(), c, s.alpha, s.beta);
    if (s.trans_a && !s.trans_b)  // a weight gradient's dY^T * X
        multiply_in_panels(a.transpose(), b, c, s.alpha, s.beta, Panels::rows);
    if (s.trans_a && s.trans_b)
        multiply_in_panels(a.transpose(), b.transpose(), c, s.alpha, s.beta);
}

[[maybe_unused]] const bool registered = register_kernel(
    "cpu_eigen_omp", ops::gemm,
    {2, "blas_panels", "Eigen over OpenBLAS's sgemm, one panel of C per OpenMP thread", gemm});

}  // namespace triptych::cpu_eigen_omp
