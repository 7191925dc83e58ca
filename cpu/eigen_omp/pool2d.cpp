// cpu_eigen_omp pooling: max (with argmax) and average over a window slid across every (n, c)
// plane of x (N, C, H, W) -> y (N, C, P, Q); see cpu/naive/pool2d.hpp for the exact semantics
// (ties to the first element in row-major window order, padding never a candidate, a window's
// first NaN wins: common/pooling.hpp, which also has the window geometry).
//
// OpenMP threads take contiguous slices of the N * C planes (for_each_slice): planes are
// independent, each thread writes only its own planes of y (or dx), and a plane (3 KB for 28 x 28,
// 49 KB for 112 x 112) stays in L1 or L2 while its windows are read.
//
// Within a plane the loops run over a whole output row at once, not one window at a time. For each
// element (h, j) of the window ("tap"), one loop over q updates every output of the row:
//     y[q] = max(y[q], x[h, q * stride_w + j - pad_w])   (or +=, for the average)
// That loop has no branch and no call, so the compiler vectorises it (the loads are strided by
// stride_w; y and argmax are contiguous and stay in L1 between taps). It is only valid for the
// "interior" columns, whose windows lie wholly inside the image; the few columns at the left and
// right edges, whose windows hang over the padding, are computed one window at a time with the
// reference's loops. Windows are clipped vertically per row, so rows need no such split. A stride
// of 1 or 2 is a compile-time constant (with_stride). Max pooling at strides 1 and 2 leaves these
// loops for two passes over each block of output rows, the second flat over the whole block
// (max_pool_columns_plane), so that no row ends in a scalar remainder. Max pooling over 2x2
// windows at stride 2 without padding, LeNet's, has loops of its own: max_pool_2x2 takes the
// winners of a group of planes in two passes, down each column pair and then across, each one
// flat vectorised loop, which leaves no lane idle on LeNet's short rows. Average pooling over
// those windows (avg_pool_2x2_group, its version 3) sums in the same two passes.
//
// Backward: max scatters dy to its argmax (dx += at an index, one output at a time); over 2x2
// windows at stride 2, where no input is in two windows, it gathers instead (version 3: each
// input's gradient is its window's dy if it won, else 0, every row of dx written once). Average
// spreads each output row's shares dy / count over one row of W columns, then writes every row
// of dx once, as the sum of the spread rows whose windows cover it (version 3; version 2 adds each
// spread row to the rows of dx it covers, after zeroing dx); over 2x2 windows at stride 2 each
// share is written to its four inputs in two flat passes (version 4).
//
// Eigen has no part here: a window's strided rows have no Eigen expression that beats these loops.
// How fast these loops are, against cpu_naive and PyTorch: lessons/11_pooling, "Benchmarks on the
// CPU" (with the machine, the date and the command).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "common/pooling.hpp"
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

// The output columns q in [begin, end) whose windows need no clipping:
// q * stride_w - pad_w >= 0 and q * stride_w - pad_w + window_w <= W.
struct InteriorColumns {
    std::int64_t begin, end;
};

InteriorColumns interior_columns(const Pool2dShape& s) {
    const std::int64_t Q = s.Q();
    const std::int64_t begin = std::min(ceil_div(s.pad_w, s.stride_w), Q);
    const std::int64_t room = s.W + s.pad_w - s.window_w;  // the last window may start here
    if (room < 0) return {begin, begin};
    return {begin, std::clamp(room / s.stride_w + 1, begin, Q)};
}

// Calls edge(q) for the output columns outside the interior ones, [0, Q) minus [begin, end).
template <typename Edge>
void for_each_edge_column(InteriorColumns inner, std::int64_t Q, Edge edge) {
    for (std::int64_t q = 0; q < inner.begin; ++q) edge(q);
    for (std::int64_t q = inner.end; q < Q; ++q) edge(q);
}

// Calls tap(t, offset) for the taps of rows [h0, h1) of a window, t = 0, 1, ... in row-major
// order, where x[offset + q * stride_w] is the tap's element in the window of output column q.
template <typename Tap>
void for_each_tap(const Pool2dShape& s, std::int64_t h0, std::int64_t h1, Tap tap) {
    for (std::int64_t h = h0, t = 0; h < h1; ++h)
        for (std::int64_t j = 0; j < s.window_w; ++j, ++t) tap(t, h * s.W + j - s.pad_w);
}

// Runs plane(in, out) over the N * C planes, each thread a contiguous slice of them: `in` is
// where the plane starts in x (or dx), `out` where it starts in y (or dy, argmax).
template <typename Plane>
void for_each_plane(const Pool2dShape& s, Plane plane) {
    const std::int64_t in_size = s.H * s.W, out_size = s.P() * s.Q();
    for_each_slice(s.N * s.C, in_size, [&](std::int64_t begin, std::int64_t count) {
        for (std::int64_t i = begin; i < begin + count; ++i) plane(i * in_size, i * out_size);
    });
}

// Calls body(stride) with s.stride_w, as a compile-time constant when it is 1 or 2 (the common
// strides): the interior loops then load a row's taps with whole-vector loads and shuffles; a
// stride known only at run time compiles to one scalar load and insert per element. Rows as short
// as LeNet's (14 outputs) gain little: the loop overhead around them dominates
// (max_pool_2x2 below). lessons/11_pooling measures the pooling rows.
template <typename Body>
void with_stride(const Pool2dShape& s, Body body) {
    if (s.stride_w == 1)
        body(std::integral_constant<std::int64_t, 1>{});
    else if (s.stride_w == 2)
        body(std::integral_constant<std::int64_t, 2>{});
    else
        body(s.stride_w);
}

// The index in the plane `in` of the winner of output (p, q)'s window, as the reference finds it:
// one window at a time, for the edge columns.
std::int64_t window_argmax(const Pool2dShape& s, const float* in, std::int64_t p, std::int64_t q) {
    const PoolWindow win = pool_window(s, p, q);
    std::int64_t best = win.h0 * s.W + win.w0;
    for (std::int64_t h = win.h0; h < win.h1; ++h)
        for (std::int64_t w = win.w0; w < win.w1; ++w)
            if (replaces_max(in[h * s.W + w], in[best])) best = h * s.W + w;
    return best;
}

// One plane: in (H, W) -> y, argmax (P, Q); stride is s.stride_w (with_stride).
template <typename Stride>
void max_pool_plane(const Pool2dShape& s, InteriorColumns inner, Stride stride, const float* in,
                    float* y, float* argmax) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t p = 0; p < P; ++p) {
        float* y_row = y + p * Q;
        float* argmax_row = argmax + p * Q;
        // The edges: one window at a time, as the reference.
        for_each_edge_column(inner, Q, [&](std::int64_t q) {
            const std::int64_t best = window_argmax(s, in, p, q);
            y_row[q] = in[best];
            argmax_row[q] = float(best);
        });
        // The interior, a tap at a time: tap 0 starts each window's best, later taps replace it
        // only when strictly larger (so ties keep the first) or when they are the first NaN
        // (replaces_max). Meanwhile argmax_row holds the winning tap's offset, the same for every
        // q, and q * stride_w is added at the end (exact: both are integers below 2^24). GCC
        // vectorises a select between two floats, but not one with an integer-to-float
        // conversion on a side (the conversion may raise a floating-point flag, so it will not
        // run it unconditionally).
        const PoolWindow rows = pool_window(s, p, 0);
        for_each_tap(s, rows.h0, rows.h1, [&](std::int64_t t, std::int64_t offset) {
            const float tap_offset = float(offset);
            if (t == 0) {
                for (std::int64_t q = inner.begin; q < inner.end; ++q) {
                    y_row[q] = in[offset + q * stride];
                    argmax_row[q] = tap_offset;
                }
                return;
            }
            for (std::int64_t q = inner.begin; q < inner.end; ++q) {
                const float v = in[offset + q * stride];
                const bool replaces = replaces_max(v, y_row[q]);
                y_row[q] = replaces ? v : y_row[q];
                argmax_row[q] = replaces ? tap_offset : argmax_row[q];
            }
        });
        for (std::int64_t q = inner.begin; q < inner.end; ++q) argmax_row[q] += float(q * stride);
    }
}

// Whether s is 2x2 windows at stride 2 without padding: LeNet's and VGG's pooling, the most
// common shape, which the kernels below have loops of their own for (max_pool_2x2 and the 2x2
// versions of the other three ops).
bool two_by_two(const Pool2dShape& s) {
    return s.window_h == 2 && s.window_w == 2 && s.stride_h == 2 && s.stride_w == 2 &&
           s.pad_h == 0 && s.pad_w == 0;
}

// The kernels for two_by_two windows work on groups of 16 planes, each in two flat passes: the
// first pass's rows for 16 of LeNet's conv1 planes, 50 KB, stay in L2 for the second.
constexpr std::int64_t planes_per_group = 16;

// Runs group(first, planes, scratch) over the N * C planes in groups of planes_per_group (fewer
// at the end of a slice), each OpenMP thread over its own slice of planes (for_each_slice) with
// `scratch_floats` floats of scratch of its own, for the group's intermediate rows.
template <typename Group>
void for_each_group(const Pool2dShape& s, std::int64_t scratch_floats, Group group) {
    for_each_slice(s.N * s.C, s.H * s.W, [&](std::int64_t begin, std::int64_t count) {
        const auto space = scratch(scratch_floats);
        for (std::int64_t first = begin; first < begin + count; first += planes_per_group)
            group(first, std::min(planes_per_group, begin + count - first), space.get());
    });
}

// The rows of dx of a group of two_by_two planes, each written once: row h of a plane is
// rows(plane, h / 2, h % 2), a row of 2Q floats (the backward's gradients under output row h / 2,
// h % 2 = 1 for the lower row of its windows), then zeros in the column no window covers when W
// is odd; a last row no window covers, when H is odd, is zeros.
template <typename Rows>
void write_window_rows(const Pool2dShape& s, std::int64_t planes, float* dx, Rows rows) {
    const std::int64_t P = s.P(), H = s.H, W = s.W, columns = 2 * s.Q();
    for (std::int64_t plane = 0; plane < planes; ++plane)
        for (std::int64_t h = 0; h < H; ++h) {
            float* row = dx + (plane * H + h) * W;
            if (h >= 2 * P) {
                std::fill(row, row + W, 0.0f);
                continue;
            }
            const float* from = rows(plane, h / 2, h % 2);
            std::copy(from, from + columns, row);
            std::fill(row + columns, row + W, 0.0f);
        }
}

// two_by_two windows, in two passes over a group of planes, each a loop without a branch that the
// compiler vectorises in full (one window at a time, the rows of LeNet's 14 and 5 outputs left
// most of every vector idle, and the whole op took several times longer):
//   down    for every output row p and input column w < 2Q, the winner of x[2p, w] and
//           x[2p + 1, w] (the lower replaces the upper only when replaces_max), kept as its value
//           and its index h*W + w in the plane, a float (exact: planes are below 2^24 elements);
//   across  for every output, flat over the group, the winner of its two neighbouring column
//           winners, down[2i] and down[2i + 1]: the larger (replaces_max), and between two that
//           neither replaces (equal, or both NaN) the one with the smaller index.
// The result is the reference's: the window's largest element, the first in row-major order among
// equals, or its first NaN.
void max_pool_2x2_group(const Pool2dShape& s, std::int64_t planes, const float* x, float* y,
                        float* argmax, float* down, float* down_index) {
    const std::int64_t P = s.P(), Q = s.Q(), W = s.W, columns = 2 * Q;
    const float below = float(W);  // converted out here: GCC will not vectorise a select with a
                                   // conversion on one side (it might raise a floating-point flag)
    for (std::int64_t plane = 0; plane < planes; ++plane)
        for (std::int64_t p = 0; p < P; ++p) {
            const float* upper = x + (plane * s.H + 2 * p) * W;
            const float* lower = upper + W;
            float* value = down + (plane * P + p) * columns;
            float* index = down_index + (plane * P + p) * columns;
            const float first = float(2 * p * W);
            // w is 32-bit: converting 64-bit integers to floats has a vector instruction only
            // in AVX-512 (vcvtqq2ps); with AVX2 alone GCC left this loop scalar, several times
            // slower.
            for (std::int32_t w = 0; w < std::int32_t(columns); ++w) {
                const float a = upper[w], b = lower[w];
                const bool replaces = replaces_max(b, a);
                value[w] = replaces ? b : a;
                index[w] = first + float(w) + (replaces ? below : 0.0f);
            }
        }
    for (std::int64_t i = 0; i < planes * P * Q; ++i) {
        const float left = down[2 * i], right = down[2 * i + 1];
        const float left_index = down_index[2 * i], right_index = down_index[2 * i + 1];
        const bool replaces =
            replaces_max(right, left) | (!replaces_max(left, right) & (right_index < left_index));
        y[i] = replaces ? right : left;
        argmax[i] = replaces ? right_index : left_index;
    }
}

void max_pool_2x2(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    const std::int64_t in_size = s.H * s.W, out_size = s.P() * s.Q();
    for_each_slice(s.N * s.C, in_size, [&](std::int64_t begin, std::int64_t count) {
        // Two allocations: one of twice the size, split in two (for_each_group's way), ran
        // LeNet's conv1 pooling measurably slower on a Zen 5, for a reason not found (the row:
        // max_pool2d_forward/cpu_eigen_omp/64x6x28x28_w2s2, in lesson 11's table).
        const auto down = scratch(2 * planes_per_group * out_size);
        const auto down_index = scratch(2 * planes_per_group * out_size);
        for (std::int64_t first = begin; first < begin + count; first += planes_per_group) {
            const std::int64_t planes = std::min(planes_per_group, begin + count - first);
            max_pool_2x2_group(s, planes, x + first * in_size, y + first * out_size,
                               argmax + first * out_size, down.get(), down_index.get());
        }
    });
}

// Max pooling at stride_w 1 or 2 (every shape but LeNet's 2x2, which max_pool_2x2 runs), in two
// passes over each block of output rows, as max_pool_2x2 does:
//   down    for every output row p and input column w, the winner of the column's window rows
//           (x[h, w], h in the rows of p's windows), its value and its index h*W + w (a float);
//           loops along whole input rows, which the compiler vectorises;
//   across  for every output, the winner of its window's window_w column winners. The column
//           winners are laid out in rows of stride_w * Q' columns, Q' = Q plus the outputs (one
//           at most, or none) that the last window's reach past stride_w * Q needs, so that
//           column j of output k = p*Q' + q (p counted from the block's first row) lies at
//           k*stride_w + j - pad_w: one affine index over the whole block, one flat vectorised
//           loop per tap. Where Q' > Q, the extra output of each row is computed and dropped
//           (written to `wide`, copied out row by row).
// The row-at-a-time loops of max_pool_plane leave a remainder at the end of every row and tap (7
// of the benchmark's 55 columns after three Vecs of 16), which GCC compiled to scalar code that
// took about two thirds of the time (perf). The two passes ran max_pool2d_forward on
// 16x64x112x112_w3s2 in less than half the time of those loops (a Zen 5, 2 alternating runs of 3
// interleaved repetitions; the row is in lesson 11's table). Those passes ran over whole planes at
// first, their column winners (49 KiB a plane there) in L2; in blocks whose column winners and
// outputs fit column_winners_bytes, the second pass reads the first's output from L1, markedly
// faster again (3 alternating runs). Of blocks of 1, 3, 6, 12 and 24 rows (2 to 32 KiB), 6 and 12
// ran that shape fastest, 3 and 24 a little slower, 1 about twice as slow. Edge outputs, whose
// windows hang over the padding, read the neighbouring row's column winners in the flat pass and
// are computed again, one window at a time. The winners are the reference's: in `across`, a column
// winner replaces the one so far when replaces_max, and when neither replaces the other (equal, or
// both NaN) the one with the smaller index, the first in row-major order, wins.
struct ColumnWinners {
    std::int64_t Q_wide;  // Q'
    std::int64_t cols;    // stride_w * Q', the row length of the column winners
    std::int64_t rows;    // output rows per block
    std::int64_t front;   // floats before the first row: pad_w, for the first output's taps
    std::int64_t size;    // front, a block's rows and the floats the last output's last tap reaches
};

// The column winners of a block of output rows, and their outputs, in this many bytes: inside
// L1 (32 or 48 KiB), with room for the input rows they read.
constexpr std::int64_t column_winners_bytes = 16 * 1024;

ColumnWinners column_winners(const Pool2dShape& s) {
    const std::int64_t P = s.P(), Q = s.Q();
    // the last interior window reaches column stride_w*(Q-1) + window_w - 1 - pad_w
    const std::int64_t Q_wide =
        std::max(Q, ceil_div(s.stride_w * (Q - 1) + s.window_w - s.pad_w, s.stride_w));
    const std::int64_t cols = s.stride_w * Q_wide;
    // values and indices, of the column winners and of the outputs
    const std::int64_t bytes_per_row = 2 * std::int64_t(sizeof(float)) * (cols + Q_wide);
    const std::int64_t rows = std::clamp<std::int64_t>(column_winners_bytes / bytes_per_row, 1, P);
    const std::int64_t back = std::max<std::int64_t>(0, s.window_w - s.pad_w - s.stride_w);
    return {Q_wide, cols, rows, s.pad_w, s.pad_w + rows * cols + back};
}

template <typename Stride>
void max_pool_columns_plane(const Pool2dShape& s, InteriorColumns inner, ColumnWinners layout,
                            Stride stride, const float* in, float* y, float* argmax, float* down,
                            float* down_index, float* wide, float* wide_index) {
    const std::int64_t P = s.P(), Q = s.Q(), Q_wide = layout.Q_wide;
    // 32-bit columns: converting 64-bit integers to floats has a vector instruction only in
    // AVX-512 (max_pool_2x2_group)
    const std::int32_t W = std::int32_t(std::min(s.W, layout.cols));
    for (std::int64_t p0 = 0; p0 < P; p0 += layout.rows) {
        const std::int64_t rows = std::min(layout.rows, P - p0);
        for (std::int64_t r = 0; r < rows; ++r) {
            const PoolWindow window = pool_window(s, p0 + r, 0);
            float* value = down + r * layout.cols;
            float* index = down_index + r * layout.cols;
            // index holds the winning row's start h*W until the end, then w is added (exact:
            // both below 2^24), as max_pool_plane does: GCC does not vectorise a select with an
            // integer-to-float conversion on one side (it might raise a floating-point flag).
            const float* first = in + window.h0 * s.W;
            std::copy(first, first + W, value);
            std::fill(index, index + W, float(window.h0 * s.W));
            for (std::int64_t h = window.h0 + 1; h < window.h1; ++h) {
                const float* row = in + h * s.W;
                const float row_start = float(h * s.W);
                for (std::int32_t w = 0; w < W; ++w) {
                    const float v = row[w];
                    const bool replaces = replaces_max(v, value[w]);
                    value[w] = replaces ? v : value[w];
                    index[w] = replaces ? row_start : index[w];
                }
            }
            for (std::int32_t w = 0; w < W; ++w) index[w] += float(w);
        }
        float* out = Q_wide == Q ? y + p0 * Q : wide;
        float* out_index = Q_wide == Q ? argmax + p0 * Q : wide_index;
        const std::int64_t outputs = rows * Q_wide;
        for (std::int64_t k = 0; k < outputs; ++k) {  // column 0 of every window starts it
            out[k] = down[k * stride - s.pad_w];
            out_index[k] = down_index[k * stride - s.pad_w];
        }
        for (std::int64_t j = 1; j < s.window_w; ++j) {
            const float* value = down + j - s.pad_w;
            const float* index = down_index + j - s.pad_w;
            for (std::int64_t k = 0; k < outputs; ++k) {
                const float v = value[k * stride], i = index[k * stride];
                const bool replaces =
                    replaces_max(v, out[k]) | (!replaces_max(out[k], v) & (i < out_index[k]));
                out[k] = replaces ? v : out[k];
                out_index[k] = replaces ? i : out_index[k];
            }
        }
        if (Q_wide != Q)
            for (std::int64_t r = 0; r < rows; ++r) {
                std::copy(wide + r * Q_wide, wide + r * Q_wide + Q, y + (p0 + r) * Q);
                std::copy(wide_index + r * Q_wide, wide_index + r * Q_wide + Q,
                          argmax + (p0 + r) * Q);
            }
    }
    for (std::int64_t p = 0; p < P; ++p)
        for_each_edge_column(inner, Q, [&](std::int64_t q) {
            const std::int64_t best = window_argmax(s, in, p, q);
            y[p * Q + q] = in[best];
            argmax[p * Q + q] = float(best);
        });
}

// One plane: in (H, W) -> y (P, Q); stride is s.stride_w (with_stride).
template <typename Stride>
void avg_pool_plane(const Pool2dShape& s, InteriorColumns inner, Stride stride, const float* in,
                    float* y) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t p = 0; p < P; ++p) {
        float* y_row = y + p * Q;
        for_each_edge_column(inner, Q, [&](std::int64_t q) {
            const PoolWindow win = pool_window(s, p, q);
            float total = 0.0f;
            for (std::int64_t h = win.h0; h < win.h1; ++h)
                for (std::int64_t w = win.w0; w < win.w1; ++w) total += in[h * s.W + w];
            y_row[q] = total / float(win.count());
        });
        const PoolWindow rows = pool_window(s, p, 0);
        for_each_tap(s, rows.h0, rows.h1, [&](std::int64_t t, std::int64_t offset) {
            if (t == 0) {
                for (std::int64_t q = inner.begin; q < inner.end; ++q)
                    y_row[q] = in[offset + q * stride];
                return;
            }
            for (std::int64_t q = inner.begin; q < inner.end; ++q)
                y_row[q] += in[offset + q * stride];
        });
        const float count = float((rows.h1 - rows.h0) * s.window_w);  // every interior window's
        for (std::int64_t q = inner.begin; q < inner.end; ++q) y_row[q] /= count;
    }
}

// Version 2: max_pool_plane's row of outputs per tap for every shape (LeNet's 2x2 by max_pool_2x2).
void max_pool2d_forward_row_taps(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    if (two_by_two(s)) {
        max_pool_2x2(s, x, y, argmax);
        return;
    }
    const InteriorColumns inner = interior_columns(s);
    with_stride(s, [&](auto stride) {
        for_each_plane(s, [&](std::int64_t in, std::int64_t out) {
            max_pool_plane(s, inner, stride, x + in, y + out, argmax + out);
        });
    });
}

// Version 3: the column winners (max_pool_columns_plane) at strides 1 and 2, version 2 otherwise.
void max_pool2d_forward(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    if (two_by_two(s) || s.stride_w > 2) {
        max_pool2d_forward_row_taps(s, x, y, argmax);
        return;
    }
    const InteriorColumns inner = interior_columns(s);
    const ColumnWinners layout = column_winners(s);
    const std::int64_t in_size = s.H * s.W, out_size = s.P() * s.Q();
    const std::int64_t wide_size = layout.rows * layout.Q_wide;
    // Strides 1 and 2 only, each a compile-time constant (with_stride would also compile a
    // run-time stride, which never comes here).
    auto run = [&](auto stride) {
        for_each_slice(s.N * s.C, in_size, [&](std::int64_t begin, std::int64_t count) {
            const auto down = scratch(layout.size), down_index = scratch(layout.size);
            const auto wide = scratch(wide_size), wide_index = scratch(wide_size);
            // Zeros where no input column lands (the margins, the columns past W): only
            // outputs computed again or dropped read them.
            Eigen::Map<Array>(down.get(), layout.size).setZero();
            Eigen::Map<Array>(down_index.get(), layout.size).setZero();
            for (std::int64_t i = begin; i < begin + count; ++i)
                max_pool_columns_plane(s, inner, layout, stride, x + i * in_size, y + i * out_size,
                                       argmax + i * out_size, down.get() + layout.front,
                                       down_index.get() + layout.front, wide.get(),
                                       wide_index.get());
        });
    };
    if (s.stride_w == 1)
        run(std::integral_constant<std::int64_t, 1>{});
    else
        run(std::integral_constant<std::int64_t, 2>{});
}

// dx = 0, then dx[argmax] += dy, plane by plane (argmax indexes within its plane).
void max_pool2d_backward(const Pool2dShape& s, const float* dy, const float* argmax, float* dx) {
    const std::int64_t outputs = s.P() * s.Q();
    for_each_plane(s, [&](std::int64_t in, std::int64_t out) {
        float* grad_in = dx + in;
        std::fill(grad_in, grad_in + s.H * s.W, 0.0f);
        for (std::int64_t i = out; i < out + outputs; ++i)
            grad_in[static_cast<std::int64_t>(argmax[i])] += dy[i];
    });
}

// Version 3: two_by_two windows, where each input lies in one window at most, so dx is a gather
// instead of a scatter: dx[h, w] = dy[p, q] if (h, w) won output (p, q)'s window, else 0. In two
// passes over a group of planes, as max_pool_2x2 takes its winners:
//   place  flat over the group's outputs: `offset` = argmax - the index of the window's first
//          element (0, 1, W or W + 1: the winner's place in the window), then the output's
//          gradient or a zero written to its two columns in the row of dx above (2p) and the row
//          below (2p + 1);
//   rows   those rows copied into dx, each row of dx written once; the last row and column, when
//          H or W is odd, are in no window and get zeros.
// Version 2 zeroes dx and adds one output at a time, at an index it first converts from a float.
// `first` holds each output's window's first index, for a group of planes (the same in each).
// Other shapes run version 2.
void max_pool_2x2_backward_group(const Pool2dShape& s, std::int64_t planes, const float* dy,
                                 const float* argmax, const float* first, float* dx, float* above,
                                 float* below) {
    const std::int64_t P = s.P(), Q = s.Q(), W = s.W, columns = 2 * Q;
    const float one = 1.0f, down = float(W), down_one = float(W + 1);
    for (std::int64_t i = 0; i < planes * P * Q; ++i) {
        const float offset = argmax[i] - first[i], g = dy[i];
        above[2 * i] = offset == 0.0f ? g : 0.0f;
        above[2 * i + 1] = offset == one ? g : 0.0f;
        below[2 * i] = offset == down ? g : 0.0f;
        below[2 * i + 1] = offset == down_one ? g : 0.0f;
    }
    write_window_rows(s, planes, dx, [&](std::int64_t plane, std::int64_t p, std::int64_t lower) {
        return (lower ? below : above) + (plane * P + p) * columns;
    });
}

void max_pool2d_backward_window_gather(const Pool2dShape& s, const float* dy, const float* argmax,
                                       float* dx) {
    if (!two_by_two(s)) {
        max_pool2d_backward(s, dy, argmax, dx);
        return;
    }
    const std::int64_t P = s.P(), Q = s.Q(), in_size = s.H * s.W, out_size = P * Q;
    const auto first = scratch(planes_per_group * out_size);
    for (std::int64_t plane = 0; plane < planes_per_group; ++plane)
        for (std::int64_t p = 0; p < P; ++p)
            for (std::int64_t q = 0; q < Q; ++q)
                first[(plane * P + p) * Q + q] = float(2 * p * s.W + 2 * q);
    const std::int64_t rows_size = 2 * planes_per_group * out_size;  // a row of 2Q per output row
    for_each_group(s, 2 * rows_size, [&](std::int64_t group, std::int64_t planes, float* space) {
        max_pool_2x2_backward_group(s, planes, dy + group * out_size, argmax + group * out_size,
                                    first.get(), dx + group * in_size, space, space + rows_size);
    });
}

void avg_pool2d_forward(const Pool2dShape& s, const float* x, float* y) {
    const InteriorColumns inner = interior_columns(s);
    with_stride(s, [&](auto stride) {
        for_each_plane(s, [&](std::int64_t in, std::int64_t out) {
            avg_pool_plane(s, inner, stride, x + in, y + out);
        });
    });
}

// Version 3: two_by_two windows (LeNet's shape, were it to average) in two flat passes over a
// group of planes, as max_pool_2x2 takes its winners:
//   down    for every output row p and input column w < 2Q, x[2p, w] + x[2p + 1, w];
//   across  for every output, flat over the group, the sum of its two column sums, times 1/4.
// Version 2's loop per tap over a row of 14 outputs, four taps and a division per row, left most
// of each vector idle and took about twice as long as max pooling on the same shape. Each output
// is (x[2p, 2q] + x[2p + 1, 2q]) + (x[2p, 2q + 1] + x[2p + 1, 2q + 1]), divided by 4 (a
// multiplication by 1/4 gives the same bits); the reference adds in row-major order, so the two
// may differ in the last bit. Other shapes run version 2.
void avg_pool_2x2_group(const Pool2dShape& s, std::int64_t planes, const float* x, float* y,
                        float* down) {
    const std::int64_t P = s.P(), Q = s.Q(), W = s.W, columns = 2 * Q;
    for (std::int64_t plane = 0; plane < planes; ++plane)
        for (std::int64_t p = 0; p < P; ++p) {
            const float* upper = x + (plane * s.H + 2 * p) * W;
            const float* lower = upper + W;
            float* sum = down + (plane * P + p) * columns;
            for (std::int64_t w = 0; w < columns; ++w) sum[w] = upper[w] + lower[w];
        }
    for (std::int64_t i = 0; i < planes * P * Q; ++i)
        y[i] = (down[2 * i] + down[2 * i + 1]) * 0.25f;
}

void avg_pool2d_forward_pair_sums(const Pool2dShape& s, const float* x, float* y) {
    if (!two_by_two(s)) {
        avg_pool2d_forward(s, x, y);
        return;
    }
    const std::int64_t in_size = s.H * s.W, out_size = s.P() * s.Q();
    for_each_group(s, 2 * planes_per_group * out_size,
                   [&](std::int64_t first, std::int64_t planes, float* down) {
                       avg_pool_2x2_group(s, planes, x + first * in_size, y + first * out_size,
                                          down);
                   });
}

// Per output row p: spread[w] = the sum of dy[p, q] / count over the windows q whose columns
// cover w; then every input row the windows of p cover gets spread added.
void avg_pool2d_backward_spread_rows(const Pool2dShape& s, const float* dy, float* dx) {
    const std::int64_t P = s.P(), Q = s.Q(), H = s.H, W = s.W;
    for_each_plane(s, [&](std::int64_t in, std::int64_t out) {
        float* grad_in = dx + in;
        std::vector<float> spread(static_cast<std::size_t>(W));
        std::fill(grad_in, grad_in + H * W, 0.0f);
        for (std::int64_t p = 0; p < P; ++p) {
            std::fill(spread.begin(), spread.end(), 0.0f);
            for (std::int64_t q = 0; q < Q; ++q) {
                const PoolWindow win = pool_window(s, p, q);
                const float share = dy[out + p * Q + q] / float(win.count());
                for (std::int64_t w = win.w0; w < win.w1; ++w) spread[w] += share;
            }
            const PoolWindow rows = pool_window(s, p, 0);
            for (std::int64_t h = rows.h0; h < rows.h1; ++h)
                for (std::int64_t w = 0; w < W; ++w) grad_in[h * W + w] += spread[w];
        }
    });
}

// Version 3: each output row's spread is computed once, with vector loops, and each row of dx is
// written once, as the sum of the spreads of the output rows whose windows cover it. Version 2
// spent most of its time in the scalar loop that adds each share to its window's columns (perf),
// and the rest zeroing dx and adding to it row by row. Here, per output row p:
//   shares  share[q] = dy[p, q] / the window's element count: one vector loop over the interior
//           columns, whose windows all count rows(p) * window_w elements; the edges one by one;
//   spread  spread_p[w] = the sum of the shares of the windows covering column w. For a stride S,
//           the columns w = m*S + r of one phase r are covered by the taps j = r + pad (mod S), of
//           windows q = m - (j - r - pad) / S: per tap, a shifted vector add of the shares into
//           the phase (the shares have zeros around them, for the q outside [0, Q)); then the S
//           phases are interleaved into the row;
// and then dx[h] = the sum of spread_p over the output rows p covering h (common/pooling.hpp's
// covering), one vector loop per row: dx is written once, never zeroed, never read.
void avg_pool2d_backward(const Pool2dShape& s, const float* dy, float* dx) {
    const std::int64_t P = s.P(), Q = s.Q(), H = s.H, W = s.W;
    const InteriorColumns inner = interior_columns(s);
    with_stride(s, [&](auto stride) {
        const std::int64_t phase_size = ceil_div<std::int64_t>(W, stride);
        // zeros around the shares: taps reach (window_w + pad_w) / stride windows either way
        const std::int64_t margin = ceil_div<std::int64_t>(s.window_w + s.pad_w, stride) + 1;
        const std::int64_t shares_size = margin + std::max(Q, phase_size) + margin;
        for_each_slice(s.N * s.C, H * W, [&](std::int64_t begin, std::int64_t count) {
            const auto shares = scratch(shares_size);
            const auto phases = scratch(stride * phase_size);
            const auto spreads = scratch(P * W);
            Eigen::Map<Array>(shares.get(), shares_size).setZero();
            float* share = shares.get() + margin;
            for (std::int64_t plane = begin; plane < begin + count; ++plane) {
                const float* grad = dy + plane * P * Q;
                for (std::int64_t p = 0; p < P; ++p) {
                    const PoolWindow rows = pool_window(s, p, 0);
                    const float interior_count = float((rows.h1 - rows.h0) * s.window_w);
                    for (std::int64_t q = inner.begin; q < inner.end; ++q)
                        share[q] = grad[p * Q + q] / interior_count;
                    for_each_edge_column(inner, Q, [&](std::int64_t q) {
                        share[q] = grad[p * Q + q] / float(pool_window(s, p, q).count());
                    });
                    for (std::int64_t r = 0; r < stride; ++r) {
                        float* phase = phases.get() + r * phase_size;
                        std::fill(phase, phase + phase_size, 0.0f);
                        for (std::int64_t j = 0; j < s.window_w; ++j) {
                            if ((j - r - s.pad_w) % stride != 0) continue;
                            const float* from = share - (j - r - s.pad_w) / stride;
                            for (std::int64_t m = 0; m < phase_size; ++m) phase[m] += from[m];
                        }
                    }
                    float* spread = spreads.get() + p * W;
                    const std::int64_t whole = W / stride;  // phases with a column in every m
                    for (std::int64_t m = 0; m < whole; ++m)
                        for (std::int64_t r = 0; r < stride; ++r)
                            spread[m * stride + r] = phases.get()[r * phase_size + m];
                    for (std::int64_t w = whole * stride; w < W; ++w)
                        spread[w] = phases.get()[(w - whole * stride) * phase_size + whole];
                }
                float* grad_in = dx + plane * H * W;
                for (std::int64_t h = 0; h < H; ++h) {
                    const Covering<std::int64_t> by =
                        covering<std::int64_t>(h, s.window_h, s.stride_h, s.pad_h, P);
                    float* row = grad_in + h * W;
                    if (by.first > by.last) {
                        std::fill(row, row + W, 0.0f);
                        continue;
                    }
                    const float* first = spreads.get() + by.first * W;
                    std::copy(first, first + W, row);
                    for (std::int64_t p = by.first + 1; p <= by.last; ++p) {
                        const float* spread = spreads.get() + p * W;
                        for (std::int64_t w = 0; w < W; ++w) row[w] += spread[w];
                    }
                }
            }
        });
    });
}

// Version 4: two_by_two windows in two passes over a group of planes. Each input has one window,
// which counts 4 elements, so dx[2p + a, 2q + b] = dy[p, q] / 4:
//   spread  flat over the group's outputs, each share dy / 4 written to its two columns (a row
//           of 2Q per output row);
//   rows    each spread row copied to the two rows of dx under it; the last row and column, when
//           H or W is odd, are in no window and get zeros.
// Version 3's spreads, phases and covering rows work for every window and stride, and on rows
// of 14 outputs their loop overhead outweighed the adds. Other shapes run version 3.
void avg_pool_2x2_backward_group(const Pool2dShape& s, std::int64_t planes, const float* dy,
                                 float* dx, float* spread) {
    const std::int64_t P = s.P(), Q = s.Q(), columns = 2 * Q;
    for (std::int64_t i = 0; i < planes * P * Q; ++i) {
        const float share = dy[i] * 0.25f;  // the same bits as dy[i] / 4
        spread[2 * i] = share;
        spread[2 * i + 1] = share;
    }
    write_window_rows(s, planes, dx, [&](std::int64_t plane, std::int64_t p, std::int64_t) {
        return spread + (plane * P + p) * columns;  // the same row above and below
    });
}

void avg_pool2d_backward_pair_spread(const Pool2dShape& s, const float* dy, float* dx) {
    if (!two_by_two(s)) {
        avg_pool2d_backward(s, dy, dx);
        return;
    }
    const std::int64_t in_size = s.H * s.W, out_size = s.P() * s.Q();
    for_each_group(s, 2 * planes_per_group * out_size,
                   [&](std::int64_t first, std::int64_t planes, float* spread) {
                       avg_pool_2x2_backward_group(s, planes, dy + first * out_size,
                                                   dx + first * in_size, spread);
                   });
}

}  // namespace

// One declaration per ladder of versions: GCC 12 warns of a string "used uninitialized" (a false
// alarm) where two lists of versions share one && chain.
[[maybe_unused]] const bool registered_max_forward = register_kernels(
    "cpu_eigen_omp", ops::max_pool2d_forward,
    {{2, "row_taps", "a whole output row per window tap, vectorised; planes over threads",
      max_pool2d_forward_row_taps},
     {3, "column_winners",
      "strides 1 and 2: every column's winner over the window rows, then every output's over its "
      "columns, flat over blocks of output rows",
      max_pool2d_forward}},
    /*default_version=*/3);

[[maybe_unused]] const bool registered_avg_backward = register_kernels(
    "cpu_eigen_omp", ops::avg_pool2d_backward,
    {{2, "planes", "each thread spreads into its own planes of dx",
      avg_pool2d_backward_spread_rows},
     {3, "gathered_rows",
      "each output row's spread once, in vector loops; each row of dx written once, the sum of the "
      "spreads covering it",
      avg_pool2d_backward},
     {4, "pair_spread",
      "2x2 windows at stride 2: every share written to its column pair in one flat loop, each row "
      "copied to the two rows of dx under it; other shapes as version 3",
      avg_pool2d_backward_pair_spread}},
    /*default_version=*/4);

[[maybe_unused]] const bool registered_avg_forward = register_kernels(
    "cpu_eigen_omp", ops::avg_pool2d_forward,
    {{2, "row_taps", "a whole output row per window tap, vectorised; planes over threads",
      avg_pool2d_forward},
     {3, "pair_sums",
      "2x2 windows at stride 2: pairs of rows summed, then pairs of columns, each a flat loop over "
      "a group of planes; other shapes as version 2",
      avg_pool2d_forward_pair_sums}},
    /*default_version=*/3);

[[maybe_unused]] const bool registered_max_backward = register_kernels(
    "cpu_eigen_omp", ops::max_pool2d_backward,
    {{2, "planes", "each thread scatters into its own planes of dx", max_pool2d_backward},
     {3, "window_gather",
      "2x2 windows at stride 2: each input's gradient gathered from its one window in a flat loop "
      "per plane, every row of dx written once; other shapes as version 2",
      max_pool2d_backward_window_gather}},
    /*default_version=*/3);

}  // namespace triptych::cpu_eigen_omp
