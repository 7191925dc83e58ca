// gpu_tiled conv2d by FFT (ConvAlgorithm::fft): the three passes by the convolution theorem, with
// the hand-written FFT of fft.cu. Shapes and semantics: Conv2dShape (common/ops.hpp) and the
// float64 reference cpu/naive/conv2d.hpp.
//
// The math, in one dimension (the second works alike). Each real plane is placed in a complex
// plane of F values, F = the power of two >= H + 2 pad, zero elsewhere; indices are taken modulo F.
// For planes a, b with transforms A, B (fft.hpp), the inverse transform divided by F gives
//   of A . conj(B), at t:  sum_m a[m + t] b[m]   (circular correlation)
//   of A . B,       at t:  sum_m a[t - m] b[m]   (circular convolution)
// Each tensor has one placement, the same in every pass (PlaneEmbedding):
//   input   x, dx    x[h]  at h + pad       (zero-padded)
//   filter  w, dw    w[r]  at r             (at the origin)
//   output  y, dy    dy[p] at p * stride    (dilated by the stride)
// A pass places and transforms its inputs, multiplies the spectra, transforms back, and reads its
// output at that output's placement:
//   forward           Y_nk  = sum_c X_nc . conj(W_kc)    at p * stride: sum_r x[p*stride + r - pad]
//                     w[r], the definition; then + b[k]
//   backward_data     DX_nc = sum_k DY_nk . W_kc         at h + pad: the sum of dy[p] w[r] over
//                     p*stride + r - pad = h, the forward terms that read x[h]
//   backward_weights  DW_kc = sum_n X_nc . conj(DY_nk)   at r: sum_p x[p*stride + r - pad] dy[p];
//                     db[k] = sum_n DY_nk(0, 0): a transform's zero-frequency term is the sum of
//                     its plane
// F >= H + 2 pad keeps the circular sums from wrapping into what is read: the correlations read
// indices up to (P-1) stride + R - 1 <= H + 2 pad - 1 < F, and the convolution's wrapped terms
// (t - m < 0 lands at F + t - m > H + 2 pad - R >= (P-1) stride) fall on zeros of the dilated dy.
// At each frequency, a sum over c (or k, or n) of products is one small complex matrix product:
// spectrum_product_kernel computes those, a thread per frequency and output plane.
//
// Limits: H + 2 pad_h and W + 2 pad_w up to fft_max_length (2048, one line in fft.cu's shared
// tile); larger planes throw Unsupported. Workspace: the spectra (8 Fh Fw bytes each) live in the
// calling thread's scratch device memory (gpu::workspace, kept between calls), at most
// fft_workspace_bytes (1 GiB): the K*C filter spectra for the whole call, plus those of as many
// images as fit, the batch being processed in chunks of that many. A shape whose filter spectra and
// one image's do not fit throws Unsupported. Work: the products take N*K*C*Fh*Fw complex
// multiply-adds (4 real multiplies each) whatever R x S is, where the direct algorithm takes
// N*K*C*P*Q*R*S; the transforms add O((N*C + N*K + K*C) Fh Fw log(Fh Fw)). So the FFT gains as the
// filter grows. Inputs are real, so half of every spectrum mirrors the other (conjugated); a
// real-to-complex transform would halve the work, and was left out for clarity.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

#include "common/errors.hpp"
#include "common/math.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/tiled/conv_fft.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/fft.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr std::int64_t fft_workspace_bytes = std::int64_t(1) << 30;
constexpr int product_threads = 256;

// Where a (rows, cols) real plane sits in an (Fh, Fw) spectrum plane: element (i, j) at
// (offset_h + i * step_h, offset_w + j * step_w); every other spectrum element is 0.
struct PlaneEmbedding {
    std::int64_t rows, cols;
    std::int64_t offset_h, offset_w;
    std::int64_t step_h, step_w;
};

// The FFT size of a shape and how many images one chunk of the batch holds.
struct FftPlan {
    std::int64_t Fh, Fw, plane_size;  // plane_size = Fh * Fw complex values
    std::int64_t chunk;               // images per chunk
    std::int64_t fixed_planes;        // K * C spectra kept for the whole call
    std::int64_t chunk_planes;        // (C + K) * chunk spectra of one chunk's images
};

// spectra[plane][u][v] = the real plane `src[plane]` placed by `embedding`, zero elsewhere.
// src holds `planes` planes of embedding.rows x embedding.cols; spectra `planes` of Fh x Fw.
__global__ void embed_kernel(std::int64_t planes, std::int64_t Fh, std::int64_t Fw,
                             PlaneEmbedding embedding, const float* src, float2* spectra) {
    const std::int64_t total = planes * Fh * Fw;
    for (std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; index < total;
         index += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t plane = index / (Fh * Fw), u = index / Fw % Fh, v = index % Fw;
        const std::int64_t di = u - embedding.offset_h, dj = v - embedding.offset_w;
        const std::int64_t i = di / embedding.step_h, j = dj / embedding.step_w;
        const bool placed = di >= 0 && dj >= 0 && di % embedding.step_h == 0 &&
                            dj % embedding.step_w == 0 && i < embedding.rows && j < embedding.cols;
        const float value = placed ? src[(plane * embedding.rows + i) * embedding.cols + j] : 0.0f;
        spectra[index] = make_float2(value, 0.0f);
    }
}

// dst[plane][i][j] = scale * real(spectra[plane] at the place of (i, j)) + bias: the inverse
// transform's result read where `embedding` puts the output. bias is null, or plane p adds
// bias[p % bias_period] (b[k] for plane n * K + k).
__global__ void extract_kernel(std::int64_t planes, std::int64_t Fh, std::int64_t Fw,
                               PlaneEmbedding embedding, const float2* spectra, float scale,
                               const float* bias, std::int64_t bias_period, float* dst) {
    const std::int64_t plane_values = embedding.rows * embedding.cols;
    const std::int64_t total = planes * plane_values;
    for (std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; index < total;
         index += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t plane = index / plane_values;
        const std::int64_t i = index / embedding.cols % embedding.rows, j = index % embedding.cols;
        const std::int64_t u = embedding.offset_h + i * embedding.step_h;
        const std::int64_t v = embedding.offset_w + j * embedding.step_w;
        const float value = scale * spectra[(plane * Fh + u) * Fw + v].x;
        dst[index] = bias ? value + bias[plane % bias_period] : value;
    }
}

// A matrix whose entries are spectrum planes: entry (row, col) is the plane starting at
// data + (row * row_stride + col * col_stride) * plane_size. The strides let one buffer of planes
// be read as a matrix or its transpose.
template <typename Complex>
struct PlaneMatrix {
    Complex* data;
    std::int64_t row_stride, col_stride;
};

// At every frequency f: out(i, j) = [out(i, j) +] sum_t a(i, t) * b'(t, j), with
// b' = conj(b) when conjugate_b. out is (I, J), a (I, T), b (T, J). Thread (f, plane) of a grid
// over (frequencies, I * J output planes); consecutive threads take consecutive frequencies of the
// same planes, so every read and write is coalesced.
__global__ void spectrum_product_kernel(std::int64_t I, std::int64_t J, std::int64_t T,
                                        std::int64_t plane_size, PlaneMatrix<const float2> a,
                                        PlaneMatrix<const float2> b, bool conjugate_b,
                                        bool accumulate, PlaneMatrix<float2> out) {
    const std::int64_t f = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (f >= plane_size) return;
    for (std::int64_t ij = blockIdx.y; ij < I * J; ij += gridDim.y) {
        const std::int64_t i = ij / J, j = ij % J;
        float2* out_value = out.data + (i * out.row_stride + j * out.col_stride) * plane_size + f;
        float2 sum = accumulate ? *out_value : make_float2(0.0f, 0.0f);
        for (std::int64_t t = 0; t < T; ++t) {
            const float2 a_value = a.data[(i * a.row_stride + t * a.col_stride) * plane_size + f];
            const float2 b_value = b.data[(t * b.row_stride + j * b.col_stride) * plane_size + f];
            sum = complex_add(
                sum, complex_multiply(a_value, conjugate_b ? complex_conjugate(b_value) : b_value));
        }
        *out_value = sum;
    }
}

// db[k] = [db[k] +] sum_n real(DY_nk(0, 0)) over the `images` images of a chunk: the
// zero-frequency term of a transform is the sum of its plane (every e^(...) is 1 there).
__global__ void bias_gradient_kernel(std::int64_t images, std::int64_t K, std::int64_t plane_size,
                                     const float2* dy_spectra, bool accumulate, float* db) {
    const std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= K) return;
    float sum = accumulate ? db[k] : 0.0f;
    for (std::int64_t n = 0; n < images; ++n) sum += dy_spectra[(n * K + k) * plane_size].x;
    db[k] = sum;
}

FftPlan plan_fft(const Conv2dShape& s, const std::string& op) {
    const std::int64_t padded_h = s.H + 2 * s.pad_h, padded_w = s.W + 2 * s.pad_w;
    if (padded_h > fft_max_length || padded_w > fft_max_length)
        throw Unsupported(op + ": the padded input is " + std::to_string(padded_h) + "x" +
                          std::to_string(padded_w) + "; the FFT (gpu/tiled/fft.cu) handles up to " +
                          std::to_string(fft_max_length) + " per dimension");
    FftPlan plan;
    plan.Fh = std::int64_t(std::bit_ceil(std::uint64_t(padded_h)));  // the power of two >= padded_h
    plan.Fw = std::int64_t(std::bit_ceil(std::uint64_t(padded_w)));
    plan.plane_size = plan.Fh * plan.Fw;
    const std::int64_t plane_bytes = plan.plane_size * std::int64_t(sizeof(float2));
    const std::int64_t budget_planes = fft_workspace_bytes / plane_bytes;
    plan.fixed_planes = s.K * s.C;
    const std::int64_t planes_per_image = s.C + s.K;
    plan.chunk = std::min(s.N, (budget_planes - plan.fixed_planes) / planes_per_image);
    if (plan.chunk < 1)
        throw Unsupported(op + ": the spectra of the filters and one image need " +
                          std::to_string((plan.fixed_planes + planes_per_image) * plane_bytes) +
                          " bytes, more than the FFT workspace bound of " +
                          std::to_string(fft_workspace_bytes));
    plan.chunk_planes = plan.chunk * planes_per_image;
    return plan;
}

// The workspace of a plan: fixed_planes + chunk_planes spectra, in the calling thread's scratch
// device memory (gpu::workspace).
float2* spectra_workspace(const FftPlan& plan) {
    return reinterpret_cast<float2*>(
        gpu::workspace(2 * (plan.fixed_planes + plan.chunk_planes) * plan.plane_size));
}

void embed(const FftPlan& plan, std::int64_t planes, PlaneEmbedding embedding, const float* src,
           float2* spectra) {
    const std::int64_t total = planes * plan.plane_size;
    gpu::launch(embed_kernel, elementwise_grid(total), dim3(elementwise_threads), 0, planes,
                plan.Fh, plan.Fw, embedding, src, spectra);
}

void extract(const FftPlan& plan, std::int64_t planes, PlaneEmbedding embedding,
             const float2* spectra, const float* bias, std::int64_t bias_period, float* dst) {
    const std::int64_t total = planes * embedding.rows * embedding.cols;
    const float scale = 1.0f / float(plan.plane_size);
    gpu::launch(extract_kernel, elementwise_grid(total), dim3(elementwise_threads), 0, planes,
                plan.Fh, plan.Fw, embedding, spectra, scale, bias, bias_period, dst);
}

// embed, then the forward transform.
void transform(const FftPlan& plan, std::int64_t planes, PlaneEmbedding embedding, const float* src,
               float2* spectra) {
    embed(plan, planes, embedding, src, spectra);
    fft2d(planes, plan.Fh, plan.Fw, spectra, FftDirection::forward);
}

void spectrum_product(const FftPlan& plan, std::int64_t I, std::int64_t J, std::int64_t T,
                      PlaneMatrix<const float2> a, PlaneMatrix<const float2> b, bool conjugate_b,
                      bool accumulate, PlaneMatrix<float2> out) {
    const dim3 grid(unsigned(ceil_div<std::int64_t>(plan.plane_size, product_threads)),
                    gpu::grid_rows(I * J));
    gpu::launch(spectrum_product_kernel, grid, dim3(product_threads), 0, I, J, T, plan.plane_size,
                a, b, conjugate_b, accumulate, out);
}

// The placements of the header comment: x and dx, w and dw, y and dy.
PlaneEmbedding input_embedding(const Conv2dShape& s) { return {s.H, s.W, s.pad_h, s.pad_w, 1, 1}; }
PlaneEmbedding filter_embedding(const Conv2dShape& s) { return {s.R, s.S, 0, 0, 1, 1}; }
PlaneEmbedding output_embedding(const Conv2dShape& s) {
    return {s.P(), s.Q(), 0, 0, s.stride_h, s.stride_w};
}

}  // namespace

// x (N, C, H, W), w (K, C, R, S), b (K) -> y (N, K, P, Q).
// Workspace: W (K, C) | X (chunk, C) | Y (chunk, K) spectra.
void conv2d_forward_fft(const Conv2dShape& s, const float* x, const float* w, const float* b,
                        float* y) {
    const FftPlan plan = plan_fft(s, "gpu_tiled conv2d_forward fft");
    float2* w_spectra = spectra_workspace(plan);
    float2* x_spectra = w_spectra + s.K * s.C * plan.plane_size;
    float2* y_spectra = x_spectra + plan.chunk * s.C * plan.plane_size;
    transform(plan, s.K * s.C, filter_embedding(s), w, w_spectra);
    const std::int64_t x_image = s.C * s.H * s.W, y_image = s.K * s.P() * s.Q();
    for (std::int64_t n0 = 0; n0 < s.N; n0 += plan.chunk) {
        const std::int64_t images = std::min(plan.chunk, s.N - n0);
        transform(plan, images * s.C, input_embedding(s), x + n0 * x_image, x_spectra);
        // Y (images, K) = X (images, C) . conj(W^T) (C, K)
        spectrum_product(plan, images, s.K, s.C, {x_spectra, s.C, 1}, {w_spectra, 1, s.C}, true,
                         false, {y_spectra, s.K, 1});
        fft2d(images * s.K, plan.Fh, plan.Fw, y_spectra, FftDirection::inverse);
        extract(plan, images * s.K, output_embedding(s), y_spectra, b, s.K, y + n0 * y_image);
    }
}

// dy (N, K, P, Q), w (K, C, R, S) -> dx (N, C, H, W).
// Workspace: W (K, C) | DY (chunk, K) | DX (chunk, C) spectra.
void conv2d_backward_data_fft(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
    const FftPlan plan = plan_fft(s, "gpu_tiled conv2d_backward_data fft");
    float2* w_spectra = spectra_workspace(plan);
    float2* dy_spectra = w_spectra + s.K * s.C * plan.plane_size;
    float2* dx_spectra = dy_spectra + plan.chunk * s.K * plan.plane_size;
    transform(plan, s.K * s.C, filter_embedding(s), w, w_spectra);
    const std::int64_t dy_image = s.K * s.P() * s.Q(), dx_image = s.C * s.H * s.W;
    for (std::int64_t n0 = 0; n0 < s.N; n0 += plan.chunk) {
        const std::int64_t images = std::min(plan.chunk, s.N - n0);
        transform(plan, images * s.K, output_embedding(s), dy + n0 * dy_image, dy_spectra);
        // DX (images, C) = DY (images, K) . W (K, C)
        spectrum_product(plan, images, s.C, s.K, {dy_spectra, s.K, 1}, {w_spectra, s.C, 1}, false,
                         false, {dx_spectra, s.C, 1});
        fft2d(images * s.C, plan.Fh, plan.Fw, dx_spectra, FftDirection::inverse);
        extract(plan, images * s.C, input_embedding(s), dx_spectra, nullptr, 1, dx + n0 * dx_image);
    }
}

// x (N, C, H, W), dy (N, K, P, Q) -> dw (K, C, R, S), db (K), both overwritten.
// Workspace: DW (K, C) | X (chunk, C) | DY (chunk, K) spectra; DW adds up over the chunks.
void conv2d_backward_weights_fft(const Conv2dShape& s, const float* x, const float* dy, float* dw,
                                 float* db) {
    const FftPlan plan = plan_fft(s, "gpu_tiled conv2d_backward_weights fft");
    float2* dw_spectra = spectra_workspace(plan);
    float2* x_spectra = dw_spectra + s.K * s.C * plan.plane_size;
    float2* dy_spectra = x_spectra + plan.chunk * s.C * plan.plane_size;
    const std::int64_t x_image = s.C * s.H * s.W, dy_image = s.K * s.P() * s.Q();
    for (std::int64_t n0 = 0; n0 < s.N; n0 += plan.chunk) {
        const std::int64_t images = std::min(plan.chunk, s.N - n0);
        const bool accumulate = n0 > 0;
        transform(plan, images * s.C, input_embedding(s), x + n0 * x_image, x_spectra);
        transform(plan, images * s.K, output_embedding(s), dy + n0 * dy_image, dy_spectra);
        // DW^T (C, K) [+]= X^T (C, images) . conj(DY) (images, K); DW (K, C) read transposed.
        spectrum_product(plan, s.C, s.K, images, {x_spectra, 1, s.C}, {dy_spectra, s.K, 1}, true,
                         accumulate, {dw_spectra, 1, s.C});
        gpu::launch(
            bias_gradient_kernel, dim3(unsigned(ceil_div<std::int64_t>(s.K, product_threads))),
            dim3(product_threads), 0, images, s.K, plan.plane_size, dy_spectra, accumulate, db);
    }
    fft2d(s.K * s.C, plan.Fh, plan.Fw, dw_spectra, FftDirection::inverse);
    extract(plan, s.K * s.C, filter_embedding(s), dw_spectra, nullptr, 1, dw);
}

}  // namespace triptych::gpu_tiled
