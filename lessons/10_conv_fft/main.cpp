// Lesson 10: convolution by FFT, the convolution theorem (see README.md next to this file).
//
// First, in one dimension and in double: a correlation computed directly, then as a pointwise
// product of discrete Fourier transforms on a grid too small for the padding (the result wraps
// around) and on one large enough (it does not). Then the schedule of a radix-2 FFT of length 8,
// as gpu_tiled's fft_lines_kernel runs it (bit reversal, three stages of butterflies, their
// twiddle factors), applied to the same row and compared with the definition of the transform.
// Then Winograd's F(2, 3), two outputs of a 3-tap filter from 4 products, and F(4, 5), four
// outputs of a 5-tap filter from 8. Then runs conv2d_forward by every algorithm of every variant
// as the filter grows from 3x3 to 15x15 (winograd: 3x3 and 5x5 only), each checked against the
// float64 reference, with its time. Exits 1 if any variant is wrong.
//
//   lesson_10_conv_fft [SEED]
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "common/winograd.hpp"
#include "lessons/08_conv_direct/conv_passes.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

using Complex = std::complex<double>;
constexpr double two_pi = 6.283185307179586476925;

// The transform by its definition, O(n^2): out[u] = sum_h in[h] e^(sign 2 pi i u h / n).
// sign -1 is the forward transform, +1 the inverse (unscaled, as fft.hpp's).
std::vector<Complex> dft(const std::vector<Complex>& in, double sign) {
    const std::size_t n = in.size();
    std::vector<Complex> out(n);
    for (std::size_t u = 0; u < n; ++u)
        for (std::size_t h = 0; h < n; ++h)
            out[u] += in[h] * std::polar(1.0, sign * two_pi * double(u * h % n) / double(n));
    return out;
}

void print_values(const char* label, const std::vector<double>& values) {
    std::printf("  %-34s", label);
    // Rounded to the digit shown, + 0.0 turning -0 (a rounding error of the transforms) into 0.
    for (double v : values) std::printf(" %5.1f", std::round(v * 10.0) / 10.0 + 0.0);
    std::puts("");
}

// y[i] = sum_u a[i + u - pad] * f[u], a read as 0 outside: the definition (1D, stride 1).
std::vector<double> correlate_direct(const std::vector<double>& a, const std::vector<double>& f,
                                     int pad) {
    std::vector<double> y(a.size() + 2 * pad - f.size() + 1, 0.0);
    for (std::size_t i = 0; i < y.size(); ++i)
        for (std::size_t u = 0; u < f.size(); ++u) {
            const long j = long(i + u) - pad;
            if (j >= 0 && j < long(a.size())) y[i] += a[j] * f[u];
        }
    return y;
}

// The same through the convolution theorem on a grid of `grid` points: a placed at offset pad
// (its element j at (j + pad) mod grid), f at 0, z = inverse(A * conj(F)) / grid, y[i] = z[i].
std::vector<double> correlate_fft(const std::vector<double>& a, const std::vector<double>& f,
                                  int pad, std::size_t grid) {
    std::vector<Complex> a_grid(grid), f_grid(grid);
    for (std::size_t j = 0; j < a.size(); ++j) a_grid[(j + pad) % grid] += a[j];
    for (std::size_t u = 0; u < f.size(); ++u) f_grid[u] = f[u];
    const std::vector<Complex> A = dft(a_grid, -1), F = dft(f_grid, -1);
    std::vector<Complex> Z(grid);
    for (std::size_t k = 0; k < grid; ++k) Z[k] = A[k] * std::conj(F[k]);
    const std::vector<Complex> z = dft(Z, +1);
    std::vector<double> y(a.size() + 2 * pad - f.size() + 1);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = z[i].real() / double(grid);
    return y;
}

void show_convolution_theorem() {
    const std::vector<double> a{1, 2, 3, 4, 5, 6, 7, 8}, f{1, 0, -1};
    const int pad = 1;
    std::puts("The convolution theorem in 1D (double): a correlated with f, pad 1 (8 outputs):");
    print_values("a", a);
    print_values("f", f);
    print_values("direct, zero padding", correlate_direct(a, f, pad));
    print_values("DFT on 8 points (wraps around)", correlate_fft(a, f, pad, 8));
    print_values("DFT on 16 points (>= 8 + 2 pad)", correlate_fft(a, f, pad, 16));
    std::puts(
        "  On 8 points a[7] lands on the padding in front of a[0] and a[0] on the one after\n"
        "  a[7]: the first and last outputs read the other end of the row instead of zeros.");
}

// Winograd's F(2, 3): the two outputs of a 3-tap filter g over 4 values d from 4 products instead
// of 6, the trick cpu_eigen_omp's winograd algorithm nests in 2D (conv_winograd.cpp).
void show_winograd() {
    const std::vector<double> d{1, 2, 3, 4}, g{2, 1, 3};
    const std::vector<double> m{(d[0] - d[2]) * g[0], (d[1] + d[2]) * (g[0] + g[1] + g[2]) / 2,
                                (d[2] - d[1]) * (g[0] - g[1] + g[2]) / 2, (d[1] - d[3]) * g[2]};
    std::puts("\nWinograd's F(2, 3) in 1D (double): 2 outputs of a 3-tap filter g over d:");
    print_values("d", d);
    print_values("g", g);
    print_values("direct, 6 products", {d[0] * g[0] + d[1] * g[1] + d[2] * g[2],
                                        d[1] * g[0] + d[2] * g[1] + d[3] * g[2]});
    print_values("m1..m4, 4 products", m);
    print_values("m1 + m2 + m3, m2 - m3 - m4", {m[0] + m[1] + m[2], m[1] - m[2] - m[3]});
    std::puts(
        "  m1 = (d0 - d2) g0, m2 = (d1 + d2)(g0 + g1 + g2)/2, m3 = (d2 - d1)(g0 - g1 + g2)/2,\n"
        "  m4 = (d1 - d3) g2: the filter's sums are made once for all the data. In 2D, rows\n"
        "  and columns alike: 2x2 outputs of a 3x3 filter from 16 products instead of 36.");
}

// Winograd's F(4, 5), with the matrices cpu_eigen_omp's winograd algorithm runs down the
// columns for 5x5 filters (common/winograd.hpp): 4 outputs of a 5-tap filter from 8 products.
void show_winograd_f4_5() {
    const WinogradMatrices& f = winograd_f4_5;
    constexpr int m = WinogradMatrices::m, r = WinogradMatrices::r, alpha = WinogradMatrices::alpha;
    const std::vector<double> d{1, 2, 3, 4, 5, 6, 7, 8}, g{2, 1, 3, -1, 1};
    std::vector<double> direct(m, 0.0), products(alpha, 0.0), y(m, 0.0);
    for (int i = 0; i < m; ++i)
        for (int k = 0; k < r; ++k)
            direct[std::size_t(i)] += d[std::size_t(i + k)] * g[std::size_t(k)];
    for (int j = 0; j < alpha; ++j) {
        double Gg = 0, Bd = 0;
        for (int k = 0; k < r; ++k) Gg += f.G[j][k] * g[std::size_t(k)];
        for (int e = 0; e < alpha; ++e) Bd += f.BT[j][e] * d[std::size_t(e)];
        products[std::size_t(j)] = Gg * Bd;
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < alpha; ++j) y[std::size_t(i)] += f.AT[i][j] * products[std::size_t(j)];
    std::puts("\nWinograd's F(4, 5) in 1D (double): 4 outputs of a 5-tap filter g over d:");
    print_values("d", d);
    print_values("g", g);
    print_values("direct, 20 products", direct);
    print_values("(G g) . (B^T d), 8 products", products);
    print_values("A^T times them", y);
    std::puts(
        "  Down the columns of a 5x5 filter: 4 rows of outputs from 8 products per filter\n"
        "  column instead of 20; the direct kernels add the 5 columns (README).");
}

// i with its lowest `bits` bits in reverse order, as fft.cu's reverse_bits.
int reverse_bits(int i, int bits) {
    int reversed = 0;
    for (int b = 0; b < bits; ++b) {
        reversed = (reversed << 1) | (i & 1);
        i >>= 1;
    }
    return reversed;
}

// fft_lines_kernel's schedule for one line of length 8, printed, then run on `a` in double.
void show_radix2_schedule() {
    constexpr int length = 8, bits = 3, half = length / 2;
    std::printf("\nA radix-2 FFT of length %d, as gpu_tiled's fft_lines_kernel runs it:\n", length);
    std::printf("  load: element e goes to position reverse_bits(e):");
    for (int e = 0; e < length; ++e) std::printf(" %d->%d", e, reverse_bits(e, bits));
    std::puts("");
    const std::vector<double> a{1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<Complex> tile(length), twiddles(half);
    for (int e = 0; e < length; ++e) tile[reverse_bits(e, bits)] = a[e];
    for (int t = 0; t < half; ++t) twiddles[t] = std::polar(1.0, -two_pi * t / length);
    for (int m = 1; m < length; m *= 2) {
        std::printf("  stage m=%d, butterflies (i0, i1) w^t:", m);
        for (int b = 0; b < half; ++b) {
            const int group = b / m, j = b % m;
            const int i0 = group * 2 * m + j, i1 = i0 + m, t = j * (half / m);
            std::printf(" (%d,%d)w^%d", i0, i1, t);
            const Complex even = tile[i0], odd = twiddles[t] * tile[i1];
            tile[i0] = even + odd;
            tile[i1] = even - odd;
        }
        std::puts("");
    }
    std::printf(
        "  (w = e^(-2 pi i / %d); each butterfly: a[i0], a[i1] = a[i0] + w^t a[i1], a[i0] - w^t "
        "a[i1])\n",
        length);
    const std::vector<Complex> reference = dft({a.begin(), a.end()}, -1);
    double error = 0;
    for (int u = 0; u < length; ++u) error = std::max(error, std::abs(tile[u] - reference[u]));
    char error_text[16];
    std::snprintf(error_text, sizeof error_text, "%.1e", error);
    std::printf("  the FFT of a: X[0] = %.1f, X[1] = %.4f%+.4fi, ...; max |FFT - DFT| = %s\n",
                tile[0].real(), tile[1].real(), tile[1].imag(),
                lessons::machine_figure(error_text).c_str());
}

// The table's first columns: the filter and the algorithm.
std::string label(const std::string& filter, const std::string& algorithm) {
    char text[32];
    std::snprintf(text, sizeof text, "%-6s %-9s", filter.c_str(), algorithm.c_str());
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        std::puts("");
        show_convolution_theorem();
        show_radix2_schedule();
        show_winograd();
        show_winograd_f4_5();

        // A small version of the benchmarks' sweep (bench/conv.cpp, sweep_r<R>: N 8, C 16,
        // 64x64, K 16): the same input for every filter, padded to keep 32x32 outputs.
        std::vector<Conv2dShape> sweep;
        for (const std::int64_t R : {3, 5, 9, 15})
            sweep.push_back({.N = 1,
                             .C = 4,
                             .H = 32,
                             .W = 32,
                             .K = 4,
                             .R = R,
                             .S = R,
                             .pad_h = R / 2,
                             .pad_w = R / 2});
        std::printf("\nconv2d_forward as the filter grows: %s, R = S = 3, 5, 9, 15, pad R/2\n",
                    "N1 C4 H32 W32 K4");

        lessons::print_conv_algorithms();
        const bool any_simulated = lessons::warn_if_simulated(
            "!!! They do not show where FFT overtakes the others on a GPU. GPU figures come\n"
            "!!! from `triptych report`.\n");

        std::puts("");
        lessons::print_pass_header(label("filter", "algorithm"));
        bool all_passed = true;
        for (const Conv2dShape& s : sweep)
            for (const ConvAlgorithm algorithm : {ConvAlgorithm::direct, ConvAlgorithm::im2col,
                                                  ConvAlgorithm::fft, ConvAlgorithm::winograd})
                for (const std::string& name : backend_names()) {
                    const Backend& b = backend(name);
                    if (!lessons::has_algorithm(b, algorithm)) continue;  // listed above
                    if (!conv_algorithm_applies(algorithm, s)) continue;
                    const std::string filter = std::to_string(s.R) + "x" + std::to_string(s.S);
                    all_passed =
                        lessons::print_pass_rows(b, lessons::ConvPass::forward, s, algorithm,
                                                 label(filter, to_string(algorithm)), seed) &&
                        all_passed;
                }
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "GFLOP/s = 2*N*K*P*Q*C*R*S (the multiply-adds of the definition, whatever the\n"
            "algorithm: FFT and Winograd do fewer, so their rates can pass the machine's peak) /\n"
            "the time of one call; the crossover is measured by the benchmarks' sweep (README).");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 10: %s\n", error.what());
        return 1;
    }
}
