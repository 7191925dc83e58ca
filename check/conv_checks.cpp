// The cross-check of convolution and pooling: every pass, with every algorithm a variant offers,
// against the float64 cpu_naive reference (cpu/naive/conv2d.hpp, cpu/naive/pool2d.hpp), and the
// OpChecks `triptych check --op conv2d|max_pool2d|avg_pool2d` runs.
//
// Each tolerance is written next to its check, as in crosscheck.cpp: a first-order rounding-error
// bound, doubled. In short:
//   direct, im2col  every output is a sum of products (C R S of them for y, at most K R S for dx,
//                   N P Q for dw) added in some order, so gemm's bound with that length holds;
//   fft             a transformed sum's error is relative to the whole planes it came from,
//                   not to the terms of one output (see fft_levels and the passes below);
//   winograd        relative to the same transforms and products on absolute values, a sum
//                   larger than sum|x w| (namespaces winograd, 3x3, and columns, 5x5, below);
//   max pooling     exact: y, argmax and (without overlap) dx only move values;
//   avg pooling     a short sum and a division.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "check/case_helpers.hpp"
#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/math.hpp"
#include "common/winograd.hpp"
#include "cpu/naive/conv2d.hpp"
#include "cpu/naive/pool2d.hpp"

namespace triptych::check {
namespace {

// "N7 C3 H13 W17 K5 R1 S1 stride 1,1 pad 0,0 im2col", then " NaN+-inf" for a case of non-finite
// inputs, and "dw" or "db" where a pass has two.
std::string describe(const Conv2dShape& s, ConvAlgorithm algorithm, Values values,
                     const std::string& detail = "") {
    return s.str() + " " + to_string(algorithm) +
           (values == Values::non_finite ? " NaN+-inf" : "") + (detail.empty() ? "" : " " + detail);
}

// What a non-finite case accepts besides the reference's own value, by common/backend.hpp's rule
// for conv2d:
//   none  nothing: NaN where the reference is NaN, the same infinity where it is infinite, a
//         number within the tolerance where it is a number (compare()'s rule);
//   nan   also NaN where the reference is a number or an infinity: an infinity met a zero that
//         the kernel multiplies but the definition does not (x's padding, or vector lanes past the
//         edge of dy's planes, in a weight gradient);
//   any   also any non-finite output where the reference is a number, and NaN where it is an
//         infinity: the algorithm mixes many outputs' terms before its products (the FFT a whole
//         plane, Winograd a tile).
// None of them accepts a number where the reference has none, nor the other infinity.
enum class Spread { none, nan, any };

Spread spread_of(ConvAlgorithm algorithm, Spread exact) {
    return algorithm == ConvAlgorithm::fft || algorithm == ConvAlgorithm::winograd ? Spread::any
                                                                                   : exact;
}

// compare() under `spread` (above): each output that `spread` accepts is taken as the reference
// there, and an output whose scale is NaN (an infinity's size times a transform's zero) is held to
// an unbounded scale, as an infinite one is.
Comparison compare_conv(const std::vector<float>& out, std::vector<double> ref, Tolerance tol,
                        std::vector<double> scale, Values values, Spread spread) {
    if (values == Values::non_finite)
        for (std::size_t i = 0; i < ref.size() && i < out.size(); ++i) {
            const bool to_nan = spread != Spread::none && std::isnan(out[i]) && !std::isnan(ref[i]);
            const bool number_to_infinity =
                spread == Spread::any && std::isinf(out[i]) && std::isfinite(ref[i]);
            if (to_nan || number_to_infinity) ref[i] = out[i];
            if (i < scale.size() && std::isnan(scale[i]))
                scale[i] = std::numeric_limits<double>::infinity();
        }
    return compare(out, ref, tol, scale);
}

// The 2-norm of each (rows x cols) plane of a tensor of `planes` planes: ||x[n, c]|| for x.
std::vector<double> plane_norms(const std::vector<double>& v, std::int64_t planes,
                                std::int64_t plane_size) {
    std::vector<double> norms(static_cast<std::size_t>(planes));
    for (std::int64_t i = 0; i < planes; ++i) {
        double squares = 0;
        for (std::int64_t j = 0; j < plane_size; ++j)
            squares += v[i * plane_size + j] * v[i * plane_size + j];
        norms[static_cast<std::size_t>(i)] = std::sqrt(squares);
    }
    return norms;
}

// The power of two >= n.
std::int64_t power_of_two_at_least(std::int64_t n) {
    return std::int64_t(std::bit_ceil(std::uint64_t(n)));
}

// The fft algorithm's error model. A convolution by FFT transforms both planes, multiplies them
// pointwise and transforms back, so every output carries rounding errors from every element of
// both planes: its error is relative to the whole planes, not to the terms of its own sum.
// Percival (Rapid multiplication modulo the sum and difference of highly composite numbers,
// Math. Comp. 72, 2003) bounds a cyclic convolution z = x (*) y computed with radix-2 FFTs of
// length 2^L, twiddle factors within beta of exact:
//   max_i |z'_i - z_i| <= ||x||_2 ||y||_2 ((1 + u)^3L (1 + sqrt(5) u)^(3L+1) (1 + beta)^3L - 1)
//                       ~ ((3 + 3 sqrt(5) + 3 beta / u) L + sqrt(5)) u ||x||_2 ||y||_2.
// With twiddles within 2u (sin and cos each within an ulp) that is below (16 L + 3) u ||x|| ||y||.
// An Fh x Fw transform is L = log2(Fh Fw) radix-2 levels; zero padding, a stride (dy dilated with
// zeros) and a flipped filter change no norm. Adding T such convolutions (over channels, in the
// frequency domain or after the inverse transforms) costs (T - 1) u more against the same scale:
// by Parseval the products |X_j W_j| summed over the n frequencies are at most
// ||X|| ||W|| = n ||x|| ||w||, and the inverse transform divides by n. In all, for T terms:
//   (16 L + T + 2) u sum_t ||x_t|| ||w_t||.
//
// The bound holds for any input, so it is far from tight on random ones, whose rounding errors
// add like a random walk: the FFT passes of cpu_eigen_omp and gpu_tiled used at most 0.3% of it
// on the default shapes (30% on the one-pixel plane, where the transform does nothing). It still
// fails an FFT that is 0.1% off on LeNet's second layer (tests/conv_test.cpp), or a wrong index.
//
// L here is that of the largest transform an FFT convolution of this shape needs: a power of two
// in each dimension that holds the whole linear convolution (H + 2 pad_h + R - 1 rows), so no
// wrap-around reaches an output. An implementation with smaller transforms (or tiles) does fewer
// levels, and meets a bound a little looser than its own.
double fft_levels(const Conv2dShape& s) {
    const std::int64_t rows = power_of_two_at_least(s.H + 2 * s.pad_h + s.R - 1);
    const std::int64_t cols = power_of_two_at_least(s.W + 2 * s.pad_w + s.S - 1);
    return std::log2(double(rows * cols));
}

// The per-output scale of an FFT pass: for output plane (i, j), T convolutions added, and
// `roundings` more roundings against the same scale (T + 2 above, one more for a bias),
//   (16 L + roundings) sum_t ||a[i, t]|| ||b[t, j]||   (a_norms (I, T), b_norms (T, J)).
// Every element of the plane gets the same scale.
std::vector<double> fft_scale(const Conv2dShape& s, const std::vector<double>& a_norms,
                              const std::vector<double>& b_norms, std::int64_t I, std::int64_t T,
                              std::int64_t J, std::int64_t plane_size, std::int64_t roundings) {
    const double factor = 16.0 * fft_levels(s) + double(roundings);
    std::vector<double> scale(static_cast<std::size_t>(I * J * plane_size));
    for (std::int64_t i = 0; i < I; ++i)
        for (std::int64_t j = 0; j < J; ++j) {
            double sum = 0;
            for (std::int64_t t = 0; t < T; ++t) sum += a_norms[i * T + t] * b_norms[t * J + j];
            std::fill_n(scale.begin() + (i * J + j) * plane_size, plane_size, factor * sum);
        }
    return scale;
}

// Norms held (rows, cols) rearranged as (cols, rows), where fft_scale wants the other index first
// (w's norms are (K, C), the forward pass adds over C).
std::vector<double> transposed(const std::vector<double>& norms, std::int64_t rows,
                               std::int64_t cols) {
    std::vector<double> t(norms.size());
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) t[j * rows + i] = norms[i * cols + j];
    return t;
}

// The filters w (K, C, R, S) as backward_data's correlation takes them: (C, K, R, S), each
// rotated by 180 degrees (dx[c] = sum_k dy[k] correlated with rot180(w[k, c])).
std::vector<double> rotated_filters(const Conv2dShape& s, const std::vector<double>& w) {
    const std::int64_t taps = s.R * s.S;
    std::vector<double> rotated(w.size());
    for (std::int64_t c = 0; c < s.C; ++c)
        for (std::int64_t k = 0; k < s.K; ++k)
            for (std::int64_t tap = 0; tap < taps; ++tap)
                rotated[std::size_t((c * s.K + k) * taps + tap)] =
                    w[std::size_t((k * s.C + c) * taps + taps - 1 - tap)];
    return rotated;
}

// The winograd algorithm's error model (cpu/eigen_omp/conv_winograd.cpp). F(2x2, 3x3) computes a
// 2x2 tile of outputs as A^T [sum_i (G g_i G^T) . (B^T d_i B)] A, over the input channels i, d_i
// the tile's 4x4 patch of channel i and g_i its filter. To first order, each step's rounding error
// is at most its roundings times u times the same step on absolute values, so the error of every
// output is below (roundings) u S, with
//   S = |A^T| [sum_i (|G| |g_i| |G^T|) . (|B^T| |d_i| |B|)] |A|
// which is at least sum_i |x w| and up to several times it (the transforms add up to four
// values, each entry of A^T . A nine). Roundings: 4 in G g G^T (sums of three, rows then
// columns), 2 in B^T d B, 1 product, at most C - 1 in the sum over channels, 4 in A^T . A, and one
// for the bias: C + 11. backward_data is the same on dy, with the filters rotated and k and c
// swapped (K channels summed). backward_weights is F(3x3, 2x2): dw = A2^T [sum over tiles
// (G2 e G2^T) . (B^T d B)] A2 with e dy's 2x2 tile: 2 roundings in G2 . G2^T, 2 in B^T . B, 1
// product, at most T - 1 in the sum over the T tiles of all images, 4 in A2^T . A2: T + 8.
// S is computed here in float64, from the absolute values of the data and of the matrices.
namespace winograd {

// |B^T|, |G|, |A^T| of F(2x2, 3x3), and |G2|, |A2^T| of F(3x3, 2x2), row-major.
constexpr double BT[4][4] = {{1, 0, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 0, 1}};
constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}, {0, 0, 1}};
constexpr double AT[2][4] = {{1, 1, 1, 0}, {0, 1, 1, 1}};
constexpr double G2[4][2] = {{1, 0}, {0.5, 0.5}, {0.5, 0.5}, {0, 1}};
constexpr double A2T[3][4] = {{1, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 1}};

// M X M^T for an (r x c) M and a (c x c) X, row-major: r x r.
template <std::size_t R, std::size_t C>
std::vector<double> sandwich(const double (&M)[R][C], const double* X) {
    std::vector<double> out(R * R, 0.0);
    for (std::size_t i = 0; i < R; ++i)
        for (std::size_t j = 0; j < R; ++j)
            for (std::size_t a = 0; a < C; ++a)
                for (std::size_t b = 0; b < C; ++b)
                    out[i * R + j] += M[i][a] * X[a * C + b] * M[j][b];
    return out;
}

// |B^T| |d| |B| for the 4x4 patch of an (H x W) plane at (row, col), 0 outside the plane.
std::vector<double> patch(const double* plane, std::int64_t H, std::int64_t W, std::int64_t row,
                          std::int64_t col) {
    double d[16];
    for (std::int64_t r = 0; r < 4; ++r)
        for (std::int64_t c = 0; c < 4; ++c) {
            const std::int64_t h = row + r, w = col + c;
            d[r * 4 + c] = h >= 0 && h < H && w >= 0 && w < W ? plane[h * W + w] : 0.0;
        }
    return sandwich(BT, d);
}

// S for every output of `outs` planes (P x Q) of each image, from `ins` planes (H x W) of |input|
// and filters |f(o, i)| (9 taps each), tile (ti, tj) reading from (2 ti - pad_h, 2 tj - pad_w).
template <typename Filter>
std::vector<double> correlation_scale(const std::vector<double>& in, std::int64_t images,
                                      std::int64_t ins, std::int64_t H, std::int64_t W,
                                      std::int64_t outs, std::int64_t P, std::int64_t Q,
                                      std::int64_t pad_h, std::int64_t pad_w, Filter f) {
    std::vector<std::vector<double>> U;  // U[o * ins + i] = |G| |f| |G^T|
    for (std::int64_t o = 0; o < outs; ++o)
        for (std::int64_t i = 0; i < ins; ++i) U.push_back(sandwich(G, f(o, i)));
    std::vector<double> scale(static_cast<std::size_t>(images * outs * P * Q));
    for (std::int64_t n = 0; n < images; ++n)
        for (std::int64_t ti = 0; ti < ceil_div(P, std::int64_t{2}); ++ti)
            for (std::int64_t tj = 0; tj < ceil_div(Q, std::int64_t{2}); ++tj) {
                std::vector<std::vector<double>> V;
                for (std::int64_t i = 0; i < ins; ++i)
                    V.push_back(patch(in.data() + (n * ins + i) * H * W, H, W, 2 * ti - pad_h,
                                      2 * tj - pad_w));
                for (std::int64_t o = 0; o < outs; ++o) {
                    double m[16] = {};
                    for (std::int64_t i = 0; i < ins; ++i)
                        for (int p = 0; p < 16; ++p)
                            m[p] += U[std::size_t(o * ins + i)][std::size_t(p)] *
                                    V[std::size_t(i)][std::size_t(p)];
                    const std::vector<double> y = sandwich(AT, m);
                    for (std::int64_t a = 0; a < 2 && 2 * ti + a < P; ++a)
                        for (std::int64_t b = 0; b < 2 && 2 * tj + b < Q; ++b)
                            scale[std::size_t(((n * outs + o) * P + 2 * ti + a) * Q + 2 * tj + b)] =
                                y[std::size_t(a * 2 + b)];
                }
            }
    return scale;
}

// The forward pass's S: |x| correlated with |w|.
std::vector<double> forward_scale(const Conv2dShape& s, const std::vector<double>& abs_x,
                                  const std::vector<double>& abs_w) {
    return correlation_scale(
        abs_x, s.N, s.C, s.H, s.W, s.K, s.P(), s.Q(), s.pad_h, s.pad_w,
        [&](std::int64_t k, std::int64_t c) { return &abs_w[std::size_t((k * s.C + c) * 9)]; });
}

// backward_data's S: |dy| padded by 2 - pad, correlated with |w| rotated, k and c swapped.
std::vector<double> backward_data_scale(const Conv2dShape& s, const std::vector<double>& abs_dy,
                                        const std::vector<double>& abs_w) {
    const std::vector<double> rotated = rotated_filters(s, abs_w);
    return correlation_scale(
        abs_dy, s.N, s.K, s.P(), s.Q(), s.C, s.H, s.W, 2 - s.pad_h, 2 - s.pad_w,
        [&](std::int64_t c, std::int64_t k) { return &rotated[std::size_t((c * s.K + k) * 9)]; });
}

// backward_weights' S for dw (K, C, 3, 3): sum over tiles of (|G2| |e| |G2^T|) . (|B^T| |d| |B|),
// then |A2^T| . |A2|.
std::vector<double> backward_weights_scale(const Conv2dShape& s, const std::vector<double>& abs_x,
                                           const std::vector<double>& abs_dy) {
    const std::int64_t P = s.P(), Q = s.Q();
    std::vector<double> sums(static_cast<std::size_t>(s.K * s.C * 16), 0.0);
    for (std::int64_t n = 0; n < s.N; ++n)
        for (std::int64_t ti = 0; ti < ceil_div(P, std::int64_t{2}); ++ti)
            for (std::int64_t tj = 0; tj < ceil_div(Q, std::int64_t{2}); ++tj) {
                std::vector<std::vector<double>> V, E;
                for (std::int64_t c = 0; c < s.C; ++c)
                    V.push_back(patch(abs_x.data() + (n * s.C + c) * s.H * s.W, s.H, s.W,
                                      2 * ti - s.pad_h, 2 * tj - s.pad_w));
                for (std::int64_t k = 0; k < s.K; ++k) {
                    double e[4];
                    for (std::int64_t a = 0; a < 2; ++a)
                        for (std::int64_t b = 0; b < 2; ++b) {
                            const std::int64_t p = 2 * ti + a, q = 2 * tj + b;
                            e[a * 2 + b] =
                                p < P && q < Q
                                    ? abs_dy[std::size_t(((n * s.K + k) * P + p) * Q + q)]
                                    : 0.0;
                        }
                    E.push_back(sandwich(G2, e));
                }
                for (std::int64_t k = 0; k < s.K; ++k)
                    for (std::int64_t c = 0; c < s.C; ++c)
                        for (int p = 0; p < 16; ++p)
                            sums[std::size_t((k * s.C + c) * 16 + p)] +=
                                E[std::size_t(k)][std::size_t(p)] *
                                V[std::size_t(c)][std::size_t(p)];
            }
    std::vector<double> scale(static_cast<std::size_t>(s.K * s.C * 9));
    for (std::int64_t f = 0; f < s.K * s.C; ++f) {
        const std::vector<double> dw = sandwich(A2T, &sums[std::size_t(f * 16)]);
        std::copy(dw.begin(), dw.end(), scale.begin() + f * 9);
    }
    return scale;
}

}  // namespace winograd

// The error model of winograd's 5x5 filters, F(4, 5) along columns (cpu/eigen_omp/
// conv_winograd.cpp): every tile of four output rows is, per filter column s and input channel c,
// A^T [(G w[k, c, :, s]) . (B^T x[c, 4i .. 4i + 7, q + s])], the 8 products of each point b summed
// over (c, s) first (common/winograd.hpp has the matrices). So, as above, the error of every
// output is below (roundings) u S with
//   S = sum_b |A^T[a, b]| sum over c, s of (|G| |w[k, c, :, s]|)_b (|B^T| |x[c, 4i .., q + s]|)_b
// and the roundings: 1 in U = G w (made in double), k_B in B^T x (roundings() below: 6, B^T's
// rows add up to 6 terms, with 17/4 among them), 1 product, at most C S - 1 in the sum over
// (c, s), k_A in A^T (6), and one for the bias: 5 C + 14. backward_data: the same on dy, no
// bias: 5 K + 13. backward_weights: dw[k, c, r, s] = sum_b G[b, r] sum over tiles (A e)_b
// (B^T x)_b, e dy's four rows: k_A' in A e (3), k_B in B^T x, 1 product, at most
// N ceil(P/4) Q - 1 in the sum, 1 in G^T (double): N ceil(P/4) Q + 10.
namespace columns {

const WinogradMatrices& f = winograd_f4_5;
constexpr int points = WinogradMatrices::alpha, m = WinogradMatrices::m;

// The roundings of M times a vector (M rows x cols, row-major rows `stride` apart), as the kernels
// compute it: per row, its nonzero terms less one, and one more if a coefficient is not a power
// of two; the most of any row.
int roundings(const double* M, int rows, int cols, int stride) {
    int most = 0;
    for (int i = 0; i < rows; ++i) {
        int terms = 0, inexact = 0;
        for (int j = 0; j < cols; ++j) {
            const double c = M[i * stride + j];
            int exponent = 0;
            terms += c != 0;
            inexact |= c != 0 && std::abs(std::frexp(c, &exponent)) != 0.5;
        }
        most = std::max(most, terms - 1 + inexact);
    }
    return most;
}
int k_B() { return roundings(&f.BT[0][0], points, points, points); }
int k_A() { return roundings(&f.AT[0][0], m, points, points); }
// A = (A^T)^T's: the roundings of E_b = A dy
int k_A_transposed() {
    double A[points][m];
    for (int b = 0; b < points; ++b)
        for (int a = 0; a < m; ++a) A[b][a] = f.AT[a][b];
    return roundings(&A[0][0], points, m, m);
}

// |T_b| of every image: [n][b][c][i][col] = sum_e |B^T[b, e]| |in[n, c]| at row m i + e - pad_h,
// column col - pad_w (0 outside), for i < ceil(P/m), col < Q + 4.
std::vector<double> transformed_rows(const std::vector<double>& in, std::int64_t images,
                                     std::int64_t ins, std::int64_t H, std::int64_t W,
                                     std::int64_t P, std::int64_t Q, std::int64_t pad_h,
                                     std::int64_t pad_w) {
    const std::int64_t tiles = ceil_div(P, std::int64_t{m}), cols = Q + 4;
    std::vector<double> T(std::size_t(images * points * ins * tiles * cols), 0.0);
    for (std::int64_t n = 0; n < images; ++n)
        for (int b = 0; b < points; ++b)
            for (std::int64_t c = 0; c < ins; ++c)
                for (std::int64_t i = 0; i < tiles; ++i)
                    for (std::int64_t col = 0; col < cols; ++col) {
                        double sum = 0;
                        for (int e = 0; e < points; ++e) {
                            const std::int64_t h = m * i + e - pad_h, w = col - pad_w;
                            if (h >= 0 && h < H && w >= 0 && w < W)
                                sum += std::abs(f.BT[b][e]) *
                                       in[std::size_t(((n * ins + c) * H + h) * W + w)];
                        }
                        T[std::size_t((((n * points + b) * ins + c) * tiles + i) * cols + col)] =
                            sum;
                    }
    return T;
}

// S for every output (images, outs, P, Q) of |in| (images, ins, H, W) correlated with the
// filters |filter(o, i)| (5x5), padded by (pad_h, pad_w).
template <typename Filter>
std::vector<double> correlation_scale(const std::vector<double>& in, std::int64_t images,
                                      std::int64_t ins, std::int64_t H, std::int64_t W,
                                      std::int64_t outs, std::int64_t P, std::int64_t Q,
                                      std::int64_t pad_h, std::int64_t pad_w, Filter filter) {
    const std::int64_t tiles = ceil_div(P, std::int64_t{m}), cols = Q + 4;
    const std::vector<double> T = transformed_rows(in, images, ins, H, W, P, Q, pad_h, pad_w);
    std::vector<double> U(std::size_t(points * outs * ins * 5), 0.0);  // [b][o][i][s]
    for (int b = 0; b < points; ++b)
        for (std::int64_t o = 0; o < outs; ++o)
            for (std::int64_t i = 0; i < ins; ++i)
                for (int s = 0; s < 5; ++s)
                    for (int r = 0; r < 5; ++r)
                        U[std::size_t(((b * outs + o) * ins + i) * 5 + s)] +=
                            std::abs(f.G[b][r]) * filter(o, i)[r * 5 + s];
    std::vector<double> scale(std::size_t(images * outs * P * Q), 0.0);
    for (std::int64_t n = 0; n < images; ++n)
        for (std::int64_t o = 0; o < outs; ++o)
            for (std::int64_t tile = 0; tile < tiles; ++tile)
                for (std::int64_t q = 0; q < Q; ++q)
                    for (int b = 0; b < points; ++b) {
                        double product = 0;  // |M_b|
                        for (std::int64_t i = 0; i < ins; ++i)
                            for (int s = 0; s < 5; ++s)
                                product +=
                                    U[std::size_t(((b * outs + o) * ins + i) * 5 + s)] *
                                    T[std::size_t((((n * points + b) * ins + i) * tiles + tile) *
                                                      cols +
                                                  q + s)];
                        for (std::int64_t a = 0; a < m && m * tile + a < P; ++a)
                            scale[std::size_t(((n * outs + o) * P + m * tile + a) * Q + q)] +=
                                std::abs(f.AT[a][b]) * product;
                    }
    return scale;
}

double forward_roundings(const Conv2dShape& s) { return double(5 * s.C + 2 + k_B() + k_A()); }
std::vector<double> forward_scale(const Conv2dShape& s, const std::vector<double>& abs_x,
                                  const std::vector<double>& abs_w) {
    return correlation_scale(
        abs_x, s.N, s.C, s.H, s.W, s.K, s.P(), s.Q(), s.pad_h, s.pad_w,
        [&](std::int64_t k, std::int64_t c) { return &abs_w[std::size_t((k * s.C + c) * 25)]; });
}

double backward_data_roundings(const Conv2dShape& s) { return double(5 * s.K + 1 + k_B() + k_A()); }
std::vector<double> backward_data_scale(const Conv2dShape& s, const std::vector<double>& abs_dy,
                                        const std::vector<double>& abs_w) {
    const std::vector<double> rotated = rotated_filters(s, abs_w);
    return correlation_scale(
        abs_dy, s.N, s.K, s.P(), s.Q(), s.C, s.H, s.W, 4 - s.pad_h, 4 - s.pad_w,
        [&](std::int64_t c, std::int64_t k) { return &rotated[std::size_t((c * s.K + k) * 25)]; });
}

// The terms of dw's sum: N ceil(P/m) Q.
double backward_weights_terms(const Conv2dShape& s) {
    return double(s.N * ceil_div(s.P(), std::int64_t{m}) * s.Q());
}
double backward_weights_roundings(const Conv2dShape& s) {
    return backward_weights_terms(s) + 1 + k_A_transposed() + k_B();
}
std::vector<double> backward_weights_scale(const Conv2dShape& s, const std::vector<double>& abs_x,
                                           const std::vector<double>& abs_dy) {
    const std::int64_t P = s.P(), Q = s.Q(), tiles = ceil_div(P, std::int64_t{m}), cols = Q + 4;
    const std::vector<double> T =
        transformed_rows(abs_x, s.N, s.C, s.H, s.W, P, Q, s.pad_h, s.pad_w);
    std::vector<double> sums(std::size_t(points * s.K * s.C * 5), 0.0);  // [b][k][c][s]
    for (std::int64_t n = 0; n < s.N; ++n)
        for (int b = 0; b < points; ++b)
            for (std::int64_t k = 0; k < s.K; ++k)
                for (std::int64_t tile = 0; tile < tiles; ++tile)
                    for (std::int64_t q = 0; q < Q; ++q) {
                        double e = 0;  // |A e|_b
                        for (std::int64_t a = 0; a < m && m * tile + a < P; ++a)
                            e += std::abs(f.AT[a][b]) *
                                 abs_dy[std::size_t(((n * s.K + k) * P + m * tile + a) * Q + q)];
                        if (e == 0) continue;
                        for (std::int64_t c = 0; c < s.C; ++c)
                            for (int col = 0; col < 5; ++col)
                                sums[std::size_t(((b * s.K + k) * s.C + c) * 5 + col)] +=
                                    e * T[std::size_t(
                                            (((n * points + b) * s.C + c) * tiles + tile) * cols +
                                            q + col)];
                    }
    std::vector<double> scale(std::size_t(s.K * s.C * 25), 0.0);
    for (std::int64_t filter = 0; filter < s.K * s.C; ++filter)
        for (int r = 0; r < 5; ++r)
            for (int col = 0; col < 5; ++col)
                for (int b = 0; b < points; ++b)
                    scale[std::size_t((filter * 5 + r) * 5 + col)] +=
                        std::abs(f.G[b][r]) * sums[std::size_t((b * s.K * s.C + filter) * 5 + col)];
    return scale;
}

}  // namespace columns

// The bound of a bias gradient, as bias_backward's: a sum of N P Q terms in any order,
// 2 (N P Q + 1) u sum|dy|, whatever the algorithm (no pass needs a transform for it).
double bias_gradient_rtol(const Conv2dShape& s) {
    return 2.0 * double(s.N * s.P() * s.Q() + 1) * unit_roundoff;
}

}  // namespace

// conv2d_forward. Tolerance:
//   direct, im2col: y = b + a dot product of at most C R S terms, as gemm:
//                   2 (C R S + 2) u (sum|x w| + |b|);
//   fft:            per output plane (n, k), the bound above with C channels, plus the bias's
//                   rounding: u ((16 L + C + 3) sum_c ||x[n, c]|| ||w[k, c]|| + |b[k]|);
//                   doubled;
//   winograd:       2u ((C + 11) S + |b|), S as in winograd:: above (3x3); 5x5:
//                   2u ((5C + 14) S + |b|), S as in columns::.
CaseResult check_conv2d_forward(const Backend& backend, const Conv2dShape& s,
                                ConvAlgorithm algorithm, std::uint64_t seed, Values values) {
    s.validate();
    Rng rng(seed);
    std::vector<float> x = random_values(s.x_shape().elements(), rng);
    const std::vector<float> w = random_values(s.w_shape().elements(), rng);
    const std::vector<float> b = random_values(s.K, rng);
    if (values == Values::non_finite) plant_three_non_finite(x, rng);
    const std::vector<double> wide_x = widen(x), wide_w = widen(w), abs_b = absolute(widen(b));
    std::vector<double> ref(static_cast<std::size_t>(s.y_shape().elements())), scale(ref.size());
    cpu_naive::conv2d_forward<double>(s, wide_x.data(), wide_w.data(), widen(b).data(), ref.data());

    double rtol = 0;
    CaseResult r = result_for(backend, "conv2d_forward", describe(s, algorithm, values));
    if (algorithm == ConvAlgorithm::fft) {
        const std::int64_t PQ = s.P() * s.Q();
        scale = fft_scale(s, plane_norms(wide_x, s.N * s.C, s.H * s.W),
                          transposed(plane_norms(wide_w, s.K * s.C, s.R * s.S), s.K, s.C), s.N, s.C,
                          s.K, PQ, s.C + 3);
        for (std::size_t i = 0; i < scale.size(); ++i) scale[i] += abs_b[(i / PQ) % s.K];
        rtol = 2 * unit_roundoff;
        r.tolerance = "2u((16L+C+3)|x||w|+|b|)";
    } else if (algorithm == ConvAlgorithm::winograd && winograd_applies(s) && s.R == 5) {
        scale = columns::forward_scale(s, absolute(wide_x), absolute(wide_w));
        const double roundings = columns::forward_roundings(s);
        for (std::size_t i = 0; i < scale.size(); ++i)
            scale[i] = roundings * scale[i] + abs_b[(i / (s.P() * s.Q())) % s.K];
        rtol = 2 * unit_roundoff;
        r.tolerance = format("2u((5C+%g)S+|b|)", roundings - double(5 * s.C));  // 5C+14
    } else if (algorithm == ConvAlgorithm::winograd && winograd_applies(s)) {
        scale = winograd::forward_scale(s, absolute(wide_x), absolute(wide_w));
        const double roundings = double(s.C + 11);
        for (std::size_t i = 0; i < scale.size(); ++i)
            scale[i] = roundings * scale[i] + abs_b[(i / (s.P() * s.Q())) % s.K];
        rtol = 2 * unit_roundoff;
        r.tolerance = "2u((C+11)S+|b|)";
    } else {
        cpu_naive::conv2d_forward<double>(s, absolute(wide_x).data(), absolute(wide_w).data(),
                                          abs_b.data(), scale.data());
        rtol = 2.0 * double(s.C * s.R * s.S + 2) * unit_roundoff;
        r.tolerance = format("%.2g * sum|x*w|", rtol);
    }

    const Tensor X = backend.upload(s.x_shape(), x);
    const Tensor Wt = backend.upload(s.w_shape(), w);
    const Tensor B = backend.upload(s.b_shape(), b);
    Tensor Y = fresh_output(backend, s.y_shape(), values);
    r.seconds = timed(backend, [&] { backend.conv2d_forward(s, algorithm, X, Wt, B, Y); });
    r.comparison = compare_conv(backend.download(Y), ref, Tolerance{rtol, 0.0}, scale, values,
                                spread_of(algorithm, Spread::none));
    return r;
}

// conv2d_backward_data. Tolerance:
//   direct, im2col: dx is a sum of at most K ceil(R / stride_h) ceil(S / stride_w) products,
//                   or (im2col) K-term dot products of which col2im adds at most R S: either
//                   way fewer than K R S + 1 roundings: 2 (K R S + 2) u sum|dy w|;
//   fft:            per input plane (n, c), K planes added:
//                   2u (16 L + K + 2) sum_k ||dy[n, k]|| ||w[k, c]||;
//   winograd:       2u (K + 11) S (3x3); 5x5: 2u (5K + 13) S.
CaseResult check_conv2d_backward_data(const Backend& backend, const Conv2dShape& s,
                                      ConvAlgorithm algorithm, std::uint64_t seed, Values values) {
    s.validate();
    Rng rng(seed);
    std::vector<float> dy = random_values(s.y_shape().elements(), rng);
    const std::vector<float> w = random_values(s.w_shape().elements(), rng);
    if (values == Values::non_finite) plant_three_non_finite(dy, rng);
    const std::vector<double> wide_dy = widen(dy), wide_w = widen(w);
    std::vector<double> ref(static_cast<std::size_t>(s.x_shape().elements())), scale(ref.size());
    cpu_naive::conv2d_backward_data<double>(s, wide_dy.data(), wide_w.data(), ref.data());

    double rtol = 0;
    CaseResult r = result_for(backend, "conv2d_backward_data", describe(s, algorithm, values));
    if (algorithm == ConvAlgorithm::fft) {
        scale =
            fft_scale(s, plane_norms(wide_dy, s.N * s.K, s.P() * s.Q()),
                      plane_norms(wide_w, s.K * s.C, s.R * s.S), s.N, s.K, s.C, s.H * s.W, s.K + 2);
        rtol = 2 * unit_roundoff;
        r.tolerance = "2u(16L+K+2)|dy||w|";
    } else if (algorithm == ConvAlgorithm::winograd && winograd_applies(s) && s.R == 5) {
        scale = columns::backward_data_scale(s, absolute(wide_dy), absolute(wide_w));
        const double roundings = columns::backward_data_roundings(s);
        rtol = 2.0 * roundings * unit_roundoff;
        r.tolerance = format("2u(5K+%g)S", roundings - double(5 * s.K));
    } else if (algorithm == ConvAlgorithm::winograd && winograd_applies(s)) {
        scale = winograd::backward_data_scale(s, absolute(wide_dy), absolute(wide_w));
        rtol = 2.0 * double(s.K + 11) * unit_roundoff;
        r.tolerance = "2u(K+11)S";
    } else {
        cpu_naive::conv2d_backward_data<double>(s, absolute(wide_dy).data(),
                                                absolute(wide_w).data(), scale.data());
        rtol = 2.0 * double(s.K * s.R * s.S + 2) * unit_roundoff;
        r.tolerance = format("%.2g * sum|dy*w|", rtol);
    }

    const Tensor dY = backend.upload(s.y_shape(), dy);
    const Tensor Wt = backend.upload(s.w_shape(), w);
    Tensor dX = fresh_output(backend, s.x_shape(), values);
    r.seconds = timed(backend, [&] { backend.conv2d_backward_data(s, algorithm, dY, Wt, dX); });
    r.comparison = compare_conv(backend.download(dX), ref, Tolerance{rtol, 0.0}, scale, values,
                                spread_of(algorithm, Spread::none));
    return r;
}

// conv2d_backward_weights: {dw, db}. Tolerance:
//   dw, direct and im2col: a sum of N P Q products (im2col: per-image GEMMs of P Q terms, then N
//                          of them added): 2 (N P Q + 2) u sum|dy x|;
//   dw, fft:               per filter plane (k, c), N planes added:
//                          2u (16 L + N + 2) sum_n ||x[n, c]|| ||dy[n, k]||;
//   dw, winograd:          2u (T + 8) S, T the tiles of all images (3x3); 5x5: 2u (T + 10) S,
//                          T = N ceil(P/4) Q;
//   db:                    bias_gradient_rtol, for every algorithm.
std::vector<CaseResult> check_conv2d_backward_weights(const Backend& backend, const Conv2dShape& s,
                                                      ConvAlgorithm algorithm, std::uint64_t seed,
                                                      Values values) {
    s.validate();
    Rng rng(seed);
    std::vector<float> x = random_values(s.x_shape().elements(), rng);
    std::vector<float> dy = random_values(s.y_shape().elements(), rng);
    if (values == Values::non_finite) {
        plant_three_non_finite(x, rng);
        plant_three_non_finite(dy, rng);
    }
    const std::vector<double> wide_x = widen(x), wide_dy = widen(dy);
    std::vector<double> ref_dw(static_cast<std::size_t>(s.w_shape().elements())),
        scale_dw(ref_dw.size()), ref_db(static_cast<std::size_t>(s.K)), scale_db(ref_db.size());
    cpu_naive::conv2d_backward_weights<double>(s, wide_x.data(), wide_dy.data(), ref_dw.data(),
                                               ref_db.data());
    // sum|dy x| and sum|dy|: the same pass on |x| and |dy|.
    cpu_naive::conv2d_backward_weights<double>(s, absolute(wide_x).data(), absolute(wide_dy).data(),
                                               scale_dw.data(), scale_db.data());

    CaseResult dw =
        result_for(backend, "conv2d_backward_weights", describe(s, algorithm, values, "dw"));
    double rtol = 0;
    if (algorithm == ConvAlgorithm::fft) {
        // Planes (k, c) of dw from dy's norms as (K, N) and x's as (N, C).
        scale_dw =
            fft_scale(s, transposed(plane_norms(wide_dy, s.N * s.K, s.P() * s.Q()), s.N, s.K),
                      plane_norms(wide_x, s.N * s.C, s.H * s.W), s.K, s.N, s.C, s.R * s.S, s.N + 2);
        rtol = 2 * unit_roundoff;
        dw.tolerance = "2u(16L+N+2)|x||dy|";
    } else if (algorithm == ConvAlgorithm::winograd && winograd_applies(s) && s.R == 5) {
        scale_dw = columns::backward_weights_scale(s, absolute(wide_x), absolute(wide_dy));
        const double roundings = columns::backward_weights_roundings(s);
        rtol = 2.0 * roundings * unit_roundoff;
        dw.tolerance = format("2u(T+%g)S", roundings - columns::backward_weights_terms(s));
    } else if (algorithm == ConvAlgorithm::winograd && winograd_applies(s)) {
        scale_dw = winograd::backward_weights_scale(s, absolute(wide_x), absolute(wide_dy));
        const std::int64_t tiles =
            s.N * ceil_div(s.P(), std::int64_t{2}) * ceil_div(s.Q(), std::int64_t{2});
        rtol = 2.0 * double(tiles + 8) * unit_roundoff;
        dw.tolerance = "2u(T+8)S";
    } else {
        rtol = 2.0 * double(s.N * s.P() * s.Q() + 2) * unit_roundoff;
        dw.tolerance = format("%.2g * sum|dy*x|", rtol);
    }
    CaseResult db =
        result_for(backend, "conv2d_backward_weights", describe(s, algorithm, values, "db"));
    db.tolerance = format("%.2g * sum|dy|", bias_gradient_rtol(s));

    const Tensor X = backend.upload(s.x_shape(), x);
    const Tensor dY = backend.upload(s.y_shape(), dy);
    Tensor dW = fresh_output(backend, s.w_shape(), values);
    Tensor dB = fresh_output(backend, s.b_shape(), values);
    dw.seconds = db.seconds =
        timed(backend, [&] { backend.conv2d_backward_weights(s, algorithm, X, dY, dW, dB); });
    dw.comparison = compare_conv(backend.download(dW), ref_dw, Tolerance{rtol, 0.0}, scale_dw,
                                 values, spread_of(algorithm, Spread::nan));
    db.comparison =
        compare_conv(backend.download(dB), ref_db, Tolerance{bias_gradient_rtol(s), 0.0}, scale_db,
                     values, spread_of(algorithm, Spread::none));
    return {dw, db};
}

namespace {

// Max pooling's input: uniform in [-1, 0.25), rounded to a multiple of 1/8, so only 11 values
// occur. A sixth of 2x2 windows and a third of 3x3 ones then hold their maximum twice or more (the
// first in row-major order must win, in y and in argmax; -0 ties with +0), and a third of 2x2
// windows are all negative (a padding element read as 0, or a maximum started at 0, shows).
std::vector<float> tied_values(std::int64_t count, Rng& rng) {
    std::vector<float> x = random_values(count, rng, -1.0f, 0.25f);
    for (float& v : x) v = std::round(v * 8.0f) / 8.0f;
    return x;
}

// "N2 C3 ... pad 1,1", or with " NaN+-inf" for a case of non-finite inputs.
std::string describe(const Pool2dShape& s, Values values) {
    return values == Values::non_finite ? s.str() + " NaN+-inf" : s.str();
}

// The most windows one input element can fall in: ceil(window / stride) in each dimension.
std::int64_t windows_per_element(const Pool2dShape& s) {
    return ceil_div(s.window_h, s.stride_h) * ceil_div(s.window_w, s.stride_w);
}

}  // namespace

// max_pool2d_forward: {y, argmax}. Tolerance: none. Both only copy an input value or its index
// (exact in a float up to 2^24, which Pool2dShape::validate ensures).
std::vector<CaseResult> check_max_pool2d_forward(const Backend& backend, const Pool2dShape& s,
                                                 std::uint64_t seed, Values values) {
    s.validate("max_pool2d_forward");
    Rng rng(seed);
    std::vector<float> x = tied_values(s.x_shape().elements(), rng);
    if (values == Values::non_finite) plant_non_finite(x);
    std::vector<double> ref_y(static_cast<std::size_t>(s.y_shape().elements())),
        ref_argmax(ref_y.size());
    cpu_naive::max_pool2d_forward<double>(s, widen(x).data(), ref_y.data(), ref_argmax.data());

    const Tensor X = backend.upload(s.x_shape(), x);
    Tensor Y = fresh_output(backend, s.y_shape(), values);
    Tensor Argmax = fresh_output(backend, s.y_shape(), values);
    const std::string shape = s.str() + (values == Values::non_finite ? " NaN+-inf" : "");
    CaseResult y = result_for(backend, "max_pool2d_forward", shape + " y");
    CaseResult argmax = result_for(backend, "max_pool2d_forward", shape + " argmax");
    y.seconds = argmax.seconds =
        timed(backend, [&] { backend.max_pool2d_forward(s, X, Y, Argmax); });
    y.tolerance = "exact";
    argmax.tolerance = "exact (first of ties, first NaN)";
    y.comparison = compare(backend.download(Y), ref_y, Tolerance{});
    argmax.comparison = compare(backend.download(Argmax), ref_argmax, Tolerance{});
    return {y, argmax};
}

// max_pool2d_backward, argmax the reference's on tied_values, dy uniform in [-1, 1). Tolerance:
// where windows do not overlap, each dx is one dy or 0: exact. Otherwise an element collects at
// most m = windows_per_element dy values, a sum of m terms: 2 (m + 1) u sum|dy|.
CaseResult check_max_pool2d_backward(const Backend& backend, const Pool2dShape& s,
                                     std::uint64_t seed, Values values) {
    s.validate("max_pool2d_backward");
    Rng rng(seed);
    const std::vector<float> x = tied_values(s.x_shape().elements(), rng);
    std::vector<float> dy = random_values(s.y_shape().elements(), rng);
    if (values == Values::non_finite) plant_non_finite(dy);
    std::vector<double> y(static_cast<std::size_t>(s.y_shape().elements())), argmax(y.size());
    cpu_naive::max_pool2d_forward<double>(s, widen(x).data(), y.data(), argmax.data());
    const std::vector<double> wide_dy = widen(dy);
    std::vector<double> ref(static_cast<std::size_t>(s.x_shape().elements())), scale(ref.size());
    cpu_naive::max_pool2d_backward<double>(s, wide_dy.data(), argmax.data(), ref.data());
    cpu_naive::max_pool2d_backward<double>(s, absolute(wide_dy).data(), argmax.data(),
                                           scale.data());

    const Tensor dY = backend.upload(s.y_shape(), dy);
    const Tensor Argmax =
        backend.upload(s.y_shape(), std::vector<float>(argmax.begin(), argmax.end()));
    Tensor dX = fresh_output(backend, s.x_shape(), values);
    CaseResult r = result_for(backend, "max_pool2d_backward", describe(s, values));
    r.seconds = timed(backend, [&] { backend.max_pool2d_backward(s, dY, Argmax, dX); });
    const std::int64_t m = windows_per_element(s);
    const double rtol = m == 1 ? 0.0 : 2.0 * double(m + 1) * unit_roundoff;
    r.tolerance = m == 1 ? "exact" : format("%.2g * sum|dy|", rtol);
    r.comparison = compare(backend.download(dX), ref, Tolerance{rtol, 0.0}, scale);
    return r;
}

// avg_pool2d_forward, x uniform in [-1, 1). Tolerance: a sum of at most window_h window_w terms,
// then a division (or a multiplication by a rounded reciprocal, two roundings):
// 2 (window_h window_w + 2) u mean|x|.
CaseResult check_avg_pool2d_forward(const Backend& backend, const Pool2dShape& s,
                                    std::uint64_t seed, Values values) {
    s.validate("avg_pool2d_forward");
    Rng rng(seed);
    std::vector<float> x = random_values(s.x_shape().elements(), rng);
    if (values == Values::non_finite) plant_non_finite(x);
    const std::vector<double> wide_x = widen(x);
    std::vector<double> ref(static_cast<std::size_t>(s.y_shape().elements())), scale(ref.size());
    cpu_naive::avg_pool2d_forward<double>(s, wide_x.data(), ref.data());
    cpu_naive::avg_pool2d_forward<double>(s, absolute(wide_x).data(), scale.data());

    const Tensor X = backend.upload(s.x_shape(), x);
    Tensor Y = fresh_output(backend, s.y_shape(), values);
    CaseResult r = result_for(backend, "avg_pool2d_forward", describe(s, values));
    r.seconds = timed(backend, [&] { backend.avg_pool2d_forward(s, X, Y); });
    const double rtol = 2.0 * double(s.window_h * s.window_w + 2) * unit_roundoff;
    r.tolerance = format("%.2g * mean|x|", rtol);
    r.comparison = compare(backend.download(Y), ref, Tolerance{rtol, 0.0}, scale);
    return r;
}

// avg_pool2d_backward, dy uniform in [-1, 1). Tolerance: each share dy / count is at most two
// roundings, and an element adds at most m = windows_per_element shares: 2 (m + 2) u
// sum|dy / count|.
CaseResult check_avg_pool2d_backward(const Backend& backend, const Pool2dShape& s,
                                     std::uint64_t seed, Values values) {
    s.validate("avg_pool2d_backward");
    Rng rng(seed);
    std::vector<float> dy = random_values(s.y_shape().elements(), rng);
    if (values == Values::non_finite) plant_non_finite(dy);
    const std::vector<double> wide_dy = widen(dy);
    std::vector<double> ref(static_cast<std::size_t>(s.x_shape().elements())), scale(ref.size());
    cpu_naive::avg_pool2d_backward<double>(s, wide_dy.data(), ref.data());
    cpu_naive::avg_pool2d_backward<double>(s, absolute(wide_dy).data(), scale.data());

    const Tensor dY = backend.upload(s.y_shape(), dy);
    Tensor dX = fresh_output(backend, s.x_shape(), values);
    CaseResult r = result_for(backend, "avg_pool2d_backward", describe(s, values));
    r.seconds = timed(backend, [&] { backend.avg_pool2d_backward(s, dY, dX); });
    const double rtol = 2.0 * double(windows_per_element(s) + 2) * unit_roundoff;
    r.tolerance = format("%.2g * sum|dy/n|", rtol);
    r.comparison = compare(backend.download(dX), ref, Tolerance{rtol, 0.0}, scale);
    return r;
}

// --- shapes and the OpChecks -------------------------------------------------------------------

namespace {

// Rethrows an invalid shape's message with the --shape text in front, so the user sees both.
template <typename Parsed, typename Validate>
Parsed validated(const std::string& op, const std::string& text, Parsed shape, Validate validate) {
    try {
        validate(shape);
    } catch (const InvalidArgument& e) {
        throw InvalidArgument(op + ": --shape '" + text + "' is not valid: " + e.what());
    }
    return shape;
}

}  // namespace

Conv2dShape parse_conv2d_shape(const std::string& text) {
    const std::vector<std::int64_t> v = parse_sizes("conv2d", text);
    if (v.size() != 7 && v.size() != 9 && v.size() != 11)
        throw InvalidArgument(
            "conv2d: --shape takes N,C,H,W,K,R,S[,STRIDE,PAD] or "
            "N,C,H,W,K,R,S,STRIDE_H,STRIDE_W,PAD_H,PAD_W (7, 9 or 11 sizes), got '" +
            text + "'");
    Conv2dShape s{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
    if (v.size() == 9) {
        s.stride_h = s.stride_w = v[7];
        s.pad_h = s.pad_w = v[8];
    }
    if (v.size() == 11) {
        s.stride_h = v[7];
        s.stride_w = v[8];
        s.pad_h = v[9];
        s.pad_w = v[10];
    }
    return validated("conv2d", text, s, [](const Conv2dShape& c) { c.validate(); });
}

Pool2dShape parse_pool2d_shape(const std::string& op, const std::string& text) {
    const std::vector<std::int64_t> v = parse_sizes(op, text);
    if (v.size() != 6 && v.size() != 7 && v.size() != 10)
        throw InvalidArgument(op +
                              ": --shape takes N,C,H,W,WINDOW,STRIDE[,PAD] or "
                              "N,C,H,W,WINDOW_H,WINDOW_W,STRIDE_H,STRIDE_W,PAD_H,PAD_W (6, 7 or "
                              "10 sizes), got '" +
                              text + "'");
    Pool2dShape s{v[0], v[1], v[2], v[3], v[4], v[4], v[5], v[5]};
    if (v.size() == 7) s.pad_h = s.pad_w = v[6];
    if (v.size() == 10) s = Pool2dShape{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]};
    return validated(op, text, s, [&](const Pool2dShape& p) { p.validate(op); });
}

namespace {

// Runs `check` (one pass, or one algorithm of one pass) and appends what it returns; an
// Unsupported refusal becomes a result saying so (CaseResult::not_run), and the other passes and
// algorithms still run. gpu_vendor's cuDNN refuses FFT with a stride, for example, but has direct.
template <typename Check>
void run_or_note(std::vector<CaseResult>& results, const Backend& b, const std::string& op,
                 const std::string& shape, Check check) {
    try {
        if constexpr (std::is_same_v<decltype(check()), CaseResult>)
            results.push_back(check());
        else
            for (CaseResult& r : check()) results.push_back(std::move(r));
    } catch (const Unsupported& e) {
        CaseResult r = result_for(b, op, shape);
        r.not_run = e.what();
        results.push_back(std::move(r));
    }
}

// Every pass with every algorithm the backend has. A backend with none is asked for direct, so
// that it says itself that it has no conv2d (Unsupported).
std::vector<CaseResult> run_conv2d(const Backend& b, const std::string& text, std::uint64_t seed) {
    const Conv2dShape s = parse_conv2d_shape(text);
    // x and w as floats and doubles, y (or dy) with its reference and scale.
    require_memory("conv2d", text,
                   16.0 * (double(s.N) * double(s.C) * double(s.H) * double(s.W) +
                           double(s.K) * double(s.C) * double(s.R) * double(s.S)) +
                       24.0 * double(s.N) * double(s.K) * double(s.P()) * double(s.Q()));
    std::vector<ConvAlgorithm> algorithms = b.conv2d_algorithms();
    if (algorithms.empty()) algorithms = {ConvAlgorithm::direct};
    std::vector<CaseResult> results;
    for (Values values : {Values::finite, Values::non_finite})
        for (ConvAlgorithm a : algorithms) {
            const std::string shape = describe(s, a, values);
            run_or_note(results, b, "conv2d_forward", shape,
                        [&] { return check_conv2d_forward(b, s, a, seed, values); });
            run_or_note(results, b, "conv2d_backward_data", shape,
                        [&] { return check_conv2d_backward_data(b, s, a, seed, values); });
            run_or_note(results, b, "conv2d_backward_weights", shape,
                        [&] { return check_conv2d_backward_weights(b, s, a, seed, values); });
        }
    return results;
}

// At least what the backward check of a pooling holds at once: x (floats, and doubles for max
// pooling's forward reference), dx with its reference and scale (doubles), dy.
double pool_check_bytes(const Pool2dShape& s) {
    const double x = double(s.N) * double(s.C) * double(s.H) * double(s.W);
    const double y = double(s.N) * double(s.C) * double(s.P()) * double(s.Q());
    return 24.0 * x + 8.0 * y;
}

std::vector<CaseResult> run_max_pool2d(const Backend& b, const std::string& text,
                                       std::uint64_t seed) {
    const Pool2dShape s = parse_pool2d_shape("max_pool2d", text);
    require_memory("max_pool2d", text, pool_check_bytes(s));
    std::vector<CaseResult> results;
    for (Values values : {Values::finite, Values::non_finite}) {
        run_or_note(results, b, "max_pool2d_forward", describe(s, values),
                    [&] { return check_max_pool2d_forward(b, s, seed, values); });
        run_or_note(results, b, "max_pool2d_backward", describe(s, values),
                    [&] { return check_max_pool2d_backward(b, s, seed, values); });
    }
    return results;
}

std::vector<CaseResult> run_avg_pool2d(const Backend& b, const std::string& text,
                                       std::uint64_t seed) {
    const Pool2dShape s = parse_pool2d_shape("avg_pool2d", text);
    require_memory("avg_pool2d", text, pool_check_bytes(s));
    std::vector<CaseResult> results;
    for (Values values : {Values::finite, Values::non_finite}) {
        run_or_note(results, b, "avg_pool2d_forward", describe(s, values),
                    [&] { return check_avg_pool2d_forward(b, s, seed, values); });
        run_or_note(results, b, "avg_pool2d_backward", describe(s, values),
                    [&] { return check_avg_pool2d_backward(b, s, seed, values); });
    }
    return results;
}

}  // namespace

// --- the benchmark rows of convolution and pooling --------------------------------------------

namespace {

Tensor bench_tensor(const Backend& b, const Shape& shape) {
    return b.upload(shape, bench_values(shape.elements()));
}

struct NamedConv {
    std::string name;
    Conv2dShape shape;
};

// Conv2dShape from (N, C, H, W, K, R = S, stride, pad): square filters, strides and padding.
Conv2dShape square(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K,
                   std::int64_t R, std::int64_t stride, std::int64_t pad) {
    return Conv2dShape{.N = N,
                       .C = C,
                       .H = H,
                       .W = W,
                       .K = K,
                       .R = R,
                       .S = R,
                       .stride_h = stride,
                       .stride_w = stride,
                       .pad_h = pad,
                       .pad_w = pad};
}

// The named shapes (N, C, H, W, K, R x S, stride, pad):
//   lenet_conv1  64, 1, 28, 28,  6,  5x5, 1, 2    LeNet's first layer: one input channel
//   lenet_conv2  64, 6, 14, 14, 16,  5x5, 1, 0    its second
//   resnet_3x3   16, 64, 56, 56, 64, 3x3, 1, 1    a ResNet stage-1 layer: GEMM-sized work
//   large_11x11   8, 16, 64, 64, 16, 11x11, 1, 5  a large filter, where FFT pays off
// --quick runs two small shapes; simulator variants one tiny shape; cpu_naive's seven loops run
// far below the other variants (lesson 08's program prints each one's GFLOP/s), so it runs the
// shapes of at most 1e8 flops (the LeNet layers): ResNet's layer, 3.7e9 flops a forward, would
// hold a run up for many seconds per row.
std::vector<NamedConv> conv_shapes(DeviceKind kind, bool quick) {
    if (kind == DeviceKind::Simulator) return {{"tiny", square(1, 2, 8, 8, 2, 3, 1, 1)}};
    if (quick)
        return {{"small_3x3", square(2, 4, 16, 16, 4, 3, 1, 1)},
                {"small_5x5_stride2", square(2, 3, 15, 15, 4, 5, 2, 2)}};
    return {{"lenet_conv1", square(64, 1, 28, 28, 6, 5, 1, 2)},
            {"lenet_conv2", square(64, 6, 14, 14, 16, 5, 1, 0)},
            {"resnet_3x3", square(16, 64, 56, 56, 64, 3, 1, 1)},
            {"large_11x11", square(8, 16, 64, 64, 16, 11, 1, 5)}};
}

// The filter-size sweep at a fixed input (N=8, C=16, H=W=64, K=16, R=S, pad R/2), forward only:
// FFT's cost stays flat while direct and im2col grow as R^2, so the rows show where it overtakes.
std::vector<NamedConv> sweep_shapes(DeviceKind kind, bool quick) {
    if (kind == DeviceKind::Simulator) return {};
    const std::int64_t largest = quick ? 7 : 15;
    std::vector<NamedConv> shapes;
    for (std::int64_t R = 3; R <= largest; R += 2)
        shapes.push_back(
            {"sweep_r" + std::to_string(R), quick ? square(1, 2, 16, 16, 2, R, 1, R / 2)
                                                  : square(8, 16, 64, 64, 16, R, 1, R / 2)});
    return shapes;
}

}  // namespace

std::string named_conv_shapes_json(bool quick) {
    std::string out;
    std::vector<std::string> seen;
    for (DeviceKind kind : {DeviceKind::Cpu, DeviceKind::Gpu, DeviceKind::Simulator}) {
        std::vector<NamedConv> shapes = conv_shapes(kind, quick);
        for (NamedConv& sweep : sweep_shapes(kind, quick)) shapes.push_back(sweep);
        for (const NamedConv& n : shapes) {
            if (std::find(seen.begin(), seen.end(), n.name) != seen.end()) continue;
            seen.push_back(n.name);
            const Conv2dShape& s = n.shape;
            std::string dims;
            for (std::int64_t v :
                 {s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.stride_h, s.stride_w, s.pad_h, s.pad_w})
                dims += (dims.empty() ? "" : ",") + std::to_string(v);
            out += (out.empty() ? "\"" : ", \"") + n.name + "\": \"" + dims + "\"";
        }
    }
    return "{" + out + "}";
}

namespace {

std::vector<NamedConv> affordable(const BenchContext& c, std::vector<NamedConv> shapes) {
    constexpr double naive_most_flops = 1e8;
    if (c.backend.variant() == "cpu_naive")
        std::erase_if(shapes,
                      [](const NamedConv& n) { return n.shape.flops() > naive_most_flops; });
    return shapes;
}

// The rows of one algorithm: forward alone (with the sweep), or forward, backward_data and
// backward_weights, one training step's conv work as PyTorch's autograd figure. Winograd's rows
// are the shapes it computes (3x3 and 5x5 at stride 1: the LeNet layers, resnet_3x3, sweep_r3 and
// sweep_r5). The work counted is the direct algorithm's multiply-adds whatever the algorithm
// (Conv2dShape::flops()), three times that for the three passes, so that GFLOP/s compare time for
// the same result.
std::function<std::vector<BenchCase>(const BenchContext&)> conv_rows(ConvAlgorithm algorithm,
                                                                     bool backward) {
    return [algorithm, backward](const BenchContext& c) {
        std::vector<BenchCase> cases;
        const std::vector<ConvAlgorithm> has = c.backend.conv2d_algorithms();
        if (std::find(has.begin(), has.end(), algorithm) == has.end()) return cases;
        std::vector<NamedConv> shapes = affordable(c, conv_shapes(c.kind, c.quick));
        if (!backward)
            for (NamedConv& sweep : affordable(c, sweep_shapes(c.kind, c.quick)))
                shapes.push_back(sweep);
        for (const NamedConv& n : shapes) {
            const Conv2dShape s = n.shape;
            if (!conv_algorithm_applies(algorithm, s)) continue;
            cases.push_back(
                {n.name,
                 (backward ? 3.0 : 1.0) * s.flops(),
                 {},
                 [s, algorithm, backward](const Backend& b) {
                     const Tensor x = bench_tensor(b, s.x_shape()),
                                  w = bench_tensor(b, s.w_shape());
                     const Tensor bias = bench_tensor(b, s.b_shape());
                     const Tensor dy = bench_tensor(b, s.y_shape());
                     Tensor y = b.allocate(s.y_shape()), dx = b.allocate(s.x_shape());
                     Tensor dw = b.allocate(s.w_shape()), db = b.allocate(s.b_shape());
                     // dx is checked after the warm-up: the output a strided layer is likeliest to
                     // leave unwritten (inputs that no window reads still get a 0).
                     return Workload{
                         [&b, s, algorithm, backward, x, w, bias, dy, y, dx, dw, db]() mutable {
                             b.conv2d_forward(s, algorithm, x, w, bias, y);
                             if (!backward) return;
                             b.conv2d_backward_data(s, algorithm, dy, w, dx);
                             b.conv2d_backward_weights(s, algorithm, x, dy, dw, db);
                         },
                         backward ? dx : y,
                         {}};
                 }});
        }
        return cases;
    };
}

// A square window with its stride and no padding, over a batch of square planes:
//   64x6x28x28_w2s2       LeNet's first pooling layer on a batch of 64 (2x2, stride 2: no overlap)
//   16x64x112x112_w3s2    ResNet's stem pooling on a batch of 16 (3x3, stride 2: windows overlap)
// A GPU adds each with 8 times the batch, so that launch overhead no longer hides the bandwidth.
struct PoolCase {
    std::int64_t N, C, H, W, window, stride;

    Pool2dShape shape() const { return Pool2dShape{N, C, H, W, window, window, stride, stride}; }
    std::string str() const {
        return std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(H) + "x" +
               std::to_string(W) + "_w" + std::to_string(window) + "s" + std::to_string(stride);
    }
};

std::vector<PoolCase> pool_cases(const BenchContext& c) {
    if (c.kind == DeviceKind::Simulator) return {{2, 3, 28, 28, 2, 2}, {1, 4, 30, 30, 3, 2}};
    if (c.quick) return {{8, 6, 28, 28, 2, 2}, {2, 16, 56, 56, 3, 2}};
    std::vector<PoolCase> cases{{64, 6, 28, 28, 2, 2}, {16, 64, 112, 112, 3, 2}};
    if (c.kind == DeviceKind::Gpu)
        cases.insert(cases.end(), {{512, 6, 28, 28, 2, 2}, {128, 64, 112, 112, 3, 2}});
    return cases;
}

// One pooling pass's rows. Its work, in bytes: each tensor it reads or writes once (x, dx:
// N·C·H·W floats; y, dy, argmax: N·C·P·Q floats), `x_floats` and `y_floats` of them.
std::function<std::vector<BenchCase>(const BenchContext&)> pool_rows(
    double x_floats, double y_floats,
    std::function<Workload(const Backend&, const Pool2dShape&)> prepare) {
    return [=](const BenchContext& c) {
        std::vector<BenchCase> cases;
        for (const PoolCase p : pool_cases(c)) {
            const Pool2dShape s = p.shape();
            const double work = 4.0 * (x_floats * double(s.x_shape().elements()) +
                                       y_floats * double(s.y_shape().elements()));
            cases.push_back(
                {p.str(), work, {}, [prepare, s](const Backend& b) { return prepare(b, s); }});
        }
        return cases;
    };
}

Workload max_pool_forward_workload(const Backend& b, const Pool2dShape& s) {
    const Tensor x = bench_tensor(b, s.x_shape());
    Tensor y = b.allocate(s.y_shape()), argmax = b.allocate(s.y_shape());
    return {[&b, s, x, y, argmax]() mutable { b.max_pool2d_forward(s, x, y, argmax); }, argmax, {}};
}

Workload max_pool_backward_workload(const Backend& b, const Pool2dShape& s) {
    const Tensor x = bench_tensor(b, s.x_shape()), dy = bench_tensor(b, s.y_shape());
    Tensor y = b.allocate(s.y_shape()), argmax = b.allocate(s.y_shape());
    b.max_pool2d_forward(s, x, y, argmax);  // real argmax indices, as training passes them
    Tensor dx = b.allocate(s.x_shape());
    return {
        [&b, s, dy, argmax, dx]() mutable { b.max_pool2d_backward(s, dy, argmax, dx); }, dx, {}};
}

Workload avg_pool_forward_workload(const Backend& b, const Pool2dShape& s) {
    const Tensor x = bench_tensor(b, s.x_shape());
    Tensor y = b.allocate(s.y_shape());
    return {[&b, s, x, y]() mutable { b.avg_pool2d_forward(s, x, y); }, y, {}};
}

Workload avg_pool_backward_workload(const Backend& b, const Pool2dShape& s) {
    const Tensor dy = bench_tensor(b, s.y_shape());
    Tensor dx = b.allocate(s.x_shape());
    return {[&b, s, dy, dx]() mutable { b.avg_pool2d_backward(s, dy, dx); }, dx, {}};
}

std::vector<BenchRows> conv_bench_rows() {
    const std::vector<Op> all_passes = {Op::conv2d_forward, Op::conv2d_backward_data,
                                        Op::conv2d_backward_weights};
    std::vector<BenchRows> rows;
    for (ConvAlgorithm a : conv_algorithms) {
        rows.push_back({"conv2d_forward_" + to_string(a),
                        "flops",
                        "2·N·K·P·Q·C·R·S",
                        "conv",
                        conv_rows(a, false),
                        {Op::conv2d_forward}});
        rows.push_back({"conv2d_forward_backward_" + to_string(a), "flops", "3 · 2·N·K·P·Q·C·R·S",
                        "conv", conv_rows(a, true), all_passes});
    }
    return rows;
}

}  // namespace

// Default shapes. conv2d (N,C,H,W,K,R,S[,STRIDE,PAD] or with h and w apart): one pixel; 1x1
// filters; a non-square 3x5 filter on C = 1, K = 1; stride 2, and 3 by 2 with a 5x4 filter;
// padding 2 on a 3x3 filter (more than half); an 8x7 filter as large as the padded 6x5 input;
// stride 3 without padding; batch 1 and 7; C = 1 and 3; sizes off every tile (13, 17, 19, 23,
// 33); 67 filters over C R S = 144 (im2col's GEMM spans several tiles each way, none full); 17
// channels into 19 at stride 1 with a 3x2 filter padded by 3 and 2, more than the filter minus
// one (cpu_eigen_omp's shifted-GEMM im2col crops dy's padding in backward_data), at batch 7
// (backward_weights' chunks of 4 images, the last one short); then LeNet-5's two convolutions
// at batch 64; 40 filters over the 15 outputs of one 5x7 image (implicit GEMM's 64 x 64 tiles,
// which larger shapes skip for 128 x 128 or 32 x 128 ones); 32 channels into 64 on rows of 13
// (cpu_eigen_omp's direct blocks of 4 Vecs: 64 channels by 5 pixels forward with AVX-512; with
// AVX2, blocks of 2 Vecs, 16 channels, by 5 pixels, forward and backward); a 3x3 filter padded
// by 3 on a 7x6 input (odd P, winograd's backward_data then starts its tiles inside dy); a 5x5
// one padded by 5 on a 9x8 input (the same for the 5x5 filters' F(4, 5) along columns, with
// P = 15 not a multiple of its 4 rows), and one padded by 3 rows and no columns (its rows of
// zeros read in place). The 3x3 and 5x5 shapes at stride 1 are winograd's: odd and even P and Q,
// padding 0 to 5, C = 1 to 32. Pools:
// LeNet's 2x2 stride 2 at batch 7 and 64, and on odd 9x11 planes (a row and a column left over;
// cpu_eigen_omp has a loop of its own for 2x2 stride 2); overlapping 3x3 stride 2 windows with and
// without padding, a 2x3 window, padding of half a 5x4 window, one window over the whole input, 3x3
// stride 3 dropping a leftover row, batch 1; a 3x2 window at stride 2 on rows of 13, whose last
// column no window reads (cpu_eigen_omp's max pooling by column winners keeps rows of 12).
std::vector<OpDescription> conv_and_pool_descriptions() {
    const std::string pool_syntax =
        "N,C,H,W,WINDOW,STRIDE[,PAD] or N,C,H,W,WINDOW_H,WINDOW_W,STRIDE_H,STRIDE_W,PAD_H,PAD_W";
    const std::vector<std::string> pools = {
        "1,1,1,1,1,1",         "7,3,28,28,2,2",   "64,6,28,28,2,2",       "3,2,9,11,2,2",
        "2,5,17,19,3,2",       "2,3,15,13,3,2,1", "1,4,9,23,2,3,1,3,1,1", "3,2,33,7,5,4,3,2,2,2",
        "2,3,7,5,7,5,1,1,0,0", "1,1,13,11,3,3",   "2,3,10,9,3,1,1",       "2,2,9,13,3,2,2,2,0,0"};
    return {
        {"conv2d",
         "N,C,H,W,K,R,S[,STRIDE,PAD] or N,C,H,W,K,R,S,STRIDE_H,STRIDE_W,PAD_H,PAD_W",
         {"1,1,1,1,1,1,1", "7,3,13,17,5,1,1", "1,1,13,15,1,3,5,1,1,1,2", "2,3,17,19,4,3,3,2,1",
          "3,2,23,20,3,5,4,3,2,2,1", "2,4,7,9,3,3,3,1,2", "3,2,6,5,4,8,7,1,1",
          "7,5,33,17,7,3,3,3,0", "2,16,11,13,67,3,3,1,1", "7,17,9,11,19,3,2,1,1,3,2",
          "64,1,28,28,6,5,5,1,2", "64,6,14,14,16,5,5,1,0", "1,3,5,7,40,3,3", "2,32,9,13,64,3,3,1,1",
          "3,5,7,6,4,3,3,1,3", "2,3,9,8,5,5,5,1,5", "2,3,11,9,4,5,5,1,1,3,0"},
         "64,6,14,14,16,5,5,1,0",  // LeNet's conv2
         run_conv2d,
         {Op::conv2d_forward, Op::conv2d_backward_data, Op::conv2d_backward_weights},
         conv_bench_rows()},
        {"max_pool2d",
         pool_syntax,
         pools,
         "64,6,28,28,2,2",  // LeNet's first pooling
         run_max_pool2d,
         {Op::max_pool2d_forward, Op::max_pool2d_backward},
         {{"max_pool2d_forward",
           "bytes",
           "4·(NCHW + 2·NCPQ)",
           "pool",
           pool_rows(1, 2, max_pool_forward_workload),
           {Op::max_pool2d_forward}},
          {"max_pool2d_backward",
           "bytes",
           "4·(2·NCPQ + NCHW)",
           "pool",
           pool_rows(1, 2, max_pool_backward_workload),
           {Op::max_pool2d_forward, Op::max_pool2d_backward}}}},
        {"avg_pool2d",
         pool_syntax,
         pools,
         "64,6,28,28,2,2",  // LeNet's first pooling
         run_avg_pool2d,
         {Op::avg_pool2d_forward, Op::avg_pool2d_backward},
         {{"avg_pool2d_forward",
           "bytes",
           "4·(NCHW + NCPQ)",
           "pool",
           pool_rows(1, 1, avg_pool_forward_workload),
           {Op::avg_pool2d_forward}},
          {"avg_pool2d_backward",
           "bytes",
           "4·(NCPQ + NCHW)",
           "pool",
           pool_rows(1, 1, avg_pool_backward_workload),
           {Op::avg_pool2d_backward}}}},
    };
}

}  // namespace triptych::check
