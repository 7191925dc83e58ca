// cpu_eigen_omp conv2d by im2col + GEMM with col never built: the stride-1 form of the im2col
// passes (conv2d.cpp), also known as kn2row. Shapes as in cpu/naive/conv2d.hpp.
//
// The idea. Pad the input image once, to a plane of `cols` = W + 2 pad_w columns, and look at each
// channel's plane as one flat run of floats. Output (p, q) of tap (r, t) reads padded input
// (p + r, q + t), which in the flat plane is element i + r*cols + t, where i = p*cols + q. So the
// row of col that im2col would write for channel c and tap (r, t), taken over the flat outputs i,
// is the padded plane itself, shifted by r*cols + t: already in memory, no copy needed. The one
// GEMM over col's C*R*S rows, W (K, C*R*S) * col, splits into R*S GEMMs, one per tap, each
// summing over the C channels:
//   out (K, P*cols) = sum over taps (r, t) of W_rt (K, C) * plane[:, r*cols + t ...]
// where W_rt[k, c] = w[k, c, r, t] and the right operand is a (C, P*cols) view of the padded image
// whose rows are a plane apart (Eigen::OuterStride). The outputs at q >= Q (the last S-1 of every
// row of `cols`) read across a row's end; they are computed and dropped: S-1 columns of waste,
// 2 of 58 on ResNet's 3x3 layer.
//
//   forward          the sum above, plus the bias.
//   backward_data    the same with dy padded by (R-1-pad_h, S-1-pad_w) and the filters flipped
//                    and transposed, W_rt[c, k] = w[k, c, R-1-r, S-1-t]: dx is dy correlated
//                    with them (the derivation is in conv_direct.cpp's header).
//   backward_weights dW_rt (K, C) = the sum over images of dY (K, P*cols) * plane[:, r*cols + t
//                    ...]^T, with dy laid out on the same `cols`-wide rows and zeros in the S-1
//                    dropped columns, so that the pixels past a row's end add nothing (a non-finite
//                    input there still would: 0 * inf is NaN, as in the FFT passes).
//
// Against explicit im2col: no col at all (7 MB per image on ResNet's 3x3 layer, which explicit
// im2col writes and the GEMM reads back), R*S GEMMs instead of one, each summing over C instead of
// C*R*S. Here each image is one OpenMP task, and each of its GEMMs one single-threaded sgemm, so
// the layer runs at about sgemm's own speed. lessons/09_conv_im2col measures it against the
// direct kernel, explicit im2col and PyTorch (tables recorded in lessons/08_conv_direct/conv.json).
#include <algorithm>
#include <memory>

#include "common/math.hpp"
#include "cpu/eigen_omp/conv_direct.hpp"
#include "cpu/eigen_omp/conv_shifted.hpp"
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

// The (channels, run) view of a padded image from some offset: row c starts a plane after row
// c-1.
using ShiftedView = Eigen::Map<const RowMajorMatrix, 0, Eigen::OuterStride<>>;

// A padded image as the taps' GEMMs read it: `channels` planes of (rows, cols), and the flat run
// of out_rows*cols outputs each GEMM computes. rows has one row to spare: the last tap's run
// starts (R-1)*cols + S-1 into the plane and would otherwise end S-1 floats past it.
struct PaddedImage {
    std::int64_t channels, rows, cols, out_rows;
    std::int64_t plane() const { return rows * cols; }
    std::int64_t run() const { return out_rows * cols; }
    std::int64_t floats() const { return channels * plane(); }
    ShiftedView shifted(const float* image, std::int64_t r, std::int64_t t) const {
        return ShiftedView(image + r * cols + t, channels, run(), Eigen::OuterStride<>(plane()));
    }
};

// The forward pass's and backward_weights' padded x: Q + S - 1 = W + 2 pad_w columns.
PaddedImage padded_input(const Conv2dShape& s) {
    return PaddedImage{
        .channels = s.C, .rows = s.P() + s.R, .cols = s.Q() + s.S - 1, .out_rows = s.P()};
}

// Unsupported unless OpenBLAS takes the sizes of a pass's GEMMs (eigen.hpp): C, K and g's run of
// outputs, with a padded plane (longer than the run) as the stride between channels.
void require_sizes(const char* pass, const Conv2dShape& s, const PaddedImage& g) {
    require_blas_sizes([&] { return std::string(pass) + " " + s.str() + " im2col"; },
                       {{"C", s.C}, {"K", s.K}, {"a padded plane", g.plane()}});
}

// out (out_channels, g.run()) = the sum over taps (r, t) of taps[r*S + t] (out_channels,
// g.channels) times the image shifted by r*cols + t: one GEMM per tap, accumulating.
void correlate_by_taps(const Conv2dShape& s, const float* taps, std::int64_t out_channels,
                       const PaddedImage& g, const float* image, float* out) {
    Eigen::Map<RowMajorMatrix> sums(out, out_channels, g.run());
    for (std::int64_t r = 0; r < s.R; ++r)
        for (std::int64_t t = 0; t < s.S; ++t) {
            const Eigen::Map<const RowMajorMatrix> tap(
                taps + (r * s.S + t) * out_channels * g.channels, out_channels, g.channels);
            if (r == 0 && t == 0)
                sums.noalias() = tap * g.shifted(image, r, t);
            else
                sums.noalias() += tap * g.shifted(image, r, t);
        }
}

// For every image of `in` (N, g.channels, H, W): placed `at` in a padded image, correlated by
// correlate_by_taps, and handed to store(n, sums) with sums (out_channels, g.run()). OpenMP over
// batches of images, each batch with its own padded image and sums.
template <typename Store>
void correlate_batch(const Conv2dShape& s, const float* in, std::int64_t H, std::int64_t W,
                     Placement at, const PaddedImage& g, const float* taps,
                     std::int64_t out_channels, Store store) {
    const std::int64_t multiply_adds = out_channels * g.run() * g.channels * s.R * s.S;
    for_each_batch(s.N, multiply_adds, [&](std::int64_t begin, std::int64_t count) {
        const auto image = scratch(g.floats());
        const auto sums = scratch(out_channels * g.run());
        for (std::int64_t n = begin; n < begin + count; ++n) {
            place_padded(in + n * g.channels * H * W, g.channels, H, W, at, image.get(), g.rows,
                         g.cols);
            correlate_by_taps(s, taps, out_channels, g, image.get(), sums.get());
            store(n, sums.get());
        }
    });
}

// The most images one partial sum of backward_weights holds; the partials are added in order.
constexpr std::int64_t chunk_images = 4;

}  // namespace

bool shifted_gemm_fits(const Conv2dShape& s) {
    return s.stride_h == 1 && s.stride_w == 1 && std::min(s.C, s.K) >= 16;
}

void conv2d_forward_shifted(const Conv2dShape& s, const float* x, const float* w, const float* b,
                            float* y) {
    const std::int64_t P = s.P(), Q = s.Q(), RS = s.R * s.S;
    const PaddedImage g = padded_input(s);
    require_sizes("conv2d_forward", s, g);
    const auto taps = scratch(RS * s.K * s.C);  // (R*S, K, C): taps[r*S + t][k][c] = w[k, c, r, t]
    for (std::int64_t k = 0; k < s.K; ++k)
        for (std::int64_t c = 0; c < s.C; ++c)
            for (std::int64_t tap = 0; tap < RS; ++tap)
                taps[(tap * s.K + k) * s.C + c] = w[(k * s.C + c) * RS + tap];
    correlate_batch(s, x, s.H, s.W, Placement{s.pad_h, s.pad_w, 1, 1}, g, taps.get(), s.K,
                    [&](std::int64_t n, const float* sums) {
                        for (std::int64_t k = 0; k < s.K; ++k)
                            for (std::int64_t p = 0; p < P; ++p)
                                Eigen::Map<Array>(y + ((n * s.K + k) * P + p) * Q, Q) =
                                    Eigen::Map<const Array>(sums + k * g.run() + p * g.cols, Q) +
                                    b[k];
                    });
}

void conv2d_backward_data_shifted(const Conv2dShape& s, const float* dy, const float* w,
                                  float* dx) {
    const std::int64_t RS = s.R * s.S, HW = s.H * s.W;
    // dy padded by R-1-pad_h and S-1-pad_w: W + S - 1 columns, H outputs rows.
    const PaddedImage g{.channels = s.K, .rows = s.H + s.R, .cols = s.W + s.S - 1, .out_rows = s.H};
    require_sizes("conv2d_backward_data", s, g);
    const auto taps = scratch(RS * s.C * s.K);  // taps[r*S + t][c][k] = w[k, c, R-1-r, S-1-t]
    for (std::int64_t k = 0; k < s.K; ++k)
        for (std::int64_t c = 0; c < s.C; ++c)
            for (std::int64_t tap = 0; tap < RS; ++tap)
                taps[((RS - 1 - tap) * s.C + c) * s.K + k] = w[(k * s.C + c) * RS + tap];
    const Placement spread{s.R - 1 - s.pad_h, s.S - 1 - s.pad_w, 1, 1};
    correlate_batch(s, dy, s.P(), s.Q(), spread, g, taps.get(), s.C,
                    [&](std::int64_t n, const float* sums) {
                        for (std::int64_t c = 0; c < s.C; ++c)
                            for (std::int64_t h = 0; h < s.H; ++h) {
                                const float* row = sums + c * g.run() + h * g.cols;
                                std::copy(row, row + s.W, dx + (n * s.C + c) * HW + h * s.W);
                            }
                    });
}

void conv2d_backward_weights_shifted(const Conv2dShape& s, const float* x, const float* dy,
                                     float* dw) {
    const std::int64_t P = s.P(), Q = s.Q(), RS = s.R * s.S, KC = s.K * s.C;
    const PaddedImage g = padded_input(s);
    require_sizes("conv2d_backward_weights", s, g);
    // Each chunk of images gets its own partial (R*S, K, C), added up in chunk order: the chunks
    // are fixed by the shape, so the result does not depend on the thread count.
    const std::int64_t per_chunk = std::min(chunk_images, s.N);
    const std::int64_t chunks = ceil_div(s.N, per_chunk);
    const auto partials = scratch(chunks * RS * KC);
    const std::int64_t multiply_adds = per_chunk * s.K * g.run() * s.C * RS;
    for_each_batch(chunks, multiply_adds, [&](std::int64_t begin, std::int64_t count) {
        const auto image = scratch(g.floats());
        const auto gradient = scratch(s.K * g.run());  // dy[n] on rows of g.cols, zeros past Q
        for (std::int64_t chunk = begin; chunk < begin + count; ++chunk) {
            const std::int64_t first = chunk * per_chunk, last = std::min(s.N, first + per_chunk);
            for (std::int64_t n = first; n < last; ++n) {
                place_padded(x + n * s.C * s.H * s.W, s.C, s.H, s.W,
                             Placement{s.pad_h, s.pad_w, 1, 1}, image.get(), g.rows, g.cols);
                place_padded(dy + n * s.K * P * Q, s.K, P, Q, Placement{0, 0, 1, 1}, gradient.get(),
                             P, g.cols);
                const Eigen::Map<const RowMajorMatrix> dY(gradient.get(), s.K, g.run());
                for (std::int64_t r = 0; r < s.R; ++r)
                    for (std::int64_t t = 0; t < s.S; ++t) {
                        Eigen::Map<RowMajorMatrix> dW(
                            partials.get() + (chunk * RS + r * s.S + t) * KC, s.K, s.C);
                        if (n == first)
                            dW.noalias() = dY * g.shifted(image.get(), r, t).transpose();
                        else
                            dW.noalias() += dY * g.shifted(image.get(), r, t).transpose();
                    }
            }
        }
    });
    add_in_chunk_order(partials.get(), chunks, RS * KC, partials.get());
    const float* total = partials.get();  // (R*S, K, C)
    for (std::int64_t k = 0; k < s.K; ++k)
        for (std::int64_t c = 0; c < s.C; ++c)
            for (std::int64_t tap = 0; tap < RS; ++tap)
                dw[(k * s.C + c) * RS + tap] = total[tap * KC + k * s.C + c];
}

}  // namespace triptych::cpu_eigen_omp
