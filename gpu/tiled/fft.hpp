// gpu_tiled FFT (fft.cu): batched, in-place 2D discrete Fourier transforms of complex planes, for
// the FFT convolution (conv_fft.cu), plus the complex arithmetic its kernels share.
//
// A complex number is a float2: x is the real part, y the imaginary part. A plane is (rows, cols)
// complex values, row-major; `planes` planes lie one after another. rows and cols are powers of two
// up to fft_max_length (the shared-memory tile of fft.cu holds at least one whole line).
//   forward: X[u, v] = sum_{h, w} x[h, w] * e^(-2 pi i (u h / rows + v w / cols))
//   inverse: the same sum with e^(+2 pi i ...), not scaled: inverse(forward(x)) = rows * cols * x,
//            so the caller divides once, where it reads the result.
// For .cu files of gpu/tiled only: it holds device code.
#pragma once

#include "gpu/runtime/cuda.hpp"

#include <cstdint>

namespace triptych::gpu_tiled {

constexpr std::int64_t fft_max_length = 2048;

enum class FftDirection { forward, inverse };

// Transforms every plane of `data` (device memory) in place: rows, then columns.
void fft2d(std::int64_t planes, std::int64_t rows, std::int64_t cols, float2* data,
           FftDirection direction);

__device__ inline float2 complex_add(float2 a, float2 b) {
    return make_float2(a.x + b.x, a.y + b.y);
}
__device__ inline float2 complex_subtract(float2 a, float2 b) {
    return make_float2(a.x - b.x, a.y - b.y);
}
// (a.x + i a.y) (b.x + i b.y)
__device__ inline float2 complex_multiply(float2 a, float2 b) {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ inline float2 complex_conjugate(float2 a) { return make_float2(a.x, -a.y); }

}  // namespace triptych::gpu_tiled
