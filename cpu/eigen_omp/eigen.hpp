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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

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

}  // namespace triptych::cpu_eigen_omp
