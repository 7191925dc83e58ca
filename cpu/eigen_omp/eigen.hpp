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

namespace triptych::cpu_eigen_omp {

// A run of floats: a whole tensor seen flat, one slice of it, or one row.
using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
// (rows, cols), row-major, as every tensor is stored.
using RowMajorArray = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace triptych::cpu_eigen_omp
