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

#include <cstdint>
#include <memory>

namespace triptych::cpu_eigen_omp {

// A run of floats: a whole tensor seen flat, one slice of it, or one row.
using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
// (rows, cols), row-major, as every tensor is stored.
using RowMajorArray = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// The same as a matrix, for products (GEMMs).
using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// `floats` floats of scratch, left uninitialised: the caller writes every one before reading it.
inline std::unique_ptr<float[]> scratch(std::int64_t floats) {
    return std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(floats));
}

}  // namespace triptych::cpu_eigen_omp
