// cpu_eigen_omp bias: y = x + bias on every row, and dbias = the column sums of dy.
//
//   bias_add:      x and y (rows, cols) seen as one row-major Eigen array; `rowwise() +` broadcasts
//                  the bias to every row. Each thread takes a slice of rows.
//   bias_backward: the column sums, a reduction over the batch. Each thread owns a slice of
//                  columns and adds dy's rows into its slice of dbias one row after the other: the
//                  reads are contiguous, the accumulators stay in L1, and each column is summed in
//                  row order, so the result has the same bits on every run and for any thread
//                  count (the same order as cpu_naive). A matrix too narrow to split (one column)
//                  runs on one thread.
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {

void bias_add(std::int64_t rows, std::int64_t cols, const float* x, const float* bias, float* y) {
    Eigen::Map<const Array> b(bias, cols);
    for_each_slice(rows, cols, [&](std::int64_t begin, std::int64_t count) {
        Eigen::Map<const RowMajorArray> in(x + begin * cols, count, cols);
        Eigen::Map<RowMajorArray> out(y + begin * cols, count, cols);
        out = in.rowwise() + b.transpose();  // elementwise, so y may be x
    });
}

namespace {

void bias_backward(std::int64_t rows, std::int64_t cols, const float* dy, float* dbias) {
    for_each_slice(cols, rows, [&](std::int64_t begin, std::int64_t count) {
        Eigen::Map<Array> sums(dbias + begin, count);
        sums.setZero();
        for (std::int64_t i = 0; i < rows; ++i)
            sums += Eigen::Map<const Array>(dy + i * cols + begin, count);
    });
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel(
        "cpu_eigen_omp", ops::bias_add,
        {2, "simd_threads", "Eigen's rowwise() broadcast, a slice of rows per thread", bias_add}) &&
    register_kernel(
        "cpu_eigen_omp", ops::bias_backward,
        {2, "simd_threads", "each thread sums its slice of columns, row after row, in SIMD lanes",
         bias_backward});

}  // namespace triptych::cpu_eigen_omp
