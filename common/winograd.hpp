// The matrices of Winograd's minimal filtering F(4, 5): four outputs of a 5-tap correlation,
//   y[i] = sum_k d[i + k] g[k]   (i < 4, k < 5; d has alpha = 4 + 5 - 1 = 8 values)
// computed from 8 multiplications instead of 20:
//   y = A^T [ (G g) . (B^T d) ]        (. : elementwise; A^T 4 x 8, G 8 x 5, B^T 8 x 8)
// cpu_eigen_omp's winograd algorithm takes it for 5x5 filters, along the columns of the image
// (cpu/eigen_omp/conv_winograd.cpp), and check/conv_checks.cpp derives that algorithm's
// tolerance from the absolute values of these same matrices. (Its 3x3 filters take F(2x2, 3x3),
// written out by hand there.)
//
// Where they come from (Toom-Cook; Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2015). Multiplying the polynomials g(x) (degree 4) and h(x) (degree 3) takes 8
// products when their product s(x) is known at 8 points: pick 7 numbers a_j and "infinity"
// (s's leading coefficient, g[4] h[3]), multiply g(a_j) h(a_j), and interpolate. Correlation is
// the transpose of that polynomial product, so its matrices are the transposes:
//   A^T[i][j] = a_j^i                      (evaluating h at a_j; infinity: column (0, 0, 0, 1))
//   G[j][k]   = a_j^k / f_j,  f_j = prod over l != j of (a_j - a_l)   (infinity: (0, ..., 0, 1))
//   B^T[j]    = the coefficients of prod over l != j of (x - a_l)     (infinity: of prod of all)
// with the points 0, 1, -1, 2, -2, 1/2, -1/2 (and the signs of rows 0 and infinity flipped). Each
// larger point makes larger coefficients and larger rounding errors: B^T holds 21/4, G 1/90, A^T
// 8; F(2, 5), from 0, 1, -1, 2, -2, has smaller ones but computes two outputs from 6 products
// where this computes four from 8. tests/conv_test.cpp checks that the matrices compute the
// correlation.
#pragma once

namespace triptych {

// F(m, r): B^T (alpha x alpha), G (alpha x r) and A^T (m x alpha), alpha = m + r - 1.
struct WinogradMatrices {
    static constexpr int m = 4, r = 5, alpha = m + r - 1;
    double BT[alpha][alpha];
    double G[alpha][r];
    double AT[m][alpha];
};

inline constexpr WinogradMatrices winograd_f4_5{
    {{1, 0, -21.0 / 4, 0, 21.0 / 4, 0, -1, 0},
     {0, 1, 1, -17.0 / 4, -17.0 / 4, 1, 1, 0},
     {0, -1, 1, 17.0 / 4, -17.0 / 4, -1, 1, 0},
     {0, 1.0 / 2, 1.0 / 4, -5.0 / 2, -5.0 / 4, 2, 1, 0},
     {0, -1.0 / 2, 1.0 / 4, 5.0 / 2, -5.0 / 4, -2, 1, 0},
     {0, 2, 4, -5.0 / 2, -5, 1.0 / 2, 1, 0},
     {0, -2, 4, 5.0 / 2, -5, -1.0 / 2, 1, 0},
     {0, 1, 0, -21.0 / 4, 0, 21.0 / 4, 0, -1}},
    {{1, 0, 0, 0, 0},
     {-2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9},
     {-2.0 / 9, 2.0 / 9, -2.0 / 9, 2.0 / 9, -2.0 / 9},
     {1.0 / 90, 1.0 / 45, 2.0 / 45, 4.0 / 45, 8.0 / 45},
     {1.0 / 90, -1.0 / 45, 2.0 / 45, -4.0 / 45, 8.0 / 45},
     {32.0 / 45, 16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45},
     {32.0 / 45, -16.0 / 45, 8.0 / 45, -4.0 / 45, 2.0 / 45},
     {0, 0, 0, 0, 1}},
    {{1, 1, 1, 1, 1, 1, 1, 0},
     {0, 1, -1, 2, -2, 1.0 / 2, -1.0 / 2, 0},
     {0, 1, 1, 4, 4, 1.0 / 4, 1.0 / 4, 0},
     {0, 1, -1, 8, -8, 1.0 / 8, -1.0 / 8, -1}}};

}  // namespace triptych
