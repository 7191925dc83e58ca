// cpu_eigen_omp dense forward, fused: Y = act(X * W^T + b) (see DenseShape).
//
// The unfused path (Backend::dense_forward_unfused) runs three ops: the GEMM writes Y, bias_add
// reads and writes all of Y, the activation reads and writes all of Y again. Once Y is larger than
// the caches, each of those extra passes costs a full trip to memory. Here:
//
//   1. one GEMM, X * W^T, into Y, on every thread (Eigen, over OpenBLAS's sgemm: see gemm.cpp);
//   2. one OpenMP loop over slices of rows; each thread walks its slice in blocks of about 8 KB
//      (`block_floats`) and, on each block, adds the bias and applies the activation back to
//      back, so the second touch finds the block in L1: Y crosses the memory bus once after the
//      GEMM instead of twice.
//
// The GEMM's work dominates; fusion saves the two extra passes over Y, which pays where Y does not
// stay in cache between the steps and the GEMM is cheap next to Y (small `in`).
// lessons/07_kernel_fusion measures both rows, and where the fused one comes out slower.
//
// The GEMM already gives each thread a panel of Y's rows (gemm.cpp); the epilogue could run inside
// that panel, while the panel is still in cache, at the price of a GEMM of its own for this op.
// That is the next step of the fusion, left as an exercise (lessons/07_kernel_fusion). gpu_tiled
// fuses all the way: its GEMM's epilogue applies bias and activation to the registers before the
// one store.
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

// The floats of Y one epilogue block holds: a fraction of L1, so bias and activation meet it there.
constexpr std::int64_t block_floats = 2048;

// y = act(y + b) on `rows` rows of `cols`, in place; `activation` is this variant's own kernel of
// the layer's activation (null for none). bias_add and the activations, called here from inside a
// parallel region, run on the calling thread (parallel.hpp).
void bias_and_activation(kernels::Map* activation, std::int64_t rows, std::int64_t cols,
                         const float* b, float* y) {
    bias_add(rows, cols, y, b, y);
    if (activation != nullptr) activation(rows * cols, y, y);
}

void dense_forward(const DenseShape& s, const float* X, const float* W, const float* b, float* Y) {
    require_blas_sizes([&] { return "dense_forward " + s.str(); },
                       {{"batch", s.batch}, {"in", s.in}, {"out", s.out}});
    gemm(s.gemm(), X, W, Y);  // Y = X * W^T, (batch, out)
    kernels::Map* const activation =
        s.activation == Activation::none
            ? nullptr
            : default_kernel("cpu_eigen_omp", forward_op(s.activation));
    const std::int64_t rows_per_block = std::max<std::int64_t>(1, block_floats / s.out);
    for_each_slice(s.batch, s.out, [&](std::int64_t begin, std::int64_t count) {
        for (std::int64_t row = begin; row < begin + count; row += rows_per_block) {
            const std::int64_t rows = std::min(rows_per_block, begin + count - row);
            bias_and_activation(activation, rows, s.out, b, Y + row * s.out);
        }
    });
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernel(
    "cpu_eigen_omp", ops::dense_forward,
    {2, "fused", "one GEMM, then bias and activation together on each block while it is in L1",
     dense_forward});

}  // namespace triptych::cpu_eigen_omp
