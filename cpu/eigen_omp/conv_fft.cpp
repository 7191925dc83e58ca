// cpu_eigen_omp conv2d by FFT: the three passes through the convolution theorem, with FFTW (its
// single-precision library, fftw3f). Shapes as in cpu/naive/conv2d.hpp.
//
// The math. On a grid of F_h x F_w points, the 2D discrete Fourier transform turns circular
// correlation and convolution into pointwise products:
//   correlation  z[i, j] = sum_{u, v} a[i + u, j + v] * f[u, v]   <=>  Z = A * conj(F)
//   convolution  z[i, j] = sum_{u, v} a[i - u, j - v] * f[u, v]   <=>  Z = A * F
// (indices mod F_h and F_w; conj because the inputs are real). The sums are circular: an index
// past the edge wraps around. The grid is made large enough that no sum we keep ever wraps:
// F_h >= H + 2 pad_h, F_w >= W + 2 pad_w, the padded input, rounded up to a length that
// transforms fast (fft_length). Three planes are placed on it,
// zero everywhere else:
//   x  at (pad_h, pad_w): the zero-padded input xp;
//   w  at (0, 0);
//   dy dilated: dy[p, q] at (p*stride_h, q*stride_w), zeros in between (the "dilated dy", d).
// Then each pass is one product per frequency, summed over the channel it reduces:
//   forward          y[n, k, p, q] = z[p*stride_h, q*stride_w] + b[k], where
//                    Z = sum_c X[n, c] * conj(W[k, c])       (xp correlated with w; z at
//                    i = p*stride + r <= H + 2 pad - 1 never wraps). Stride > 1 computes every
//                    stride-1 output and keeps one in stride^2.
//   backward_data    dx[n, c, h, w] = z[h + pad_h, w + pad_w], where
//                    Z = sum_k D[n, k] * W[k, c]             (d convolved with w: every dy
//                    spreads back over the inputs its window covered; the result lives on the
//                    padded grid and the padding is cropped).
//   backward_weights dw[k, c, r, s] = z[r, s], where
//                    Z = sum_n XP[n, c] * conj(D[n, k])     (xp correlated with d).
// Cost: one 2D transform per plane of x, w and dy, one inverse per output plane, and
// F_h*(F_w/2 + 1) complex multiply-adds per (input, output) channel pair, whatever the filter
// size; direct and im2col pay R*S multiply-adds per output. So FFT wins for large filters and
// loses for small ones (lesson 10 measures the crossover).
// Its rounding error grows with the whole sum, not with each term: measured on the bench's sweep
// layers (R = 3..15) at most 9e-8 of the largest sum |x| * |w| of an output (backward_weights
// 1e-8 of |x| * |dy|).
//
// The 2D transform of an image plane (x, dy; the inverse: y, dx) is a 2D FFT: a real FFT of each
// row (F_w/2 + 1 complex outputs, the other half being their conjugates), then a complex FFT of
// each of those columns. Rows of the grid that hold no data are not transformed; the inverse
// transforms back only the rows it keeps.
// A filter (w; the inverse: dw) fills only R of the F_h rows and S of the F_w columns, so its
// transform is two small dense products instead, a "pruned" DFT:
//   W = D_h (F_h, R) * w (R, S) * D_w (S, F_w/2 + 1),   D[f, p] = e^{-2 pi i f p / F},
// done for all K*C filters at once as two matrix products (GEMMs). They were chosen when the
// transforms were kissfft's (Eigen's FFT module), scalar and recursive, far slower per point than
// a GEMM's vectorised complex multiply-adds: on the 11x11 layer the product was several times
// cheaper than the filters' FFTs. FFTW's transforms are several times faster than kissfft's on
// these lengths (timed on a Zen 5 on a plane of 64 real rows and 41 columns of 80 points), which
// brings the two near each other; the products were not measured against FFTW's transforms.
//
// Image planes go through FFTW, which vectorises its transforms: two plans per thread, each many
// 1D transforms at once (PlaneTransform, PlaneInverse). Moving from kissfft to FFTW more than
// halved the 11x11 layer's forward time on the Zen 5 (2 threads; the row
// conv2d_forward_fft/cpu_eigen_omp/large_11x11 is in lessons 08 and 10's tables). perf of that
// forward on 2 threads put FFTW first (making its plans included), the channel sums close behind,
// then the filter products (OpenBLAS's complex GEMM), then the OpenMP runtime.
//
// The grid length comes from a cost model measured with kissfft (fft_length); FFTW's costs
// per point are less regular but favour the same lengths here: 80 for the bench's 64x64 layers.
//
// Memory layout: a spectrum is stored column by column, (F_w/2 + 1, F_h), so each column FFT
// reads contiguous memory, and the spectra of all planes are interleaved by column (Spectra), so
// that the channel sum of one column finds the operands of every plane side by side (80-160 KB
// for the 11x11 layer: L2). Before, each output plane read its C input and C filter spectra
// whole (0.8 MB) from memory.
//
// OpenMP: the FFTs over batches of planes (each thread makes its FFTW plans and scratch once per
// call, for_each_batch_with, the plans under a lock: FFTW's planner is not thread-safe), the
// channel sums over spectrum
// columns (each thread owns the columns it writes); the filter products by Eigen's own product and
// by one single-threaded BLAS panel per OpenMP thread (filter_transform).
//
// lessons/10_conv_fft measures it against direct and im2col, and the sweep over filter sizes
// where its cost stays flat while theirs grows with R*S (tables recorded in
// lessons/08_conv_direct/conv.json and lessons/10_conv_fft/sweep.json).
#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <mutex>
#include <numbers>
#include <vector>

#include "common/errors.hpp"
#include "cpu/eigen_omp/conv_fft.hpp"
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {
namespace {

using Complex = std::complex<float>;
using ComplexArray = Eigen::Array<Complex, Eigen::Dynamic, 1>;
using ComplexMatrix = Eigen::Matrix<Complex, Eigen::Dynamic, Eigen::Dynamic>;  // column-major

// A transform's time per point of a length-L grid, in ns, as kissfft measured for L = 16..256
// (a real and a complex transform, best of 15 runs), rounded to one figure per class: lengths
// with a factor 5 cheapest, then powers of 2, then the others (a factor 3 and no 5), so that 72
// costs more per 2D grid than 80. FFTW with FFTW_ESTIMATE plans, timed per point of a 2D grid
// (rows and columns) on a Zen 5, too favours a factor 5, though less regularly (80 beat 72 and
// 64, 60 was dearer than all three, and 256 many times dearer than 240), and the model still picks
// 80 for 66..78 points, FFTW's fastest there.
double grid_ns_per_point(std::int64_t L) {
    if (L % 5 == 0) return 9.0;
    if ((L & (L - 1)) == 0) return 12.0;
    return 14.0;
}

// The grid length for n points: a multiple of 4 with no prime factor above 5 (kissfft's fast real
// transform and radices, kept for FFTW), the one in [n, 2n] of least estimated 2D cost
// L^2 * grid_ns_per_point(L). For the bench's 64x64 inputs with pad 1..7 (n = 66..78) it is
// 80, never 72.
std::int64_t fft_length(std::int64_t n) {
    std::int64_t best = 0;
    double best_cost = 0.0;
    for (std::int64_t length = ceil_div<std::int64_t>(n, 4) * 4; length <= 2 * n || best == 0;
         length += 4) {
        std::int64_t rest = length;
        for (std::int64_t factor : {2, 3, 5})
            while (rest % factor == 0) rest /= factor;
        const double cost = double(length) * double(length) * grid_ns_per_point(length);
        if (rest == 1 && (best == 0 || cost < best_cost)) {
            best = length;
            best_cost = cost;
        }
    }
    return best;
}

// Where a (rows, cols) plane sits on the grid: its element (i, j) at
// (row_offset + i*row_step, col_offset + j*col_step).
struct Placement {
    std::int64_t rows, cols, row_offset, col_offset, row_step, col_step;
};

// The grid of a convolution and where its planes sit on it (see the top of the file); filters
// sit at its (0, 0) corner.
struct FftGrid {
    std::int64_t Fh, Fw;
    std::int64_t half;  // Fw/2 + 1: the columns of a real plane's spectrum that are stored
    Placement x, dy;

    explicit FftGrid(const Conv2dShape& s)
        : Fh(fft_length(s.H + 2 * s.pad_h)),
          Fw(fft_length(s.W + 2 * s.pad_w)),
          half(Fw / 2 + 1),
          x{s.H, s.W, s.pad_h, s.pad_w, 1, 1},
          dy{s.P(), s.Q(), 0, 0, s.stride_h, s.stride_w} {}

    std::int64_t spectrum_size() const { return half * Fh; }
};

// The three sets of spectra of a pass: its two operands and their channel sum.
enum class Role { first, second, product };

// The spectra of `count` planes, each (half, Fh): column j (Fh frequencies, contiguous) of plane
// i at (j*count + i)*Fh, so that the channel sums, which combine the same column of many planes,
// find them side by side. Seen whole, a column-major (Fh, half*count) matrix.
// The storage is kept by the calling thread from one call to the next, one buffer per Role,
// grown when a call needs more. Freshly allocated, the 14 MB of the 11x11 bench layer's three
// sets came from the kernel page by page, and those page faults took a measurable share of the
// forward time.
// Thread-local keeps concurrent calls apart; a call uses each Role once, so it is re-entrant.
class Spectra {
public:
    Spectra(const FftGrid& grid, std::int64_t count, Role role)
        : Fh_(grid.Fh),
          count_(count),
          matrix_columns_(grid.half * count),
          data_(storage(role, grid.spectrum_size() * count)) {}

    std::int64_t count() const { return count_; }
    Complex* column(std::int64_t j, std::int64_t plane) {
        return data_ + (j * count_ + plane) * Fh_;
    }
    const Complex* column(std::int64_t j, std::int64_t plane) const {
        return data_ + (j * count_ + plane) * Fh_;
    }
    Eigen::Map<ComplexMatrix> matrix() { return {data_, Fh_, matrix_columns_}; }
    Eigen::Map<const ComplexMatrix> matrix() const { return {data_, Fh_, matrix_columns_}; }

private:
    static Complex* storage(Role role, std::int64_t size) {
        thread_local ComplexArray buffers[3];  // uninitialised: every value is written before read
        ComplexArray& buffer = buffers[static_cast<int>(role)];
        if (buffer.size() < size) buffer.resize(size);
        return buffer.data();
    }

    std::int64_t Fh_, count_, matrix_columns_;
    Complex* data_;
};

// FFTW's planner is not thread-safe; its plans are, each executed by one thread here. Plans are
// made and destroyed under this lock.
std::mutex fftw_planner;

// FFTW's complex type is two floats, as std::complex<float> is; its functions take non-const
// arrays, though an out-of-place complex transform never writes its input.
fftwf_complex* as_fftw(const Complex* p) {
    return reinterpret_cast<fftwf_complex*>(const_cast<Complex*>(p));
}

// A plan of many 1D transforms, made by `make` (an fftwf_plan_many_* call, FFTW_ESTIMATE: a
// plan from FFTW's rules, made in microseconds, where FFTW_MEASURE would time candidates and
// overwrite the arrays), destroyed with the object.
class Plan {
public:
    template <typename Make>
    explicit Plan(Make make) {
        const std::lock_guard lock(fftw_planner);
        plan_ = make();
        if (plan_ == nullptr) throw Error("conv2d (fft): FFTW could not plan a transform");
    }
    ~Plan() {
        const std::lock_guard lock(fftw_planner);
        fftwf_destroy_plan(plan_);
    }
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    fftwf_plan get() const { return plan_; }

private:
    fftwf_plan plan_ = nullptr;
};

// FFTW counts in int; require_sizes has checked that every count of the pass fits.
int as_int(std::int64_t n) { return static_cast<int>(n); }

// One thread's 2D transforms of planes placed on a grid at `at`, into `spectra`: two FFTW plans
// of many 1D transforms each, made once and run for every plane. The first transforms the real
// grid rows that hold data (rows_, at.rows x Fw) and writes row g's Fw/2 + 1 outputs down
// columns_, at j*Fh + g (FFTW takes an output stride: the transpose costs nothing); the second
// transforms every column of columns_ into the plane's place in spectra. The grid points that
// never receive data, in rows_ and columns_, keep the zeros they start with.
class PlaneTransform {
public:
    PlaneTransform(const FftGrid& grid, const Placement& at, Spectra& spectra)
        : grid_(grid),
          at_(at),
          spectra_(spectra),
          rows_(Array::Zero(at.rows * grid.Fw)),
          columns_(ComplexArray::Zero(grid.spectrum_size())),
          row_plan_([&] {
              const int n = as_int(grid.Fw);
              return fftwf_plan_many_dft_r2c(1, &n, as_int(at.rows), rows_.data(), nullptr, 1, n,
                                             as_fftw(columns_.data() + at.row_offset), nullptr,
                                             as_int(grid.Fh), as_int(at.row_step), FFTW_ESTIMATE);
          }),
          column_plan_([&] {
              const int n = as_int(grid.Fh);
              return fftwf_plan_many_dft(1, &n, as_int(grid.half), as_fftw(columns_.data()),
                                         nullptr, 1, n, as_fftw(spectra.column(0, 0)), nullptr, 1,
                                         as_int(spectra.count() * grid.Fh), FFTW_FORWARD,
                                         FFTW_ESTIMATE);
          }) {}

    // Plane `index` of the spectra = the transform of the grid holding `plane`.
    void forward(const float* plane, std::int64_t index) {
        for (std::int64_t i = 0; i < at_.rows; ++i)
            for (std::int64_t j = 0; j < at_.cols; ++j)
                rows_[i * grid_.Fw + at_.col_offset + j * at_.col_step] = plane[i * at_.cols + j];
        fftwf_execute(row_plan_.get());
        // the same plan on another output: one of the same alignment (columns are Fh complex
        // numbers apart, Fh a multiple of 4), as FFTW requires
        fftwf_execute_dft(column_plan_.get(), as_fftw(columns_.data()),
                          as_fftw(spectra_.column(0, index)));
    }

private:
    const FftGrid& grid_;
    const Placement& at_;
    Spectra& spectra_;
    Array rows_;            // the real grid rows with data, (at.rows, Fw)
    ComplexArray columns_;  // their transforms, column by column, (half, Fh)
    Plan row_plan_, column_plan_;
};

// One thread's inverse 2D transforms of the planes of Z, read where `at` says: every column
// (FFTW, many at once), then only the grid rows kept, each read down the columns (an input
// stride) and transformed back to Fw reals. The complex-to-real transforms overwrite columns_,
// which the next plane rewrites.
class PlaneInverse {
public:
    PlaneInverse(const FftGrid& grid, const Placement& at, const Spectra& Z)
        : grid_(grid),
          at_(at),
          Z_(Z),
          columns_(grid.spectrum_size()),
          rows_(at.rows * grid.Fw),
          column_plan_([&] {
              const int n = as_int(grid.Fh);
              return fftwf_plan_many_dft(1, &n, as_int(grid.half), as_fftw(Z.column(0, 0)), nullptr,
                                         1, as_int(Z.count() * grid.Fh), as_fftw(columns_.data()),
                                         nullptr, 1, n, FFTW_BACKWARD, FFTW_ESTIMATE);
          }),
          row_plan_([&] {
              const int n = as_int(grid.Fw);
              return fftwf_plan_many_dft_c2r(
                  1, &n, as_int(at.rows), as_fftw(columns_.data() + at.row_offset), nullptr,
                  as_int(grid.Fh), as_int(at.row_step), rows_.data(), nullptr, 1, n, FFTW_ESTIMATE);
          }) {}

    // plane = the grid whose transform is plane `index` of Z, unscaled by FFTW and scaled here.
    void inverse(std::int64_t index, float* plane) {
        fftwf_execute_dft(column_plan_.get(), as_fftw(Z_.column(0, index)),
                          as_fftw(columns_.data()));
        fftwf_execute(row_plan_.get());
        const float scale = 1.0f / float(grid_.Fh * grid_.Fw);
        for (std::int64_t i = 0; i < at_.rows; ++i)
            for (std::int64_t j = 0; j < at_.cols; ++j)
                plane[i * at_.cols + j] =
                    rows_[i * grid_.Fw + at_.col_offset + j * at_.col_step] * scale;
    }

private:
    const FftGrid& grid_;
    const Placement& at_;
    const Spectra& Z_;
    ComplexArray columns_;  // the column inverses, (half, Fh)
    Array rows_;            // the real grid rows kept, (at.rows, Fw)
    Plan column_plan_, row_plan_;
};

// The spectra of `count` planes placed at `at`, one after the other. OpenMP over batches of planes.
Spectra transform(const FftGrid& grid, std::int64_t count, const float* planes, const Placement& at,
                  Role role) {
    Spectra spectra(grid, count, role);
    for_each_batch_with(
        count, grid.spectrum_size(), [&] { return PlaneTransform(grid, at, spectra); },
        [&](PlaneTransform& fft, std::int64_t begin, std::int64_t n) {
            for (std::int64_t i = begin; i < begin + n; ++i)
                fft.forward(planes + i * at.rows * at.cols, i);
        });
    return spectra;
}

// The (frequencies, points) matrix of a length-`length` DFT restricted to its first frequencies
// and points: [f, p] = e^{-2 pi i f p / length}, the angle reduced in integers and computed in
// double so that every entry is correctly rounded.
ComplexMatrix dft_matrix(std::int64_t frequencies, std::int64_t points, std::int64_t length) {
    ComplexMatrix dft(frequencies, points);
    for (std::int64_t p = 0; p < points; ++p)
        for (std::int64_t f = 0; f < frequencies; ++f) {
            const double angle = -2.0 * std::numbers::pi * double(f * p % length) / double(length);
            dft(f, p) = Complex(float(std::cos(angle)), float(std::sin(angle)));
        }
    return dft;
}

// The spectra of `count` (R, S) filters at the grid's corner, as two matrix products (see the top
// of the file): rows = w (count*R, S) * row DFT (S, half), column-major, is already the
// (R, half*count) matrix whose column j*count + i holds column j of filter i's R row transforms;
// the column DFT (Fh, R) times it is the Spectra matrix. Eigen threads the first product with
// OpenMP (float times complex: its own GEMM); the second is cut into one panel of columns per
// OpenMP thread, each a single-threaded product (the BLAS keeps to one thread, gemm.cpp).
Spectra filter_transform(const FftGrid& grid, const Conv2dShape& s, std::int64_t count,
                         const float* w, Role role) {
    Spectra spectra(grid, count, role);
    const ComplexMatrix rows = Eigen::Map<const RowMajorMatrix>(w, count * s.R, s.S) *
                               dft_matrix(grid.half, s.S, grid.Fw).transpose();
    const Eigen::Map<const ComplexMatrix> row_spectra(rows.data(), s.R, grid.half * count);
    const ComplexMatrix column_dft = dft_matrix(grid.Fh, s.R, grid.Fh);
    for_each_slice(grid.half * count, grid.Fh * s.R, [&](std::int64_t begin, std::int64_t n) {
        spectra.matrix().middleCols(begin, n).noalias() =
            column_dft * row_spectra.middleCols(begin, n);
    });
    return spectra;
}

// The (R, S) corners of the inverse transforms of every plane of Z, the same two products
// backwards: the inverse column DFT (R, Fh) = the adjoint of the forward one; then the real rows
// from their half spectra, sum over j < half of c_j Re(X[j] e^{+2 pi i j s / Fw}) / (Fh*Fw), with
// c_j = 2 for the j whose conjugate (Fw - j) is not stored, 1 for j = 0 and j = Fw/2.
void filter_inverse(const FftGrid& grid, const Conv2dShape& s, const Spectra& Z, float* dw) {
    const ComplexMatrix rows = dft_matrix(grid.Fh, s.R, grid.Fh).adjoint() * Z.matrix();
    ComplexMatrix row_inverse = dft_matrix(grid.half, s.S, grid.Fw).conjugate();
    row_inverse *= Complex(2.0f / float(grid.Fh * grid.Fw));
    row_inverse.row(0) *= Complex(0.5f);
    row_inverse.row(grid.half - 1) *= Complex(0.5f);
    Eigen::Map<RowMajorMatrix>(dw, Z.count() * s.R, s.S) =
        (Eigen::Map<const ComplexMatrix>(rows.data(), Z.count() * s.R, grid.half) * row_inverse)
            .real();
}

// The channel sum of a pass, at every frequency, for a < A, b < B, s < S:
//   Z(z_index(a, b)) = sum_s P(p_index(a, s)) * Q(q_index(b, s)),  Q conjugated if conjugate_q.
// OpenMP over batches of spectrum columns: a thread sweeps one column of every plane of P, Q and Z
// (for the 11x11 bench layer 80 + 160 + 80 KB, in L2) before the next.
template <bool conjugate_q, typename ZIndex, typename PIndex, typename QIndex>
Spectra channel_sum(const FftGrid& grid, std::int64_t A, std::int64_t B, std::int64_t S,
                    ZIndex z_index, const Spectra& P, PIndex p_index, const Spectra& Q,
                    QIndex q_index) {
    Spectra Z(grid, A * B, Role::product);
    const auto product = [](const auto& p, const auto& q) {
        if constexpr (conjugate_q)
            return p * q.conjugate();
        else
            return p * q;
    };
    for_each_batch(grid.half, 2 * A * B * S * grid.Fh, [&](std::int64_t begin, std::int64_t n) {
        for (std::int64_t j = begin; j < begin + n; ++j) {
            const auto column = [&](const Spectra& spectra, std::int64_t plane) {
                return Eigen::Map<const ComplexArray>(spectra.column(j, plane), grid.Fh);
            };
            for (std::int64_t a = 0; a < A; ++a)
                for (std::int64_t b = 0; b < B; ++b) {
                    Eigen::Map<ComplexArray> z(Z.column(j, z_index(a, b)), grid.Fh);
                    z = product(column(P, p_index(a, 0)), column(Q, q_index(b, 0)));
                    for (std::int64_t s = 1; s < S; ++s)
                        z += product(column(P, p_index(a, s)), column(Q, q_index(b, s)));
                }
        }
    });
    return Z;
}

// `out` = the inverse transforms of every plane of Z, read where `at` says. OpenMP over batches of
// planes.
void inverse_transform(const FftGrid& grid, const Spectra& Z, const Placement& at, float* out) {
    const std::int64_t plane_size = at.rows * at.cols;
    for_each_batch_with(
        Z.count(), grid.spectrum_size(), [&] { return PlaneInverse(grid, at, Z); },
        [&](PlaneInverse& fft, std::int64_t begin, std::int64_t n) {
            for (std::int64_t i = begin; i < begin + n; ++i) fft.inverse(i, out + i * plane_size);
        });
}

// Unsupported unless FFTW and OpenBLAS take a pass's sizes (eigen.hpp): the grid's lengths, and
// for the spectra of the most planes a pass transforms (N*C, N*K or K*C), the distance between
// two columns of one plane (planes * Fh) that FFTW's plans step and the columns of the products
// (planes * (Fw/2 + 1)).
void require_sizes(const char* pass, const Conv2dShape& s, const FftGrid& grid) {
    const std::int64_t planes = std::max({s.N * s.C, s.N * s.K, s.K * s.C});
    const auto op = [&] { return std::string(pass) + " " + s.str() + " fft"; };
    require_int_sizes(op, "FFTW",
                      {{"the grid's rows (Fh)", grid.Fh},
                       {"the grid's columns (Fw)", grid.Fw},
                       {"planes x Fh", planes * grid.Fh}});
    require_blas_sizes(op, {{"planes x (Fw/2 + 1)", planes * grid.half}});
}

}  // namespace

void conv2d_forward_fft(const Conv2dShape& s, const float* x, const float* w, const float* b,
                        float* y) {
    const FftGrid grid(s);
    require_sizes("conv2d_forward", s, grid);
    const auto image_channel = [&](std::int64_t n, std::int64_t c) { return n * s.C + c; };
    const auto filter_channel = [&](std::int64_t k, std::int64_t c) { return k * s.C + c; };
    const auto image_filter = [&](std::int64_t n, std::int64_t k) { return n * s.K + k; };
    const Spectra X = transform(grid, s.N * s.C, x, grid.x, Role::first);
    const Spectra Wf = filter_transform(grid, s, s.K * s.C, w, Role::second);
    // Y[n, k] = sum_c X[n, c] * conj(W[k, c])
    const Spectra Z =
        channel_sum<true>(grid, s.N, s.K, s.C, image_filter, X, image_channel, Wf, filter_channel);
    // y is read off the grid at the stride-dilated positions: dy's placement.
    inverse_transform(grid, Z, grid.dy, y);
    const std::int64_t PQ = s.P() * s.Q();
    for (std::int64_t plane = 0; plane < s.N * s.K; ++plane)
        Eigen::Map<Array>(y + plane * PQ, PQ) += b[plane % s.K];
}

void conv2d_backward_data_fft(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
    const FftGrid grid(s);
    require_sizes("conv2d_backward_data", s, grid);
    const auto image_channel = [&](std::int64_t n, std::int64_t c) { return n * s.C + c; };
    const auto filter_channel = [&](std::int64_t k, std::int64_t c) { return k * s.C + c; };
    const auto image_filter = [&](std::int64_t n, std::int64_t k) { return n * s.K + k; };
    const Spectra D = transform(grid, s.N * s.K, dy, grid.dy, Role::first);
    const Spectra Wf = filter_transform(grid, s, s.K * s.C, w, Role::second);
    // DX[n, c] = sum_k D[n, k] * W[k, c]
    const Spectra Z =
        channel_sum<false>(grid, s.N, s.C, s.K, image_channel, D, image_filter, Wf,
                           [&](std::int64_t c, std::int64_t k) { return filter_channel(k, c); });
    // dx is read off the grid where x sits: the padding is cropped.
    inverse_transform(grid, Z, grid.x, dx);
}

void conv2d_backward_weights_fft(const Conv2dShape& s, const float* x, const float* dy, float* dw) {
    const FftGrid grid(s);
    require_sizes("conv2d_backward_weights", s, grid);
    const auto image_channel = [&](std::int64_t n, std::int64_t c) { return n * s.C + c; };
    const auto filter_channel = [&](std::int64_t k, std::int64_t c) { return k * s.C + c; };
    const auto image_filter = [&](std::int64_t n, std::int64_t k) { return n * s.K + k; };
    const Spectra X = transform(grid, s.N * s.C, x, grid.x, Role::first);
    const Spectra D = transform(grid, s.N * s.K, dy, grid.dy, Role::second);
    // DW[k, c] = sum_n X[n, c] * conj(D[n, k])
    const Spectra Z = channel_sum<true>(
        grid, s.C, s.K, s.N, [&](std::int64_t c, std::int64_t k) { return filter_channel(k, c); },
        X, [&](std::int64_t c, std::int64_t n) { return image_channel(n, c); }, D,
        [&](std::int64_t k, std::int64_t n) { return image_filter(n, k); });
    // dw is read off the grid where w sits: its R x S corner.
    filter_inverse(grid, s, Z, dw);
}

}  // namespace triptych::cpu_eigen_omp
