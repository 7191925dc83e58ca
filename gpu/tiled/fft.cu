// gpu_tiled FFT: batched in-place 2D transforms of complex planes (shapes and conventions in
// fft.hpp), by the iterative radix-2 Cooley-Tukey algorithm in shared memory.
//
// A 2D transform is 1D transforms of every row, then of every column (the 2D sum separates).
// fft_lines_kernel does one such pass: each block copies a tile of fft_tile complex values (whole
// lines, fft_tile / length of them) from global into shared memory, in bit-reversed order within
// each line, then runs log2(length) stages of butterflies, separated by __syncthreads, and writes
// the lines back in natural order. Stage s combines pairs of transforms of length m = 2^s into
// transforms of length 2m:
//   a[i0], a[i1] = a[i0] + t a[i1], a[i0] - t a[i1],   i1 = i0 + m,   t = e^(sign 2 pi i j / 2m)
// with j the position of i0 in its group of 2m. Each thread takes butterflies threadIdx.x,
// threadIdx.x + blockDim.x, ... of all lines of the tile: a tile of 2048 values gives the 256
// threads 4 butterflies each per stage, whatever the line length, so short lines (a 16-point FFT
// of a LeNet plane) keep the block as busy as long ones.
// The twiddle factors e^(sign 2 pi i t / length), t < length / 2, are computed once per block
// into shared memory (one sincosf each) and read by every stage: stage m uses every
// (length / 2m)-th of them.
// Rows are contiguous; a column pass reads and writes with a stride of `cols` values, which a GPU
// serves with one transaction per value (a transpose between the passes would coalesce them;
// clarity was preferred). The simulator runs one fiber per thread, so blocks of 256 threads with
// few barriers per block (log2(length) + 1) keep it fast too.
#include "gpu/runtime/cuda.hpp"

#include <bit>

#include "common/errors.hpp"
#include "common/math.hpp"
#include "gpu/tiled/fft.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int fft_threads = 256;
// Complex values a block transforms at once: 16 KB of shared memory, 8 KB more for the twiddles.
constexpr int fft_tile = int(fft_max_length);
constexpr float two_pi = 6.28318530717958648f;

// The lines one pass transforms. Element e of line l is data[offset(l, e)]:
//   (l / per_plane) * plane_size + (l % per_plane) * line_step + e * element_step.
// Rows of a (rows, cols) plane: per_plane = rows, line_step = cols, element_step = 1.
// Columns:                      per_plane = cols, line_step = 1,    element_step = cols.
struct FftLines {
    std::int64_t count;  // lines in all planes
    std::int64_t per_plane;
    std::int64_t plane_size;
    std::int64_t line_step;
    std::int64_t element_step;
    int length;  // a power of two, 2 .. fft_tile
    int log2_length;

    __device__ std::int64_t offset(std::int64_t line, int element) const {
        return (line / per_plane) * plane_size + (line % per_plane) * line_step +
               element * element_step;
    }
};

// i with its lowest `bits` bits in reverse order (bit b moves to bit bits - 1 - b).
__device__ inline int reverse_bits(int i, int bits) {
    int reversed = 0;
    for (int b = 0; b < bits; ++b) {
        reversed = (reversed << 1) | (i & 1);
        i >>= 1;
    }
    return reversed;
}

// sign = -1 for the forward transform, +1 for the inverse.
__global__ void fft_lines_kernel(FftLines lines, float sign, float2* data) {
    __shared__ float2 tile[fft_tile];
    __shared__ float2 twiddles[fft_tile / 2];
    const int length = lines.length, half = length / 2;
    const int lines_per_block = fft_tile / length;
    const std::int64_t first_line = std::int64_t(blockIdx.x) * lines_per_block;
    const std::int64_t lines_left = lines.count - first_line;
    const int block_lines = lines_left < lines_per_block ? int(lines_left) : lines_per_block;
    const int block_values = block_lines * length;

    // twiddles[t] = e^(sign 2 pi i t / length) = (cos, sin) of sign * 2 pi t / length.
    for (int t = threadIdx.x; t < half; t += blockDim.x) {
        float sine, cosine;
        sincosf(sign * two_pi * (float(t) / float(length)), &sine, &cosine);
        twiddles[t] = make_float2(cosine, sine);
    }
    for (int i = threadIdx.x; i < block_values; i += blockDim.x) {
        const int line = i / length, element = i % length;
        tile[line * length + reverse_bits(element, lines.log2_length)] =
            data[lines.offset(first_line + line, element)];
    }
    __syncthreads();

    for (int m = 1; m < length; m *= 2) {
        for (int b = threadIdx.x; b < block_lines * half; b += blockDim.x) {
            const int line = b / half, butterfly = b % half;
            const int group = butterfly / m, j = butterfly % m;
            const int i0 = line * length + group * 2 * m + j, i1 = i0 + m;
            const float2 t = twiddles[j * (half / m)];  // e^(sign 2 pi i j / 2m)
            const float2 even = tile[i0], odd = complex_multiply(t, tile[i1]);
            tile[i0] = complex_add(even, odd);
            tile[i1] = complex_subtract(even, odd);
        }
        __syncthreads();
    }

    for (int i = threadIdx.x; i < block_values; i += blockDim.x) {
        data[lines.offset(first_line + i / length, i % length)] = tile[i];
    }
}

// One pass of 1D transforms over `lines` (lines.length >= 2).
void fft_lines(FftLines lines, FftDirection direction, float2* data) {
    const std::int64_t lines_per_block = fft_tile / lines.length;
    const float sign = direction == FftDirection::forward ? -1.0f : 1.0f;
    gpu::launch(fft_lines_kernel, dim3(unsigned(ceil_div(lines.count, lines_per_block))),
                dim3(fft_threads), 0, lines, sign, data);
}

}  // namespace

void fft2d(std::int64_t planes, std::int64_t rows, std::int64_t cols, float2* data,
           FftDirection direction) {
    for (const std::int64_t n : {rows, cols})
        if (n < 1 || n > fft_max_length || !std::has_single_bit(std::uint64_t(n)))
            throw InvalidArgument("fft2d: length " + std::to_string(n) +
                                  " is not a power of two from 1 to " +
                                  std::to_string(fft_max_length));
    const std::int64_t plane_size = rows * cols;
    // A length-1 transform is the identity: that pass is skipped.
    if (cols > 1)
        fft_lines({planes * rows, rows, plane_size, cols, 1, int(cols),
                   std::countr_zero(std::uint64_t(cols))},
                  direction, data);
    if (rows > 1)
        fft_lines({planes * cols, cols, plane_size, 1, cols, int(rows),
                   std::countr_zero(std::uint64_t(rows))},
                  direction, data);
}

}  // namespace triptych::gpu_tiled
