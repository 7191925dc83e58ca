// gpu_tiled conv2d by im2col + GEMM: the three passes with ConvAlgorithm::im2col (db: conv2d.cu).
// Shapes and math as in cpu/naive/conv2d.hpp:
//   x and dx (N, C, H, W), w and dw (K, C, R, S), b (K), y and dy (N, K, P, Q).
// In the kernels (h, col) is a position in x: w names the filters.
//
// version 3 (lesson 09; version 2 is the direct algorithm in conv2d.cu). A convolution is a
// matrix product once the input is unrolled into `patches` (the im2col matrix, often called col),
// (C*R*S, images*P*Q): column (b, p, q) holds the C x R x S inputs output (p, q) of image b reads,
// row (c, r, s) the input each output multiplies by tap (c, r, s) (0 in the padding). Then the
// tiled GEMM of gemm.cu (its default, version 8: 128 x 128 tiles, 8 x 8 per thread) does every
// multiply-add:
//   forward          Y (K, images*P*Q)        = W (K, C*R*S) * patches
//   backward_data    dpatches (C*R*S, ...)    = W^T * dY, then col2im: each dx element gathers
//                                               the dpatches entries that came from it
//   backward_weights dW (K, C*R*S)           += dY * patches^T, accumulated over the chunks
// with W the filters seen as a (K, C*R*S) matrix, which they already are in memory.
//
// Kernels, all one thread per element in a grid-stride loop, consecutive threads on consecutive
// addresses of what they write:
//   im2col_kernel:  patches from x.
//   col2im_kernel:  dx from dpatches, as a gather. Each dx element sums the R*S (or fewer) entries
//     of dpatches that hold its value; the scatter (each dpatches entry added to its input) would
//     need atomicAdd where windows overlap, slower and a different rounding on every run.
//   swap_leading_axes_kernel: (A, B, L) -> (B, A, L). The GEMM's output is (K, images*P*Q) while
//     y is (images, K, P*Q); y is written through this reordering, with the bias added on the
//     way, and dy is reordered into dY before its GEMMs. A pass over y, small next to the GEMM.
//
// Why several images per GEMM: LeNet's conv1 (C=1, K=6, 5x5 on 28x28) is a 6 x 784 x 25 GEMM per
// image: 7 blocks of 128 x 128, a few percent of an H200's 132 SMs. The whole batch of 64 is one
// 6 x 50176 x 25 GEMM, 392 blocks. (Its 128-row tiles are still mostly empty for K = 6: the
// GEMM's tile shapes are chosen for large matrices.)
// Why chunks: patches holds C*R*S floats per output, R*S times the input (25x for 5x5 filters);
// for ResNet's 3x3 layers on 56x56 with C = 64 that is 7 MiB per image, 1.8 GiB for a batch of
// 256. Images are therefore taken as many at a time as keep the workspace (patches plus the
// reordered Y or dY) under workspace_max_bytes = 256 MiB, at least one; the workspace is the
// calling thread's scratch device memory (gpu::workspace), reused from call to call.
// The cost of the method is that traffic: the GEMM is fast, but patches is written and read in
// full. Implicit GEMM (cuDNN) builds the GEMM's tiles of patches in shared memory straight from x
// instead, never storing the matrix.
#include "gpu/runtime/cuda.hpp"

#include <algorithm>
#include <cstdint>

#include "common/math.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/tiled/conv_im2col.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr std::int64_t workspace_max_bytes = std::int64_t(256) << 20;
// Matrices in the workspace start at multiples of 256 bytes, as cudaMalloc's buffers do, so that
// the GEMM can use float4 loads on each.
constexpr std::int64_t workspace_alignment_floats = 256 / sizeof(float);

// Calls f(i) for every i in [0, n): thread t of T takes t, t + T, t + 2T, ... (a grid-stride
// loop over elementwise_grid(n), so a thread takes about four elements).
template <typename F>
__device__ void for_each_index(std::int64_t n, F f) {
    const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        f(i);
}

// patches[(c, r, s), (b, p, q)] = x[b, c, h, col] with h = p*stride_h + r - pad_h and
// col = q*stride_w + s - pad_w, or 0 in the padding; x holds `images` images.
__global__ void im2col_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                              std::int64_t images, const float* x, float* patches) {
    const std::int64_t outputs = images * P * Q;  // columns of patches
    const std::int64_t RS = shape.R * shape.S;
    for_each_index(shape.C * RS * outputs, [&](std::int64_t i) {
        const std::int64_t row = i / outputs, column = i % outputs;
        const std::int64_t c = row / RS, r = row % RS / shape.S, s = row % shape.S;
        const std::int64_t b = column / (P * Q), p = column % (P * Q) / Q, q = column % Q;
        const std::int64_t h = p * shape.stride_h + r - shape.pad_h;
        const std::int64_t col = q * shape.stride_w + s - shape.pad_w;
        const bool inside = h >= 0 && h < shape.H && col >= 0 && col < shape.W;
        patches[i] = inside ? x[((b * shape.C + c) * shape.H + h) * shape.W + col] : 0.0f;
    });
}

// dx[b, c, h, col] = sum of dpatches[(c, r, s), (b, p, q)] over the taps (r, s) and outputs
// (p, q) that read x[b, c, h, col]: p * stride_h = h + pad_h - r, q likewise.
__global__ void col2im_kernel(Conv2dShape shape, std::int64_t P, std::int64_t Q,
                              std::int64_t images, const float* dpatches, float* dx) {
    const std::int64_t outputs = images * P * Q;
    for_each_index(images * shape.C * shape.H * shape.W, [&](std::int64_t i) {
        const std::int64_t col = i % shape.W, h = i / shape.W % shape.H;
        const std::int64_t c = i / (shape.W * shape.H) % shape.C;
        const std::int64_t b = i / (shape.W * shape.H * shape.C);
        float sum = 0.0f;
        for (std::int64_t r = 0; r < shape.R; ++r) {
            const std::int64_t p_strided = h + shape.pad_h - r;
            if (p_strided < 0 || p_strided % shape.stride_h != 0) continue;
            const std::int64_t p = p_strided / shape.stride_h;
            if (p >= P) continue;
            for (std::int64_t s = 0; s < shape.S; ++s) {
                const std::int64_t q_strided = col + shape.pad_w - s;
                if (q_strided < 0 || q_strided % shape.stride_w != 0) continue;
                const std::int64_t q = q_strided / shape.stride_w;
                if (q >= Q) continue;
                sum += dpatches[((c * shape.R + r) * shape.S + s) * outputs + (b * P + p) * Q + q];
            }
        }
        dx[i] = sum;
    });
}

// dst[b, a, l] = src[a, b, l] (+ bias[a] unless bias is null): src is (A, B, L), dst (B, A, L).
// Runs of L contiguous floats move together, so reads and writes are both coalesced.
__global__ void swap_leading_axes_kernel(std::int64_t A, std::int64_t B, std::int64_t L,
                                         const float* src, const float* bias, float* dst) {
    for_each_index(A * B * L, [&](std::int64_t i) {
        const std::int64_t l = i % L, a = i / L % A, b = i / (L * A);
        dst[i] = src[(a * B + b) * L + l] + (bias != nullptr ? bias[a] : 0.0f);
    });
}

// The device memory one call works in, and how many images each chunk takes.
struct Workspace {
    std::int64_t images;  // per chunk
    float* patches;       // patches or dpatches: (C*R*S, images*P*Q)
    float* outputs;       // Y or dY: (K, images*P*Q)

    explicit Workspace(const Conv2dShape& s) {
        const std::int64_t PQ = s.P() * s.Q(), CRS = s.C * s.R * s.S;
        const std::int64_t per_image = (CRS + s.K) * PQ;
        images = std::clamp<std::int64_t>(
            workspace_max_bytes / std::int64_t(sizeof(float)) / per_image, 1, s.N);
        const std::int64_t patch_floats =
            ceil_div(CRS * images * PQ, workspace_alignment_floats) * workspace_alignment_floats;
        patches = gpu::workspace(patch_floats + s.K * images * PQ);
        outputs = patches + patch_floats;
    }
};

void im2col(const Conv2dShape& s, std::int64_t images, const float* x, float* patches) {
    const std::int64_t n = s.C * s.R * s.S * images * s.P() * s.Q();
    gpu::launch(im2col_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, s, s.P(), s.Q(),
                images, x, patches);
}

void col2im(const Conv2dShape& s, std::int64_t images, const float* dpatches, float* dx) {
    const std::int64_t n = images * s.C * s.H * s.W;
    gpu::launch(col2im_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, s, s.P(), s.Q(),
                images, dpatches, dx);
}

void swap_leading_axes(std::int64_t A, std::int64_t B, std::int64_t L, const float* src,
                       const float* bias, float* dst) {
    gpu::launch(swap_leading_axes_kernel, elementwise_grid(A * B * L), dim3(elementwise_threads), 0,
                A, B, L, src, bias, dst);
}

}  // namespace

void conv2d_forward_im2col(const Conv2dShape& s, const float* x, const float* w, const float* b,
                           float* y) {
    const std::int64_t PQ = s.P() * s.Q(), CRS = s.C * s.R * s.S;
    const Workspace work(s);
    for (std::int64_t n0 = 0; n0 < s.N; n0 += work.images) {
        const std::int64_t images = std::min(work.images, s.N - n0);
        im2col(s, images, x + n0 * s.C * s.H * s.W, work.patches);
        // Y (K, images*P*Q) = W (K, C*R*S) * patches (C*R*S, images*P*Q)
        gemm(GemmShape{s.K, images * PQ, CRS, false, false, 1.0f, 0.0f}, w, work.patches,
             work.outputs);
        // y[n0 + b, k, :] = Y[k, b, :] + bias[k]
        swap_leading_axes(s.K, images, PQ, work.outputs, b, y + n0 * s.K * PQ);
    }
}

void conv2d_backward_data_im2col(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
    const std::int64_t PQ = s.P() * s.Q(), CRS = s.C * s.R * s.S;
    const Workspace work(s);
    for (std::int64_t n0 = 0; n0 < s.N; n0 += work.images) {
        const std::int64_t images = std::min(work.images, s.N - n0);
        // dY[k, b, :] = dy[n0 + b, k, :]
        swap_leading_axes(images, s.K, PQ, dy + n0 * s.K * PQ, nullptr, work.outputs);
        // dpatches (C*R*S, images*P*Q) = W^T (C*R*S, K) * dY (K, images*P*Q); W is stored (K, CRS)
        gemm(GemmShape{CRS, images * PQ, s.K, true, false, 1.0f, 0.0f}, w, work.outputs,
             work.patches);
        col2im(s, images, work.patches, dx + n0 * s.C * s.H * s.W);
    }
}

void conv2d_backward_weights_im2col(const Conv2dShape& s, const float* x, const float* dy,
                                    float* dw) {
    const std::int64_t PQ = s.P() * s.Q(), CRS = s.C * s.R * s.S;
    const Workspace work(s);
    for (std::int64_t n0 = 0; n0 < s.N; n0 += work.images) {
        const std::int64_t images = std::min(work.images, s.N - n0);
        im2col(s, images, x + n0 * s.C * s.H * s.W, work.patches);
        swap_leading_axes(images, s.K, PQ, dy + n0 * s.K * PQ, nullptr, work.outputs);
        // dW (K, C*R*S) += dY (K, images*P*Q) * patches^T; patches is stored (C*R*S, images*P*Q).
        // The first chunk overwrites dW (beta = 0), the others add to it.
        const float beta = n0 == 0 ? 0.0f : 1.0f;
        gemm(GemmShape{s.K, CRS, images * PQ, false, true, 1.0f, beta}, work.outputs, work.patches,
             dw);
    }
}

}  // namespace triptych::gpu_tiled
