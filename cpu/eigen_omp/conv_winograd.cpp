// cpu_eigen_omp conv2d by Winograd's minimal filtering: fewer multiplications than the
// definition, paid for in additions. Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks" (2015), brought it to deep learning; cuDNN and oneDNN have it for 3x3 filters. Two
// forms here: F(2x2, 3x3) for 3x3 filters, in tiles of 2x2 outputs with GEMMs over the channels
// (this part), and F(4, 5) down the columns for 5x5 filters, with the direct kernels along the
// rows (the part after it, "5x5 filters").
//
// Why. The direct kernels of conv_direct.cpp already run near the cores' multiply-add peak on
// ResNet's 3x3 layer, so only fewer multiplications can make it faster. A 2x2 block of outputs of
// a 3x3 filter needs 4 x 9 = 36 multiplications by the definition. Winograd computes it with 16:
//   y (2x2) = A^T [ (G g G^T) . (B^T d B) ] A        (. : elementwise, 16 products)
// where d is the 4x4 patch of input the four outputs read, g the 3x3 filter, and
//   B^T = | 1  0 -1  0 |    G = | 1    0    0   |    A^T = | 1  1  1  0 |
//         | 0  1  1  0 |        | 1/2  1/2  1/2 |          | 0  1 -1 -1 |
//         | 0 -1  1  0 |        | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |        | 0    0    1   |
// (the 1D version, F(2, 3): y0 = d0 g0 + d1 g1 + d2 g2 and y1 = d1 g0 + d2 g1 + d3 g2 are
// m1 + m2 + m3 and m2 - m3 - m4 with m1 = (d0 - d2) g0, m2 = (d1 + d2)(g0 + g1 + g2)/2,
// m3 = (d2 - d1)(g0 - g1 + g2)/2, m4 = (d1 - d3) g2: 4 multiplications instead of 6, and the
// filter's sums are made once for all the data.) Over C channels the 16 products of each
// channel are added before A^T . A, so for every one of the 16 "points" of the transformed
// domain the sum over channels is a matrix product:
//   M[point] (K x tiles) = U[point] (K x C) * V[point] (C x tiles)
// with U = G g G^T for every filter (once per call) and V = B^T d B for every input patch. The
// products are 16 GEMMs with 4/9 of the direct algorithm's multiply-adds, run by OpenBLAS's sgemm.
// The transforms are additions, a few percent of the GEMMs' flops on ResNet's layer (32 per patch
// and channel in, 24 per tile and channel out, against 32 C K per tile in the GEMMs), but they
// read and write every value of a block several times: perf put the GEMMs at half of ResNet's
// forward on a Zen 4, the gathers, transforms and scatters at most of the rest.
//
// The passes, all with the same tiles (the output cut into 2x2 tiles, tile (i, j) reading the
// 4x4 patch of input at (2i - pad_h, 2j - pad_w), zero outside the image):
//   forward          as above; the tiles past an odd P or Q compute outputs that are dropped.
//   backward_data    the transposed convolution is itself a 3x3 convolution at stride 1: dy
//                    padded by 2 - pad, filters w rotated by 180 degrees with k and c swapped
//                    (dx[c] = sum_k dy[k] correlated with rot180(w[k, c])). So it is the
//                    forward pass on those, with a padding that may be negative (pad > 2: the
//                    tiles start inside dy).
//   backward_weights dw[k, c] (3x3) sums, over every tile of every image, the correlation of
//                    x's 4x4 patch with dy's 2x2 tile: Winograd's F(3x3, 2x2), the same tiles
//                    and the same B^T with the roles of the filter and the output swapped:
//                    dw = A2^T [ sum over tiles (G2 e G2^T) . (B^T d B) ] A2,  e dy's tile,
//                    G2 = | 1    0   |   A2^T = | 1  1  1  0 |
//                         | 1/2  1/2 |          | 0  1 -1  0 |
//                         | 1/2 -1/2 |          | 0  1  1  1 |
//                         | 0   -1   |
//                    The sum over tiles is again 16 GEMMs, (K x tiles) * (tiles x C).
//
// The tiles go in blocks (Tiling::block), one block at a time per thread: gather its input
// patches, transform them (V), multiply (M), transform back and scatter, with V and M staying in
// the core's L2 between the steps. Writing V for the whole batch first would move ResNet's
// 51 MB of V and 51 MB of M through memory twice. Each step works on whole rows: a block is a
// few runs of tiles side by side (Segment), whose patches are rows of the input split into even
// and odd columns, and every transform adds or subtracts rows of 128 tiles' values at once.
//
// The price is accuracy. The transforms add and halve values before they are multiplied, so
// rounding errors are relative to sums of absolute values larger than the direct algorithm's
// sum |x w| (check/conv_checks.cpp derives the bound); larger tiles, F(4x4, 3x3) and up, would
// save more multiplications and lose more accuracy (their transforms hold 1/4, 1/6, ...).
#include "cpu/eigen_omp/conv_winograd.hpp"

#include <algorithm>
#include <vector>

#include "common/errors.hpp"
#include "common/math.hpp"
#include "common/winograd.hpp"
#include "cpu/eigen_omp/conv_direct.hpp"
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

// A tile's 4x4 patch has 16 elements, and the transformed domain 16 points.
constexpr std::int64_t points = 16;

// The floats of V and M one block of tiles keeps: 1 MiB, one core's L2 on AMD's Zen 3 to Zen 5.
// On a Zen 4, ResNet's 3x3 layer (blocks of 128 tiles) ran its forward measurably faster than
// with half the budget (64 tiles) or twice (256 tiles): 2 alternating runs of 3 repetitions each
// (conv2d_forward_winograd/cpu_eigen_omp/resnet_3x3, lesson 10's Winograd table).
constexpr std::int64_t block_budget = 1 << 18;

// One pass's convolution as the tiles see it: `in` channels of H x W in, `out` channels of P x Q
// out, 3x3 filters at stride 1, tile (i, j) reading from (2i - pad_h, 2j - pad_w). The padding
// may be negative (backward_data with pad > 2).
struct Tiling {
    std::int64_t images, in, H, W, out, P, Q, pad_h, pad_w;

    std::int64_t rows() const { return ceil_div(P, std::int64_t{2}); }
    std::int64_t cols() const { return ceil_div(Q, std::int64_t{2}); }
    std::int64_t tiles() const { return images * rows() * cols(); }
    // Tiles per block: V (16 x in x block) and M (16 x out x block) within block_budget, a
    // multiple of 16 (whole Vecs), at least 16.
    std::int64_t block() const {
        const std::int64_t fit = block_budget / (points * (in + out));
        return std::clamp<std::int64_t>(fit / 16 * 16, 16, 512);
    }
};

Tiling forward_tiling(const Conv2dShape& s) {
    return {s.N, s.C, s.H, s.W, s.K, s.P(), s.Q(), s.pad_h, s.pad_w};
}

// A run of a block's tiles that lie side by side in one row of tiles of one image: tiles
// (image, i, j) for j in [j, j + count), the block's tiles first .. first + count - 1. A block is
// a few such runs (ResNet's 56 x 56 outputs: rows of 28 tiles), and every step below works a
// segment at a time, on whole rows of the input and output.
struct Segment {
    std::int64_t image, i, j, count, first;
};

// The segments of tiles [first_tile, first_tile + tiles), in order.
std::vector<Segment> segments(const Tiling& t, std::int64_t first_tile, std::int64_t tiles) {
    std::vector<Segment> runs;
    const std::int64_t per_image = t.rows() * t.cols(), end = first_tile + tiles;
    for (std::int64_t g = first_tile; g < end;) {
        const std::int64_t j = g % per_image % t.cols();
        const std::int64_t count = std::min(t.cols() - j, end - g);
        runs.push_back({g / per_image, g % per_image / t.cols(), j, count, g - first_tile});
        g += count;
    }
    return runs;
}

// A row h of an (H x W) plane split into its columns 2m - offset (even) and 2m + 1 - offset
// (odd), for m in [m0, m0 + length), 0 outside the plane: the columns that tiles m0, m0 + 1, ...
// read at c = 0 and 1 of their patch (c = 2 and 3 are the same one tile later). The columns
// inside the plane go through one loop without bounds, which the compiler vectorises.
void split_row(const float* plane, std::int64_t H, std::int64_t W, std::int64_t h,
               std::int64_t offset, std::int64_t m0, std::int64_t length, float* even, float* odd) {
    if (h < 0 || h >= H) {
        std::fill_n(even, length, 0.0f);
        std::fill_n(odd, length, 0.0f);
        return;
    }
    const float* row = plane + h * W;
    auto column = [&](std::int64_t m) { return 2 * (m0 + m) - offset; };
    auto at = [&](std::int64_t w) { return w >= 0 && w < W ? row[w] : 0.0f; };
    std::int64_t lo = 0, hi = length;  // [lo, hi): both columns inside the plane
    while (lo < length && column(lo) < 0) ++lo;
    while (hi > lo && column(hi - 1) + 1 >= W) --hi;
    for (std::int64_t m = 0; m < lo; ++m) even[m] = at(column(m)), odd[m] = at(column(m) + 1);
    if (lo < hi) {
        const float* first = row + column(lo);
        for (std::int64_t m = lo; m < hi; ++m) {
            even[m] = first[2 * (m - lo)];
            odd[m] = first[2 * (m - lo) + 1];
        }
    }
    for (std::int64_t m = hi; m < length; ++m) even[m] = at(column(m)), odd[m] = at(column(m) + 1);
}

// Row i of a buffer of rows `stride` floats apart, as an array of its first `count` floats: every
// transform below is a few such rows added or subtracted, which Eigen vectorises (a loop over the
// tiles that computed all 16 points at once stayed scalar, and took a large share of the forward
// pass).
struct Rows {
    float* data;
    std::int64_t stride, count;
    Eigen::Map<Array> operator[](std::int64_t i) const {
        return Eigen::Map<Array>(data + i * stride, count);
    }
};

// The scratch of one thread: a block's gathered patches (16 x block, rows 16 floats longer: see
// gather_patches), the transforms' halfway rows (16 x block), V (16 x in x block), M (16 x out x
// block) and one output channel's 2x2 results (4 x block). Rows `block` floats long, whatever
// the block's count.
struct BlockScratch {
    std::int64_t block;
    Scratch patches, halfway, V, M, outputs;
    explicit BlockScratch(const Tiling& t)
        : block(t.block()),
          patches(scratch(points * patch_row())),
          halfway(scratch(points * block)),
          V(scratch(points * t.in * block)),
          M(scratch(points * t.out * block)),
          outputs(scratch(4 * block)) {}

    std::int64_t patch_row() const { return block + 16; }
    // `buffer`'s rows for the block's `count` tiles, from row `first` on, `stride` floats apart.
    Rows rows(const Scratch& buffer, std::int64_t count, std::int64_t first = 0,
              std::int64_t stride = 0) const {
        return Rows{buffer.get() + first, stride ? stride : block, count};
    }
};

// d's row 4r + c = element (r, c) of every tile's 4x4 patch of `plane` (image n's at
// plane + n * image_stride), one segment at a time: row r of a segment's patches is one input
// row, split into even and odd columns straight into rows 4r and 4r + 1 (one tile more than the
// segment, which is why those rows have room past `block`), and rows 4r + 2 and 4r + 3 are the
// same one tile on.
void gather_patches(const Tiling& t, const std::vector<Segment>& runs, const float* plane,
                    std::int64_t image_stride, Rows d) {
    for (const Segment& g : runs) {
        const float* image = plane + g.image * image_stride;
        for (std::int64_t r = 0; r < 4; ++r) {
            float* even = d.data + 4 * r * d.stride + g.first;
            split_row(image, t.H, t.W, 2 * g.i - t.pad_h + r, t.pad_w, g.j, g.count + 1, even,
                      even + d.stride);
            std::copy_n(even + 1, g.count, even + 2 * d.stride);
            std::copy_n(even + d.stride + 1, g.count, even + 3 * d.stride);
        }
    }
}

// v = B^T d B for `count` patches at once (d: row e holds element e, row-major in the 4x4 patch,
// of every patch; v: row `point` likewise): the rows of each patch combined (d0 - d2, d1 + d2,
// d2 - d1, d1 - d3), in `rows`, then the columns of that likewise.
void transform_patches(Rows d, Rows rows, Rows v) {
    for (int c = 0; c < 4; ++c) {
        rows[0 + c] = d[0 + c] - d[8 + c];
        rows[4 + c] = d[4 + c] + d[8 + c];
        rows[8 + c] = d[8 + c] - d[4 + c];
        rows[12 + c] = d[4 + c] - d[12 + c];
    }
    for (int r = 0; r < 16; r += 4) {
        v[r + 0] = rows[r + 0] - rows[r + 2];
        v[r + 1] = rows[r + 1] + rows[r + 2];
        v[r + 2] = rows[r + 2] - rows[r + 1];
        v[r + 3] = rows[r + 1] - rows[r + 3];
    }
}

// y = A^T m A for `count` tiles (m: row `point`; y: row 2a + b for output (a, b) of the 2x2 tile):
// the rows of m combined (m0 + m1 + m2, m1 - m2 - m3), in `rows`, then the columns likewise.
void transform_back(Rows m, Rows rows, Rows y) {
    for (int c = 0; c < 4; ++c) {
        rows[0 + c] = m[0 + c] + m[4 + c] + m[8 + c];
        rows[4 + c] = m[4 + c] - m[8 + c] - m[12 + c];
    }
    for (int r = 0; r < 2; ++r) {
        y[2 * r + 0] = rows[4 * r + 0] + rows[4 * r + 1] + rows[4 * r + 2];
        y[2 * r + 1] = rows[4 * r + 1] - rows[4 * r + 2] - rows[4 * r + 3];
    }
}

// U[point][o][i] = G g G^T for every filter g = filter(o, i) (a function returning a pointer to
// 9 taps, row-major), `outs` x `ins` of them.
template <typename Filter>
std::vector<float> transform_filters(std::int64_t outs, std::int64_t ins, Filter filter) {
    std::vector<float> U(std::size_t(points * outs * ins));
    for (std::int64_t o = 0; o < outs; ++o)
        for (std::int64_t i = 0; i < ins; ++i) {
            const float* g = filter(o, i);
            float rows[12];  // G g: 4 rows of 3
            for (int c = 0; c < 3; ++c) {
                rows[0 + c] = g[c];
                rows[3 + c] = 0.5f * (g[c] + g[3 + c] + g[6 + c]);
                rows[6 + c] = 0.5f * (g[c] - g[3 + c] + g[6 + c]);
                rows[9 + c] = g[6 + c];
            }
            for (int r = 0; r < 4; ++r) {
                const float* e = rows + 3 * r;
                const float u[4] = {e[0], 0.5f * (e[0] + e[1] + e[2]), 0.5f * (e[0] - e[1] + e[2]),
                                    e[2]};
                for (int c = 0; c < 4; ++c)
                    U[std::size_t(((4 * r + c) * outs + o) * ins + i)] = u[c];
            }
        }
    return U;
}

// e's row 2a + b = output (a, b) of the 2x2 tile of every tile of `plane` (a P x Q plane of
// dy, image n's at plane + n * image_stride), 0 past an odd P or Q: per segment, dy's rows 2i and
// 2i + 1 split into even and odd columns.
void gather_gradient_tiles(const Tiling& t, const std::vector<Segment>& runs, const float* plane,
                           std::int64_t image_stride, Rows e) {
    for (const Segment& g : runs)
        for (std::int64_t a = 0; a < 2; ++a)
            split_row(plane + g.image * image_stride, t.P, t.Q, 2 * g.i + a, 0, g.j, g.count,
                      e.data + 2 * a * e.stride + g.first,
                      e.data + (2 * a + 1) * e.stride + g.first);
}

// out's plane row by row from y (row 2a + b: output (a, b) of every tile), plus `add`: per
// segment, rows 2i and 2i + 1 of the plane, each the interleaving of two rows of y, cut at P and Q.
void scatter_tiles(const Tiling& t, const std::vector<Segment>& runs, Rows y, float add,
                   float* plane, std::int64_t image_stride) {
    for (const Segment& g : runs)
        for (std::int64_t a = 0; a < 2 && 2 * g.i + a < t.P; ++a) {
            float* row = plane + g.image * image_stride + (2 * g.i + a) * t.Q + 2 * g.j;
            const float* left = y.data + 2 * a * y.stride + g.first;
            const float* right = left + y.stride;
            const std::int64_t pairs = std::min(g.count, (t.Q - 2 * g.j) / 2);  // both inside
            for (std::int64_t m = 0; m < pairs; ++m) {
                row[2 * m] = left[m] + add;
                row[2 * m + 1] = right[m] + add;
            }
            if (pairs < g.count) row[2 * pairs] = left[pairs] + add;  // an odd Q's last column
        }
}

// E = G2 e G2^T for `count` 2x2 tiles (e: row 2a + b; E: row `point`): the rows of e combined
// (e0, (e0 + e1)/2, (e0 - e1)/2, -e1), in `rows`, then the columns of that likewise.
void transform_gradient_tiles(Rows e, Rows rows, Rows E) {
    for (int c = 0; c < 2; ++c) {
        rows[0 + c] = e[c];
        rows[2 + c] = 0.5f * (e[c] + e[2 + c]);
        rows[4 + c] = 0.5f * (e[c] - e[2 + c]);
        rows[6 + c] = -e[2 + c];
    }
    for (int r = 0; r < 8; r += 2) {
        E[2 * r + 0] = rows[r];
        E[2 * r + 1] = 0.5f * (rows[r] + rows[r + 1]);
        E[2 * r + 2] = 0.5f * (rows[r] - rows[r + 1]);
        E[2 * r + 3] = -rows[r + 1];
    }
}

using Strided = Eigen::Map<RowMajorMatrix, 0, Eigen::OuterStride<>>;
using ConstStrided = Eigen::Map<const RowMajorMatrix, 0, Eigen::OuterStride<>>;

// A block's V: the patches of every input channel of `in` gathered and transformed (B^T d B).
void transform_inputs(const Tiling& t, const std::vector<Segment>& runs, std::int64_t tiles,
                      const float* in, BlockScratch& s) {
    const std::int64_t plane = t.H * t.W;
    for (std::int64_t i = 0; i < t.in; ++i) {
        const Rows d = s.rows(s.patches, tiles, 0, s.patch_row());
        gather_patches(t, runs, in + i * plane, t.in * plane, d);
        transform_patches(d, s.rows(s.halfway, tiles),
                          s.rows(s.V, tiles, i * s.block, t.in * s.block));
    }
}

// The forward pass of a tiling: out[n, o] = sum_i in[n, i] correlated with the filters whose U
// is given, plus bias[o] (none when bias is null). Each thread takes one contiguous run of the
// blocks of tiles; each block is gathered, transformed, multiplied, transformed back and
// scattered.
void correlate(const Tiling& t, const float* in, const std::vector<float>& U, const float* bias,
               float* out) {
    const std::int64_t block = t.block(), blocks = ceil_div(t.tiles(), block);
    const std::int64_t out_plane = t.P * t.Q;
    for_each_batch_with(
        blocks, block * points * (t.in + t.out), [&] { return BlockScratch(t); },
        [&](BlockScratch& s, std::int64_t first_block, std::int64_t count) {
            for (std::int64_t blk = first_block; blk < first_block + count; ++blk) {
                const std::int64_t tiles = std::min(block, t.tiles() - blk * block);
                const std::vector<Segment> runs = segments(t, blk * block, tiles);
                transform_inputs(t, runs, tiles, in, s);
                for (std::int64_t p = 0; p < points; ++p) {
                    const ConstStrided u(U.data() + p * t.out * t.in, t.out, t.in,
                                         Eigen::OuterStride<>(t.in));
                    const ConstStrided v(s.V.get() + p * t.in * block, t.in, tiles,
                                         Eigen::OuterStride<>(block));
                    set_product(Strided(s.M.get() + p * t.out * block, t.out, tiles,
                                        Eigen::OuterStride<>(block)),
                                u, v);
                }
                for (std::int64_t o = 0; o < t.out; ++o) {
                    transform_back(s.rows(s.M, tiles, o * block, t.out * block),
                                   s.rows(s.halfway, tiles), s.rows(s.outputs, tiles));
                    scatter_tiles(t, runs, s.rows(s.outputs, tiles), bias ? bias[o] : 0.0f,
                                  out + o * out_plane, t.out * out_plane);
                }
            }
        });
}

// The filters w (K, C, R, S) as backward_data's correlation takes them: (C, K, R, S), each
// rotated by 180 degrees (dx[c] = sum_k dy[k] correlated with rot180(w[k, c])).
std::vector<float> rotated_filters(const Conv2dShape& s, const float* w) {
    const std::int64_t taps = s.R * s.S;
    std::vector<float> rotated(std::size_t(s.C * s.K * taps));
    for (std::int64_t c = 0; c < s.C; ++c)
        for (std::int64_t k = 0; k < s.K; ++k)
            for (std::int64_t tap = 0; tap < taps; ++tap)
                rotated[std::size_t((c * s.K + k) * taps + tap)] =
                    w[(k * s.C + c) * taps + taps - 1 - tap];
    return rotated;
}

// Unsupported, naming the pass and the shape, unless winograd_applies and OpenBLAS takes the
// products' sizes (eigen.hpp): C and K, with blocks of at most 512 tiles.
void require_applies(const char* pass, const Conv2dShape& s) {
    require_blas_sizes([&] { return std::string(pass) + " " + s.str() + " winograd"; },
                       {{"C", s.C}, {"K", s.K}});
    if (!winograd_applies(s))
        throw Unsupported(std::string(pass) + " " + s.str() +
                          ": cpu_eigen_omp's winograd algorithm is F(2x2, 3x3) for 3x3 filters "
                          "and F(4, 5) along columns for 5x5 ones, at stride 1; this shape has a " +
                          std::to_string(s.R) + "x" + std::to_string(s.S) + " filter at stride " +
                          std::to_string(s.stride_h) + "," + std::to_string(s.stride_w));
}

// --- 5x5 filters: F(4, 5) along columns ----------------------------------------------------
//
// F(2x2, 5x5) would compute a 2x2 tile from a 6x6 patch with 36 multiplications instead of 100,
// but its transforms cost more than they save on LeNet's second layer: 6 channels in and 16
// out make GEMMs of depth 6 per point, and each tile's patches and transforms cost as much as
// its products. Built as above (tiles in blocks, 36 sgemms), its forward took well over twice the
// direct algorithm's time on a Zen 4 (one run of 3 repetitions). So the 5x5 filters take
// Winograd along one axis only, and the direct kernels along the other. Output rows come in
// tiles of four (4i .. 4i + 3); for every filter column s, a tile's four rows are F(4, 5) along
// the column (common/winograd.hpp has its matrices, A^T 4 x 8, G 8 x 5, B^T 8 x 8):
//   y[k, 4i + a, q] = sum over c, s of (A^T [(G w[k, c, :, s]) . (B^T x[c, 4i .., q + s])])_a
// (x's 8 rows 4i .. 4i + 7)
// so with, for every point b of the 8,
//   T_b[c, i, col] = sum_e B^T[b, e] x[c, 4i + e, col]       (input rows combined: whole rows)
//   U_b[k, c, s]   = sum_r G[b, r] w[k, c, r, s]              (once per call, in double)
//   M_b[k, i, q]   = sum over c, s of U_b[k, c, s] T_b[c, i, q + s]
//   y[k, 4i + a, q] = b[k] + sum_b A^T[a, b] M_b[k, i, q]     (whole rows again)
// M_b is a correlation of T_b with 1x5 filters, which the direct kernels compute
// (DirectCorrelation, conv_direct.hpp): 8 of them, each 1/20 of the direct algorithm's
// multiply-adds, 2/5 of them in all (LeNet's P = 10 rows take 3 tiles, 12 rows: 12/25). The
// transforms add whole rows of the image, with no gathering of tiles (x's rows as in the padded
// input). On a Zen 4, LeNet's conv2 forward ran measurably faster this way than with F(2, 5),
// which needs 6 products per 2 rows, 3 a row where this needs 2, and than the direct algorithm
// (3 alternating runs of 5 repetitions each; lesson 10's Winograd table has the rows).
//   backward_data    the forward pass on dy padded by 4 - pad, filters rotated, k and c swapped.
//   backward_weights dw's rows by F(5, 4) along columns, the forward pass's transpose:
//                    dw[k, c, r, s] = sum_b G[b, r] S_b[k, c, s] with
//                    S_b[k, c, s] = sum over n, i, q of E_b[k, i, q] T_b[c, i, q + s] and
//                    E_b[k, i, q] = sum_a A^T[a, b] dy[k, 4i + a, q]: S_b is the weight gradient
//                    of the 1x5 correlation above, conv2d_backward_weights_direct's work.

// F(4, 5): output rows per tile, and points.
constexpr const WinogradMatrices& columns_f = winograd_f4_5;
constexpr int tile_rows = WinogradMatrices::m, column_points = WinogradMatrices::alpha;

// One pass as the column tiles see it: `in` channels of H x W into `out` channels of P x Q, 5x5
// filters at stride 1, the input padded by (pad_h, pad_w), which may be negative (backward_data
// with pad > 4).
struct Columns {
    std::int64_t images, in, H, W, out, P, Q, pad_h, pad_w;

    std::int64_t tiles() const { return ceil_div(P, std::int64_t{tile_rows}); }  // per column
    std::int64_t cols() const { return Q + 4; }  // a padded input row, and a row of T_b
    std::int64_t padded_rows() const { return tile_rows * tiles() + 4; }
    std::int64_t t_size() const { return in * tiles() * cols(); }  // T_b of one image
    std::int64_t m_size() const { return out * tiles() * Q; }      // M_b of one image
    // Whether the input's rows are the padded image's, as they are: no padding along the rows,
    // and every column read (LeNet's conv2 forward). The rows above and below are zeros.
    bool in_place() const { return pad_w == 0 && W == cols(); }
};

// U_b for every point b, from the filters filter(o, i) (5x5 taps, row-major; `outs` x `ins` of
// them): G times each filter, in double (Eigen's fixed-size product), rounded once, written
// straight into the layout the direct kernels read, U_b's (ins, 1, 5, lanes) at U + b * size.
// This runs on one thread while the others wait: as three scalar loops, then copied into that
// layout point by point, it made LeNet conv2's forward measurably slower than this way does (3
// alternating runs on a Zen 4).
template <typename Filter>
Scratch column_filters(std::int64_t outs, std::int64_t ins, std::int64_t lanes, Filter filter) {
    using Taps = Eigen::Matrix<float, 5, 5, Eigen::RowMajor>;
    const Eigen::Map<const Eigen::Matrix<double, column_points, 5, Eigen::RowMajor>> G(
        &columns_f.G[0][0]);
    const std::int64_t size = ins * 5 * lanes;
    Scratch U = scratch(column_points * size);
    Eigen::Map<Array>(U.get(), column_points * size).setZero();
    for (std::int64_t o = 0; o < outs; ++o)
        for (std::int64_t i = 0; i < ins; ++i) {
            const Eigen::Matrix<double, column_points, 5> u =
                G * Eigen::Map<const Taps>(filter(o, i)).cast<double>();
            for (int b = 0; b < column_points; ++b)
                for (int s = 0; s < 5; ++s)
                    U[std::size_t(b * size + (i * 5 + s) * lanes + o)] = float(u(b, s));
        }
    return U;
}

// The rows here are short (LeNet's conv2: 14 floats in, 10 out), shorter than AVX-512's 16
// lanes, and a loop over the floats of a row, or an Eigen array of one, ran a float at a time
// (its transforms then took a large share of that layer's forward pass). So the transforms below go
// through a row a Lane at a time, the last one loaded and stored under a mask: one vector
// register with AVX or AVX-512 (GCC's vector arithmetic on Eigen's packet type), one float
// without.
#if defined(__AVX__)
// Packet's alignment attribute is dropped where it is a template argument (as in conv_direct.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
using Lane = Eigen::internal::packet_traits<float>::type;
using LaneMask = Eigen::internal::unpacket_traits<Lane>::mask_t;
constexpr std::int64_t lane_floats = Eigen::internal::unpacket_traits<Lane>::size;
#pragma GCC diagnostic pop

// The first n floats at p (all of a Lane when n >= lane_floats).
Lane load(const float* p, std::int64_t n) {
    if (n >= lane_floats) return Eigen::internal::ploadu<Lane>(p);
    return Eigen::internal::ploadu<Lane>(p, static_cast<LaneMask>((std::uint32_t{1} << n) - 1));
}
// Stores the first n floats of v at p; all of v when n >= lane_floats, or when `past` says that
// the floats after the n are the caller's to overwrite (rows written in order, with slack after
// the last): a masked store costs several plain ones on a Zen 4, and they were a quarter of the
// input transform's time.
void store(float* p, const Lane& v, std::int64_t n, bool past = false) {
    if (n >= lane_floats || past) return Eigen::internal::pstoreu(p, v);
    Eigen::internal::pstoreu(p, v, static_cast<LaneMask>((std::uint32_t{1} << n) - 1));
}
#else
using Lane = float;
constexpr std::int64_t lane_floats = 1;
Lane load(const float* p, std::int64_t) { return *p; }
void store(float* p, const Lane& v, std::int64_t, bool = false) { *p = v; }
#endif

// out[i] = sum_j M[i][j] in[j] for i < Rows, j < Cols, M a constant matrix (columns_f's, or
// column_A): with the loops unrolled, each coefficient is a constant, the zeros drop out and the
// ones are no multiplication.
template <int Rows, int Cols, typename Matrix>
void multiply(const Matrix& M, const Lane (&in)[Cols], Lane (&out)[Rows]) {
#pragma GCC unroll 8
    for (int i = 0; i < Rows; ++i) {
        bool first = true;
#pragma GCC unroll 8
        for (int j = 0; j < Cols; ++j) {
            const float c = float(M[i][j]);
            if (c == 0) continue;
            const Lane term = c == 1 ? in[j] : c == -1 ? -in[j] : c * in[j];
            out[i] = first ? term : out[i] + term;
            first = false;
        }
        if (first) out[i] = Lane{};
    }
}

// A = (A^T)^T, for backward_weights, a constant as A^T is (multiply's loops fold it).
struct TransposedAT {
    double m[column_points][tile_rows];
};
constexpr TransposedAT transposed_AT() {
    TransposedAT A{};
    for (int b = 0; b < column_points; ++b)
        for (int a = 0; a < tile_rows; ++a) A.m[b][a] = columns_f.AT[a][b];
    return A;
}
constexpr TransposedAT column_A = transposed_AT();

// T_b for one image (in, H, W), point b's planes (in, tiles, cols) at T + b * point_stride: for
// every channel and tile i of m rows, B^T's row b over the padded image's rows m i .. m i + 7.
// Where the rows need no padding (Columns::in_place) they are the image's own, or `zeros` above
// and below it; else the image is padded into `padded` (in, padded_rows, cols) first. `slack`:
// every plane has lane_floats floats after it that may be overwritten.
void transform_rows(const Columns& t, const float* image, float* padded, const float* zeros,
                    float* T, std::int64_t point_stride, bool slack) {
    const std::int64_t cols = t.cols(), tiles = t.tiles();
    std::int64_t H = t.H, top = t.pad_h;  // of the image the rows come from
    if (!t.in_place()) {
        H = t.padded_rows();
        top = 0;
        place_padded(image, t.in, t.H, t.W, Placement{t.pad_h, t.pad_w, 1, 1}, padded, H, cols);
        image = padded;
    }
    for (std::int64_t c = 0; c < t.in; ++c)
        for (std::int64_t i = 0; i < tiles; ++i) {
            const float* rows[column_points];  // padded rows m i .. m i + alpha - 1
            for (int e = 0; e < column_points; ++e) {
                const std::int64_t h = tile_rows * i + e - top;
                rows[e] = h >= 0 && h < H ? image + (c * H + h) * cols : zeros;
            }
            float* out = T + (c * tiles + i) * cols;
            for (std::int64_t col = 0; col < cols; col += lane_floats) {
                const std::int64_t n = cols - col;
                Lane d[column_points], v[column_points];
                for (int e = 0; e < column_points; ++e) d[e] = load(rows[e] + col, n);
                multiply(columns_f.BT, d, v);
                for (int b = 0; b < column_points; ++b)
                    store(out + b * point_stride + col, v[b], n, slack);
            }
        }
}

// One image's output (out, P, Q) from its M_b (point b's (out, tiles, Q) at M + b * m_size()):
// rows m i .. m i + m - 1 of channel o are bias[o] (0 if bias is null) plus A^T times M_b's rows
// i of channel o. First Y_a = sum_b A^T[a, b] M_b for a < m, over all of M_b's rows at once into
// `Y` (m planes of m_size() + lane_floats floats), then Y_a's rows, plus the bias, to their
// places. Row by row instead, with LeNet conv2's rows of 10 floats in 16 lanes, the masks and
// loop control of 48 short rows per image weighed more: its forward ran slower (3 alternating runs
// on a Zen 4).
void transform_rows_back(const Columns& t, const float* M, const float* bias, float* Y, float* y) {
    const std::int64_t tiles = t.tiles(), P = t.P, Q = t.Q, m_size = t.m_size();
    const std::int64_t plane = m_size + lane_floats;  // Y_a's, with slack
    for (std::int64_t z = 0; z < m_size; z += lane_floats) {
        const std::int64_t n = m_size - z;
        Lane in[column_points], out[tile_rows];
        for (int b = 0; b < column_points; ++b) in[b] = load(M + b * m_size + z, n);
        multiply(columns_f.AT, in, out);
        for (int a = 0; a < tile_rows; ++a) store(Y + a * plane + z, out[a], n, true);
    }
    const std::int64_t image = t.out * P * Q;  // the floats of y
    for (std::int64_t o = 0; o < t.out; ++o) {
        const float add = bias ? bias[o] : 0.0f;
        for (std::int64_t p = 0; p < P; ++p) {
            const float* from = Y + p % tile_rows * plane + (o * tiles + p / tile_rows) * Q;
            const std::int64_t row = (o * P + p) * Q;
            // Rows in order: the floats past a row are later rows', written after it, as long as
            // a whole Lane ends inside y. Past y's end lie the next image's rows, another
            // thread's, or the end of the buffer: there the store is masked. Masking the last row
            // alone is not enough: where Q < lane_floats / 2, the rows before it end past y too.
            for (std::int64_t q = 0; q < Q; q += lane_floats)
                store(y + row + q, add + load(from + q, Q - q), Q - q,
                      row + q + lane_floats <= image);
        }
    }
}

// out (images, out, P, Q) = bias + the correlation of in (images, in, H, W) with the filters
// filter(o, i) (5x5, o < out, i < in), image by image: T_b, the correlations M_b, then the output
// rows from A^T over M_b's rows. bias may be null (none).
template <typename Filter>
void correlate_columns(const Columns& t, const float* in, Filter filter, const float* bias,
                       float* out) {
    const std::int64_t m_size = t.m_size();
    const DirectCorrelation correlation(t.in, t.out, 1, 5, t.tiles(), t.cols());
    const std::int64_t u_size = t.in * 5 * correlation.filter_lanes();
    const Scratch U = column_filters(t.out, t.in, correlation.filter_lanes(), filter);
    const std::int64_t image_in = t.in * t.H * t.W, image_out = t.out * t.P * t.Q;
    const std::vector<float> zeros(std::size_t(t.cols()), 0.0f);
    struct Buffers {
        Scratch padded, T, M, Y, work;
    };
    for_each_batch_with(
        t.images, image_out * t.in * 15,
        [&] {
            return Buffers{scratch(t.in_place() ? 0 : t.in * t.padded_rows() * t.cols()),
                           scratch(column_points * (t.t_size() + lane_floats)),
                           scratch(column_points * m_size),
                           scratch(tile_rows * (m_size + lane_floats)),
                           scratch(correlation.scratch_floats())};
        },
        [&](Buffers& s, std::int64_t begin, std::int64_t count) {
            for (std::int64_t n = begin; n < begin + count; ++n) {
                const std::int64_t plane = t.t_size() + lane_floats;  // T_b's, with slack
                transform_rows(t, in + n * image_in, s.padded.get(), zeros.data(), s.T.get(), plane,
                               true);
                for (int b = 0; b < column_points; ++b)
                    correlation.correlate(s.T.get() + b * plane, U.get() + b * u_size,
                                          s.M.get() + b * m_size, s.work.get());
                transform_rows_back(t, s.M.get(), bias, s.Y.get(), out + n * image_out);
            }
        });
}

void forward_5x5(const Conv2dShape& s, const float* x, const float* w, const float* b, float* y) {
    correlate_columns(
        {s.N, s.C, s.H, s.W, s.K, s.P(), s.Q(), s.pad_h, s.pad_w}, x,
        [&](std::int64_t k, std::int64_t c) { return w + (k * s.C + c) * 25; }, b, y);
}

void backward_data_5x5(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
    const std::vector<float> rotated = rotated_filters(s, w);
    correlate_columns(
        {s.N, s.K, s.P(), s.Q(), s.C, s.H, s.W, 4 - s.pad_h, 4 - s.pad_w}, dy,
        [&](std::int64_t c, std::int64_t k) { return rotated.data() + (c * s.K + k) * 25; },
        nullptr, dx);
}

// dw by F(5, m) along columns: T_b and E_b for every image, then for every point the weight
// gradient of the 1x5 correlation of T_b (images, C, tiles, cols) into E_b (images, K, tiles,
// Q), by conv2d_backward_weights_direct (its chunks of images make the sum's bits independent
// of the thread count), then dw[k, c, r, :] = sum_b G[b, r] S_b[k, c, :] in double.
void backward_weights_5x5(const Conv2dShape& s, const float* x, const float* dy, float* dw) {
    const WinogradMatrices& f = columns_f;
    const Columns t{s.N, s.C, s.H, s.W, s.K, s.P(), s.Q(), s.pad_h, s.pad_w};
    const std::int64_t tiles = t.tiles(), P = t.P, Q = t.Q, cols = t.cols();
    const std::int64_t t_image = s.C * tiles * cols, e_image = s.K * tiles * Q;
    const auto T = scratch(column_points * s.N * t_image);  // [b][n][c][i][col]
    const auto E = scratch(column_points * s.N * e_image);  // [b][n][k][i][q]
    const std::vector<float> zeros(std::size_t(cols), 0.0f);
    for_each_batch_with(
        s.N, t.t_size() * column_points * 5,
        [&] { return scratch(t.in_place() ? 0 : s.C * t.padded_rows() * cols); },
        [&](Scratch& padded, std::int64_t begin, std::int64_t count) {
            for (std::int64_t n = begin; n < begin + count; ++n) {
                transform_rows(t, x + n * s.C * s.H * s.W, padded.get(), zeros.data(),
                               T.get() + n * t_image, s.N * t_image, false);
                // E_b's rows i: A's row b over dy's rows m i .. m i + m - 1 (0 past P)
                for (std::int64_t k = 0; k < s.K; ++k)
                    for (std::int64_t i = 0; i < tiles; ++i) {
                        const float* first = dy + ((n * s.K + k) * P + tile_rows * i) * Q;
                        const std::int64_t rows_here =
                            std::min<std::int64_t>(tile_rows, P - tile_rows * i);
                        float* e = E.get() + n * e_image + (k * tiles + i) * Q;
                        for (std::int64_t q = 0; q < Q; q += lane_floats) {
                            const std::int64_t left = Q - q;
                            Lane g[tile_rows], out[column_points];
                            for (int a = 0; a < tile_rows; ++a)
                                g[a] = a < rows_here ? load(first + a * Q + q, left) : Lane{};
                            multiply(column_A.m, g, out);
                            for (int b = 0; b < column_points; ++b)
                                store(e + b * s.N * e_image + q, out[b], left);
                        }
                    }
            }
        });
    const Conv2dShape rows{.N = s.N, .C = s.C, .H = tiles, .W = cols, .K = s.K, .R = 1, .S = 5};
    std::vector<float> S(std::size_t(column_points * s.K * s.C * 5));
    for (int b = 0; b < column_points; ++b)
        conv2d_backward_weights_direct(rows, T.get() + b * s.N * t_image,
                                       E.get() + b * s.N * e_image, S.data() + b * s.K * s.C * 5);
    for (std::int64_t filter = 0; filter < s.K * s.C; ++filter)
        for (int r = 0; r < 5; ++r)
            for (int col = 0; col < 5; ++col) {
                double tap = 0;
                for (int b = 0; b < column_points; ++b)
                    tap += f.G[b][r] * double(S[std::size_t((b * s.K * s.C + filter) * 5 + col)]);
                dw[(filter * 5 + r) * 5 + col] = float(tap);
            }
}

}  // namespace

void conv2d_forward_winograd(const Conv2dShape& s, const float* x, const float* w, const float* b,
                             float* y) {
    require_applies("conv2d_forward", s);
    if (s.R == 5) return forward_5x5(s, x, w, b, y);
    const std::vector<float> U = transform_filters(
        s.K, s.C, [&](std::int64_t k, std::int64_t c) { return w + (k * s.C + c) * 9; });
    correlate(forward_tiling(s), x, U, b, y);
}

// The forward pass on dy, padded by 2 - pad, with filters rot180(w[k, c]) taking K channels to C.
void conv2d_backward_data_winograd(const Conv2dShape& s, const float* dy, const float* w,
                                   float* dx) {
    require_applies("conv2d_backward_data", s);
    if (s.R == 5) return backward_data_5x5(s, dy, w, dx);
    const std::vector<float> rotated = rotated_filters(s, w);
    const std::vector<float> U = transform_filters(s.C, s.K, [&](std::int64_t c, std::int64_t k) {
        return rotated.data() + (c * s.K + k) * 9;
    });
    const Tiling t{s.N, s.K, s.P(), s.Q(), s.C, s.H, s.W, 2 - s.pad_h, 2 - s.pad_w};
    correlate(t, dy, U, nullptr, dx);
}

// backward_weights' scratch: the forward pass's (V; M holds E), and dy's 2x2 tiles twice: as
// gathered for `group` output channels at a time (rows 4k + 2a + b, k in the group, `block`
// floats each), and for every channel with the channel last, e[2a + b][tile][k] (4 rows of
// block x K floats).
struct WeightsScratch {
    static constexpr std::int64_t group = 16;
    BlockScratch block;
    Scratch gathered, tiles_by_channel;
    explicit WeightsScratch(const Tiling& t)
        : block(t),
          gathered(scratch(4 * group * block.block)),
          tiles_by_channel(scratch(4 * block.block * t.out)) {}
};

// dw by F(3x3, 2x2): per block of tiles, x's patches through B^T . B (V, as the forward pass) and
// dy's 2x2 tiles through G2 . G2^T (E), then for every point the block's share of the sum over
// tiles, E[point]^T (K x tiles) * V[point]^T (tiles x C), added into its chunk's partial sums.
//
// E[point] is stored tiles x K, the other way round from V[point] (C x tiles). Stored K x tiles,
// both operands would have the summed dimension, tiles, contiguous: a row-major A * B^T, which
// OpenBLAS runs as its column-major "TN" case, at ResNet's 64 x 64 x 128 through its general
// path that first copies both operands into packed panels (perf on an Intel Xeon: sgemm_tn,
// sgemm_incopy, sgemm_oncopy). As E^T * V^T it is "TT", which OpenBLAS's kernel for small
// matrices computes straight from the operands (sgemm_small_kernel_tt), and ResNet's
// forward+backward ran faster there (conv2d_forward_backward_winograd/cpu_eigen_omp/resnet_3x3,
// the old and new code alternating).
// The price is a transpose: the tiles are gathered 16 channels at a time, as the forward pass
// gathers its patches, and that group's rows are copied into columns k.. of tiles_by_channel.
// G2 . G2^T adds and halves whole rows, so it runs on rows of tiles x K floats as well as on rows
// of tiles.
//
// Chunks are fixed by the shape, each summed by whichever thread takes it and added in chunk order
// at the end, so dw's bits do not depend on the thread count: 16 chunks, enough for 16 threads,
// unless their partial sums (16 K C floats each) would pass 64 MiB (then fewer, but at least 2).
// Then dw = A2^T (the sum) A2 for every filter.
void conv2d_backward_weights_winograd(const Conv2dShape& s, const float* x, const float* dy,
                                      float* dw) {
    require_applies("conv2d_backward_weights", s);
    if (s.R == 5) return backward_weights_5x5(s, x, dy, dw);
    constexpr std::int64_t partial_budget = 1 << 24;  // floats
    const Tiling t = forward_tiling(s);
    const std::int64_t sums = points * s.K * s.C, out_plane = s.P() * s.Q();
    const std::int64_t block = t.block(), blocks = ceil_div(t.tiles(), block);
    const std::int64_t most_chunks = std::clamp<std::int64_t>(partial_budget / sums, 2, 16);
    const std::int64_t per_chunk = ceil_div(blocks, most_chunks),
                       chunks = ceil_div(blocks, per_chunk);
    std::vector<float> partials(std::size_t(chunks * sums));
    for_each_batch_with(
        chunks, per_chunk * block * points * (s.C + s.K), [&] { return WeightsScratch(t); },
        [&](WeightsScratch& ws, std::int64_t first_chunk, std::int64_t count) {
            BlockScratch& scr = ws.block;
            const std::int64_t point_stride = block * s.K;  // E's rows: tiles x K each
            for (std::int64_t chunk = first_chunk; chunk < first_chunk + count; ++chunk) {
                float* partial = partials.data() + chunk * sums;
                std::fill_n(partial, sums, 0.0f);
                const std::int64_t end = std::min(blocks, (chunk + 1) * per_chunk);
                for (std::int64_t blk = chunk * per_chunk; blk < end; ++blk) {
                    const std::int64_t tiles = std::min(block, t.tiles() - blk * block);
                    const std::vector<Segment> runs = segments(t, blk * block, tiles);
                    transform_inputs(t, runs, tiles, x, scr);
                    for (std::int64_t k0 = 0; k0 < s.K; k0 += ws.group) {
                        const std::int64_t group = std::min(ws.group, s.K - k0);
                        for (std::int64_t k = 0; k < group; ++k)
                            gather_gradient_tiles(
                                t, runs, dy + (k0 + k) * out_plane, s.K * out_plane,
                                Rows{ws.gathered.get() + 4 * k * block, block, tiles});
                        for (std::int64_t ab = 0; ab < 4; ++ab)  // row ab's columns k0 ..
                            Strided(ws.tiles_by_channel.get() + ab * point_stride + k0, tiles,
                                    group, Eigen::OuterStride<>(s.K)) =
                                ConstStrided(ws.gathered.get() + ab * block, group, tiles,
                                             Eigen::OuterStride<>(4 * block))
                                    .transpose();
                    }
                    // E = G2 e G2^T, `block` floats of each row at a time (the halfway rows'
                    // length).
                    for (std::int64_t at = 0; at < tiles * s.K; at += block) {
                        const std::int64_t length = std::min(block, tiles * s.K - at);
                        transform_gradient_tiles(
                            Rows{ws.tiles_by_channel.get() + at, point_stride, length},
                            scr.rows(scr.halfway, length),
                            Rows{scr.M.get() + at, point_stride, length});
                    }
                    for (std::int64_t p = 0; p < points; ++p) {
                        const ConstStrided e(scr.M.get() + p * point_stride, tiles, s.K,
                                             Eigen::OuterStride<>(s.K));
                        const ConstStrided v(scr.V.get() + p * s.C * block, s.C, tiles,
                                             Eigen::OuterStride<>(block));
                        Strided sum(partial + p * s.K * s.C, s.K, s.C, Eigen::OuterStride<>(s.C));
                        sum.noalias() += e.transpose() * v.transpose();
                    }
                }
            }
        });
    add_in_chunk_order(partials.data(), chunks, sums, partials.data());
    for (std::int64_t f = 0; f < s.K * s.C; ++f) {  // f = k C + c
        float m[16], rows[12];
        for (std::int64_t p = 0; p < points; ++p) m[p] = partials[std::size_t(p * s.K * s.C + f)];
        for (int c = 0; c < 4; ++c) {  // A2^T m: rows m0 + m1 + m2, m1 - m2, m1 + m2 + m3
            rows[0 + c] = m[c] + m[4 + c] + m[8 + c];
            rows[4 + c] = m[4 + c] - m[8 + c];
            rows[8 + c] = m[4 + c] + m[8 + c] + m[12 + c];
        }
        for (int r = 0; r < 3; ++r) {  // then its columns likewise
            const float* e = rows + 4 * r;
            dw[f * 9 + 3 * r + 0] = e[0] + e[1] + e[2];
            dw[f * 9 + 3 * r + 1] = e[1] - e[2];
            dw[f * 9 + 3 * r + 2] = e[1] + e[2] + e[3];
        }
    }
}

}  // namespace triptych::cpu_eigen_omp
