// cpu_naive bias: a layer's bias added to every row of a batch, and its gradient.
//
//   bias_add:      y[i, j] = x[i, j] + bias[j]     x and y are (rows, cols), bias is (cols)
//   bias_backward: dbias[j] = sum_i dy[i, j]      dy is (rows, cols), dbias is (cols)
//
// The same bias[j] was added to every row, so its gradient collects every row's dy[i, j]: the
// column sums of dy, a reduction over the batch. Templates: float for the variant, double for the
// reference.
#pragma once

#include <cstdint>

#include "common/kernels.hpp"

namespace triptych::cpu_naive {

// y may be x (in place): each element is read before it is written.
template <typename T>
void bias_add(std::int64_t rows, std::int64_t cols, const T* x, const T* bias, T* y) {
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) y[i * cols + j] = x[i * cols + j] + bias[j];
}

// Row by row, so dy is read in memory order; each column is still summed in row order.
template <typename T>
void bias_backward(std::int64_t rows, std::int64_t cols, const T* dy, T* dbias) {
    for (std::int64_t j = 0; j < cols; ++j) dbias[j] = T(0);
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) dbias[j] += dy[i * cols + j];
}

[[maybe_unused]] inline const bool bias_registered =
    register_kernel("cpu_naive", ops::bias_add,
                    {1, "loops", "the definition, row after row", bias_add<float>}) &&
    register_kernel(
        "cpu_naive", ops::bias_backward,
        {1, "loops", "the definition: each column summed top to bottom", bias_backward<float>});

}  // namespace triptych::cpu_naive
