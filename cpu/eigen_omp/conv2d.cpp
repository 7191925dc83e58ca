// cpu_eigen_omp conv2d: the three passes by the im2col algorithm, and the dispatch to
// conv_direct.cpp and conv_fft.cpp for the other two. Shapes and math as in cpu/naive/conv2d.hpp:
//   x (N, C, H, W), w (K, C, R, S), b (K), y and dy (N, K, P, Q).
//
// im2col's loops are built on one helper, for_each_tap_row: for a filter tap (r, t) and an output
// row p, the outputs q whose input x[h, w] lies inside the image form one run, and the matching
// inputs are evenly spaced (stride_w apart). Padding is never read: the run simply starts and
// ends where the image does.
//
//   direct   conv_direct.cpp.
//   im2col   the input unrolled into a matrix of patches, col (C*R*S, images*P*Q): row
//            (c, r, t) holds, for every output, the input that tap multiplies (0 in the padding).
//            Then one GEMM (OpenBLAS's sgemm through Eigen, gemm.cpp, one panel per OpenMP thread)
//            does the multiply-adds; im2col, col2im and the reorders run on the calling thread:
//            forward          Y (K, images*P*Q)  = W (K, C*R*S) * col
//            backward_data    dcol (C*R*S, ...)  = W^T * dY, then col2im adds each entry of dcol
//                             back onto the input it came from;
//            backward_weights dW (K, C*R*S)     += dY * col^T, summed over the chunks of images.
//            The GEMM sees several images at once: LeNet's conv1 (C=1, K=6, 5x5 on 28x28) is a
//            6 x 25 x 784 GEMM per image, far too small for sgemm to run well; several images
//            make one 6 x 25 x (images*784) GEMM. Images are taken `col_budget` floats of col at
//            a time, col staying in L2 from im2col to GEMM (a ResNet 3x3 layer on 56x56, 7 MB of
//            col per image, goes one image per GEMM). Chunks that stay in L2 ran LeNet's layers
//            faster than larger chunks or the whole batch at once.
//            The GEMM's layout (K, images*P*Q) differs from y's (images, K, P*Q), so y and dy
//            are reordered on the way in and out (a pass over y, small next to the GEMM).
//            With stride 1 and 16 channels or more in and out, col is not built at all:
//            conv_shifted.cpp reads each tap's rows of col straight out of the padded image.
//   fft      conv_fft.cpp.
//   winograd conv_winograd.cpp (3x3 and 5x5 filters at stride 1).
// db, the same for every algorithm, is the sum of each dy[:, k] plane.
#include <algorithm>
#include <memory>
#include <type_traits>

#include "common/math.hpp"
#include "cpu/eigen_omp/conv_direct.hpp"
#include "cpu/eigen_omp/conv_fft.hpp"
#include "cpu/eigen_omp/conv_shifted.hpp"
#include "cpu/eigen_omp/conv_winograd.hpp"
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

// The most floats of col one im2col GEMM uses: 1 MiB, about one core's L2 (1 MiB on AMD's Zen 3
// to Zen 5, 1.25 to 2 MiB on recent Intel server cores).
constexpr std::int64_t col_budget = 1 << 18;

// The outputs o in [begin, end) of one dimension whose input o*stride + tap - pad lies in
// [0, in_size): o >= (pad - tap) / stride rounded up, and o*stride <= in_size - 1 + pad - tap.
struct Run {
    std::int64_t begin, end;
};

Run inside_image(std::int64_t tap, std::int64_t stride, std::int64_t pad, std::int64_t in_size,
                 std::int64_t out_size) {
    const std::int64_t highest = in_size - 1 + pad - tap;  // the largest o*stride allowed
    if (highest < 0) return {0, 0};                        // the tap reads only bottom padding
    const std::int64_t begin = std::max<std::int64_t>(0, ceil_div(pad - tap, stride));
    const std::int64_t end = std::min(out_size, highest / stride + 1);
    return {begin, std::max(begin, end)};
}

// Calls run(tap, out_index, in_index, count, stride) for every filter tap (r, t), tap = r*S + t,
// and every output row p: the outputs out_index .. out_index + count - 1 of a (P, Q) plane read
// the inputs in_index, in_index + stride, ... of an (H, W) plane (stride = stride_w). A stride of
// 1 is passed as a compile-time constant: the compiler then vectorises the runs with plain
// loads and stores (a run-time stride compiles to one scalar load per element, several times
// slower).
template <typename RunBody>
void for_each_tap_row(const Conv2dShape& s, RunBody run) {
    const std::int64_t P = s.P(), Q = s.Q();
    auto walk = [&](auto stride) {
        for (std::int64_t r = 0; r < s.R; ++r) {
            const Run rows = inside_image(r, s.stride_h, s.pad_h, s.H, P);
            for (std::int64_t t = 0; t < s.S; ++t) {
                const Run cols = inside_image(t, s.stride_w, s.pad_w, s.W, Q);
                if (cols.end == cols.begin) continue;
                for (std::int64_t p = rows.begin; p < rows.end; ++p) {
                    const std::int64_t h = p * s.stride_h + r - s.pad_h;
                    const std::int64_t w = cols.begin * s.stride_w + t - s.pad_w;
                    run(r * s.S + t, p * Q + cols.begin, h * s.W + w, cols.end - cols.begin,
                        stride);
                }
            }
        }
    };
    if (s.stride_w == 1)
        walk(std::integral_constant<std::int64_t, 1>{});
    else
        walk(s.stride_w);
}

// --- im2col ----------------------------------------------------------------------------------

// The images of x (or dx) and y (or dy) that one GEMM handles: [first, first + count).
struct ImageChunk {
    std::int64_t first, count;
};

// How many images one GEMM takes: as many as fit in col_budget, at least one.
std::int64_t images_per_gemm(const Conv2dShape& s) {
    const std::int64_t col_per_image = s.C * s.R * s.S * s.P() * s.Q();
    return std::clamp<std::int64_t>(col_budget / col_per_image, 1, s.N);
}

template <typename ChunkBody>
void for_each_chunk(const Conv2dShape& s, ChunkBody body) {
    const std::int64_t per_gemm = images_per_gemm(s);
    for (std::int64_t first = 0; first < s.N; first += per_gemm)
        body(ImageChunk{first, std::min(per_gemm, s.N - first)});
}

// Whether some output of tap (r, t) reads padding: then its row of col is not all written by
// the runs, and is zeroed first.
bool reads_padding(const Conv2dShape& s, std::int64_t r, std::int64_t t) {
    const Run rows = inside_image(r, s.stride_h, s.pad_h, s.H, s.P());
    const Run cols = inside_image(t, s.stride_w, s.pad_w, s.W, s.Q());
    return rows.begin > 0 || rows.end < s.P() || cols.begin > 0 || cols.end < s.Q();
}

// These four run on the calling thread. They were written when the GEMM between them ran on
// OpenBLAS's own pool of threads, beside which an OpenMP team working (or spinning) put three
// busy threads on two cores and ran the layers several times slower. The GEMM now splits over
// the OpenMP team itself (gemm.cpp: one pool), so an OpenMP loop here would no longer fight it;
// that has not been tried.

// col (C*R*S, chunk.count*P*Q): row c*R*S + tap, column i*P*Q + p*Q + q holds the input that tap
// multiplies for output (p, q) of image first + i, or 0 in the padding.
void im2col(const Conv2dShape& s, ImageChunk chunk, const float* x, float* col) {
    const std::int64_t PQ = s.P() * s.Q(), HW = s.H * s.W, RS = s.R * s.S;
    const std::int64_t columns = chunk.count * PQ;
    for (std::int64_t i = 0; i < chunk.count; ++i)
        for (std::int64_t c = 0; c < s.C; ++c) {
            const float* in = x + ((chunk.first + i) * s.C + c) * HW;
            float* patches = col + c * RS * columns + i * PQ;  // row c*R*S, this image's columns
            for (std::int64_t tap = 0; tap < RS; ++tap)
                if (reads_padding(s, tap / s.S, tap % s.S))
                    Eigen::Map<Array>(patches + tap * columns, PQ).setZero();
            for_each_tap_row(s,
                             [&](auto tap, auto out_index, auto in_index, auto count, auto stride) {
                                 float* row = patches + tap * columns + out_index;
                                 for (std::int64_t j = 0; j < count; ++j)
                                     row[j] = in[in_index + j * stride];
                             });
        }
}

// The inverse scatter: dx[first + i, c] = the sum of every dcol entry that im2col would have
// filled from it.
void col2im(const Conv2dShape& s, ImageChunk chunk, const float* col, float* dx) {
    const std::int64_t PQ = s.P() * s.Q(), HW = s.H * s.W, RS = s.R * s.S;
    const std::int64_t columns = chunk.count * PQ;
    for (std::int64_t i = 0; i < chunk.count; ++i)
        for (std::int64_t c = 0; c < s.C; ++c) {
            float* grad_in = dx + ((chunk.first + i) * s.C + c) * HW;
            const float* patches = col + c * RS * columns + i * PQ;
            Eigen::Map<Array>(grad_in, HW).setZero();
            for_each_tap_row(s,
                             [&](auto tap, auto out_index, auto in_index, auto count, auto stride) {
                                 const float* row = patches + tap * columns + out_index;
                                 for (std::int64_t j = 0; j < count; ++j)
                                     grad_in[in_index + j * stride] += row[j];
                             });
        }
}

// y[first + i, k] = Y[k, i*P*Q ...] + b[k]: from the GEMM's (K, count*P*Q) to y's layout.
void store_with_bias(const Conv2dShape& s, ImageChunk chunk, const float* Y, const float* b,
                     float* y) {
    const std::int64_t PQ = s.P() * s.Q();
    for (std::int64_t i = 0; i < chunk.count; ++i)
        for (std::int64_t k = 0; k < s.K; ++k)
            Eigen::Map<Array>(y + ((chunk.first + i) * s.K + k) * PQ, PQ) =
                Eigen::Map<const Array>(Y + k * chunk.count * PQ + i * PQ, PQ) + b[k];
}

// dY (K, count*P*Q) = dy[first .. first + count) reordered into the GEMM's layout.
void load_gradient(const Conv2dShape& s, ImageChunk chunk, const float* dy, float* dY) {
    const std::int64_t PQ = s.P() * s.Q();
    for (std::int64_t i = 0; i < chunk.count; ++i)
        for (std::int64_t k = 0; k < s.K; ++k)
            Eigen::Map<Array>(dY + k * chunk.count * PQ + i * PQ, PQ) =
                Eigen::Map<const Array>(dy + ((chunk.first + i) * s.K + k) * PQ, PQ);
}

// Unsupported unless OpenBLAS takes the sizes of an im2col pass's GEMMs (eigen.hpp): K, C*R*S,
// and the P*Q outputs of an image (a chunk of several images keeps col within col_budget).
void require_im2col_sizes(const char* pass, const Conv2dShape& s) {
    require_blas_sizes([&] { return std::string(pass) + " " + s.str() + " im2col"; },
                       {{"K", s.K}, {"C*R*S", s.C * s.R * s.S}, {"P*Q", s.P() * s.Q()}});
}

// Scratch for the largest chunk: col, and the GEMM-layout copy of y or dy. Left uninitialised
// (every entry is written before it is read): zeroing megabytes would cost as much as im2col.
struct Im2colBuffers {
    Scratch col, gemm_layout;
    explicit Im2colBuffers(const Conv2dShape& s)
        : col(scratch(s.C * s.R * s.S * images_per_gemm(s) * s.P() * s.Q())),
          gemm_layout(scratch(s.K * images_per_gemm(s) * s.P() * s.Q())) {}
};

void forward_im2col(const Conv2dShape& s, const float* x, const float* w, const float* b,
                    float* y) {
    require_im2col_sizes("conv2d_forward", s);
    Im2colBuffers buffers(s);
    const std::int64_t CRS = s.C * s.R * s.S;
    for_each_chunk(s, [&](ImageChunk chunk) {
        im2col(s, chunk, x, buffers.col.get());
        const GemmShape product{.M = s.K, .N = chunk.count * s.P() * s.Q(), .K = CRS};
        gemm(product, w, buffers.col.get(), buffers.gemm_layout.get());  // W * col
        store_with_bias(s, chunk, buffers.gemm_layout.get(), b, y);
    });
}

void backward_data_im2col(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
    require_im2col_sizes("conv2d_backward_data", s);
    Im2colBuffers buffers(s);
    const std::int64_t CRS = s.C * s.R * s.S;
    for_each_chunk(s, [&](ImageChunk chunk) {
        load_gradient(s, chunk, dy, buffers.gemm_layout.get());
        const GemmShape product{
            .M = CRS, .N = chunk.count * s.P() * s.Q(), .K = s.K, .trans_a = true};
        gemm(product, w, buffers.gemm_layout.get(), buffers.col.get());  // W^T * dY
        col2im(s, chunk, buffers.col.get(), dx);
    });
}

void backward_weights_im2col(const Conv2dShape& s, const float* x, const float* dy, float* dw) {
    require_im2col_sizes("conv2d_backward_weights", s);
    Im2colBuffers buffers(s);
    const std::int64_t CRS = s.C * s.R * s.S;
    for_each_chunk(s, [&](ImageChunk chunk) {
        im2col(s, chunk, x, buffers.col.get());
        load_gradient(s, chunk, dy, buffers.gemm_layout.get());
        const GemmShape product{.M = s.K,
                                .N = CRS,
                                .K = chunk.count * s.P() * s.Q(),
                                .trans_b = true,
                                .beta = chunk.first == 0 ? 0.0f : 1.0f};  // sum over chunks
        gemm(product, buffers.gemm_layout.get(), buffers.col.get(), dw);  // dY * col^T
    });
}

// db[k] = the sum of dy[n, k, p, q] over n, p, q: each chunk of bias_chunk_images images summed
// into partial sums of its own (image by image, each plane's sum added in image order), then the
// partials added in chunk order. The chunks are fixed by the shape, so the bits are the same for
// any number of threads, and each thread sums the images it computed in every other layer
// (parallel.hpp): summed channel by channel instead, each thread read every image, half of them
// from the other core's cache.
constexpr std::int64_t bias_chunk_images = 8;

void bias_gradient(const Conv2dShape& s, const float* dy, float* db) {
    const std::int64_t PQ = s.P() * s.Q();
    const std::int64_t chunks = ceil_div(s.N, bias_chunk_images);
    const auto partials = scratch(chunks * s.K);
    for_each_batch(
        chunks, bias_chunk_images * s.K * PQ, [&](std::int64_t begin, std::int64_t count) {
            for (std::int64_t chunk = begin; chunk < begin + count; ++chunk) {
                float* partial = partials.get() + chunk * s.K;
                std::fill(partial, partial + s.K, 0.0f);
                const std::int64_t first = chunk * bias_chunk_images;
                const std::int64_t last = std::min(s.N, first + bias_chunk_images);
                for (std::int64_t n = first; n < last; ++n)
                    for (std::int64_t k = 0; k < s.K; ++k)
                        partial[k] += Eigen::Map<const Array>(dy + (n * s.K + k) * PQ, PQ).sum();
            }
        });
    add_in_chunk_order(partials.get(), chunks, s.K, db);
}

void conv2d_forward(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x, const float* w,
                    const float* b, float* y) {
    switch (algorithm) {
        case ConvAlgorithm::direct:
            return conv2d_forward_direct(s, x, w, b, y);
        case ConvAlgorithm::im2col:
            return shifted_gemm_fits(s) ? conv2d_forward_shifted(s, x, w, b, y)
                                        : forward_im2col(s, x, w, b, y);
        case ConvAlgorithm::fft:
            return conv2d_forward_fft(s, x, w, b, y);
        case ConvAlgorithm::winograd:
            return conv2d_forward_winograd(s, x, w, b, y);
        case ConvAlgorithm::implicit_gemm:  // a GPU algorithm: not in conv2d_algorithms()
            break;
    }
}

void conv2d_backward_data(const Conv2dShape& s, ConvAlgorithm algorithm, const float* dy,
                          const float* w, float* dx) {
    switch (algorithm) {
        case ConvAlgorithm::direct:
            return conv2d_backward_data_direct(s, dy, w, dx);
        case ConvAlgorithm::im2col:
            return shifted_gemm_fits(s) ? conv2d_backward_data_shifted(s, dy, w, dx)
                                        : backward_data_im2col(s, dy, w, dx);
        case ConvAlgorithm::fft:
            return conv2d_backward_data_fft(s, dy, w, dx);
        case ConvAlgorithm::winograd:
            return conv2d_backward_data_winograd(s, dy, w, dx);
        case ConvAlgorithm::implicit_gemm:  // a GPU algorithm: not in conv2d_algorithms()
            break;
    }
}

void conv2d_backward_weights(const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                             const float* dy, float* dw, float* db) {
    switch (algorithm) {
        case ConvAlgorithm::direct:
            conv2d_backward_weights_direct(s, x, dy, dw);
            break;
        case ConvAlgorithm::im2col:
            if (shifted_gemm_fits(s))
                conv2d_backward_weights_shifted(s, x, dy, dw);
            else
                backward_weights_im2col(s, x, dy, dw);
            break;
        case ConvAlgorithm::fft:
            conv2d_backward_weights_fft(s, x, dy, dw);
            break;
        case ConvAlgorithm::winograd:  // may refuse the shape: before db is written
            conv2d_backward_weights_winograd(s, x, dy, dw);
            break;
        case ConvAlgorithm::implicit_gemm:  // a GPU algorithm: not in conv2d_algorithms()
            break;
    }
    bias_gradient(s, dy, db);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel(
        "cpu_eigen_omp", ops::conv2d_forward,
        {2, "blocked", "register-blocked direct kernels, im2col or shifted GEMMs, FFT, Winograd",
         conv2d_forward}) &&
    register_kernel("cpu_eigen_omp", ops::conv2d_backward_data,
                    {2, "blocked", "the same algorithms on the transposed convolution",
                     conv2d_backward_data}) &&
    register_kernel(
        "cpu_eigen_omp", ops::conv2d_backward_weights,
        {2, "blocked", "per-chunk partial sums added in chunk order", conv2d_backward_weights});

}  // namespace triptych::cpu_eigen_omp
