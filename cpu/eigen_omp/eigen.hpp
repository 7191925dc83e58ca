// Eigen as cpu_eigen_omp uses it: the one place the op files include it from, and the two array
// types they map raw tensor buffers onto (Eigen::Map: no copy).
#pragma once

// GCC 12 reports a false "may be used uninitialized" ("is used uninitialized" under the
// sanitizers) inside its own AVX-512 intrinsics when Eigen's vectorised max, min, exp or tanh are
// inlined; the warnings are silenced for those headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#if defined(EIGEN_USE_BLAS)
#include <cblas.h>
#endif

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "common/errors.hpp"

namespace triptych::cpu_eigen_omp {

// A run of floats: a whole tensor seen flat, one slice of it, or one row.
using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
// (rows, cols), row-major, as every tensor is stored.
using RowMajorArray = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// The same as a matrix, for products (GEMMs).
using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Where scratch memory starts: on a cache line (64 bytes), so that a kernel's aligned Vecs each
// lie in one line. malloc promises 16 bytes, and glibc serves large blocks from mmap at 16 past a
// page: every 64-byte Vec of ResNet 3x3's re-laid-out filters (144 KiB) then straddled two lines.
// Aligned, on a Zen 5 (3 alternating runs of 3 interleaved repetitions), ResNet 3x3's direct
// forward and forward+backward ran measurably faster, LeNet conv1's forward+backward more so
// (the conv2d_forward(_backward)_direct/cpu_eigen_omp rows of lesson 08's table).
constexpr std::size_t scratch_alignment = 64;

struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{scratch_alignment}); }
};
using Scratch = std::unique_ptr<float[], AlignedDelete>;

// `floats` floats of scratch, cache-line aligned, left uninitialised: the caller writes every one
// before reading it.
inline Scratch scratch(std::int64_t floats) {
    return Scratch(
        new (std::align_val_t{scratch_alignment}) float[static_cast<std::size_t>(floats)]);
}

// c = alpha * a * b, never reading c's old values. Eigen's `c.noalias() = alpha * a * b` first
// sets c to zero and then adds the product into it: with EIGEN_USE_BLAS, a memset of c and an
// sgemm with beta = 1, which reads c back as it adds. A deep product (a long sum behind each
// float of c) does not notice those two extra passes over c; a shallow one does, such as
// Winograd's 16 products of depth 64 per block of ResNet's 3x3 layer (conv_winograd.cpp), whose
// forward pass ran measurably faster on an Intel Xeon through this (lesson 02, "What `=`
// costs"). Over OpenBLAS it is one sgemm with beta = 0, which never reads c's old values (they
// may be NaN); without EIGEN_USE_BLAS, Eigen's own product as above. c is a row-major matrix (a
// Map, or a block of one); a and b are row-major matrices or transposes of them; all have unit
// inner stride, and none is empty (sgemm refuses an empty matrix's strides).
template <typename C, typename A, typename B>
void set_product(C&& c, const A& a, const B& b, float alpha = 1.0f) {
#if defined(EIGEN_USE_BLAS)
    static_assert(std::decay_t<C>::IsRowMajor, "set_product writes row-major matrices");
    const auto op = [](const auto& m) {
        return std::decay_t<decltype(m)>::IsRowMajor ? CblasNoTrans : CblasTrans;
    };
    cblas_sgemm(CblasRowMajor, op(a), op(b), int(c.rows()), int(c.cols()), int(a.cols()), alpha,
                a.data(), int(a.outerStride()), b.data(), int(b.outerStride()), 0.0f, c.data(),
                int(c.outerStride()));
#else
    c.noalias() = alpha * a * b;
#endif
}

// A size or a stride, by the name a message gives it.
struct NamedSize {
    const char* name;
    std::int64_t value;
};

// Unsupported unless every one of `sizes` fits in an int, the type in which `library` takes its
// sizes and strides (at most 2^31 - 1). Checked before the op starts, because a larger value
// would be cut to its low 32 bits without a word: OpenBLAS's products and FFTW's plans take int,
// and Eigen's calls into OpenBLAS check that a size fits only when Eigen is built to debug itself
// (eigen_internal_assert). `op` is called for the message's start ("gemm 1x1x3000000000 NN")
// only when a size does not fit.
template <typename OpName>
void require_int_sizes(const OpName& op, const char* library,
                       std::initializer_list<NamedSize> sizes) {
    for (const NamedSize& size : sizes)
        if (size.value > std::numeric_limits<int>::max())
            throw Unsupported(op() + ": " + size.name + " is " + std::to_string(size.value) +
                              ", but cpu_eigen_omp runs this on " + library +
                              ", which takes sizes and strides as int (at most 2^31 - 1)");
}

// require_int_sizes for the sizes and strides of products that reach OpenBLAS (set_product, and
// Eigen's products under EIGEN_USE_BLAS: sgemm, cgemm); nothing to check without EIGEN_USE_BLAS,
// where Eigen's own product counts in 64 bits.
template <typename OpName>
void require_blas_sizes([[maybe_unused]] const OpName& op,
                        [[maybe_unused]] std::initializer_list<NamedSize> sizes) {
#if defined(EIGEN_USE_BLAS)
    require_int_sizes(op, "OpenBLAS", sizes);
#endif
}

}  // namespace triptych::cpu_eigen_omp
