// Every variant and version of gemm, and every variant of ReLU, against the float64 reference
// (check/crosscheck.hpp): fresh random inputs from the run's seed, NaN-poisoned outputs, the per-op
// tolerance. Also how cpu_eigen_omp uses OpenBLAS: in panels, with no thread of its pool spinning.
#include <cblas.h>
#include <time.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/registry.hpp"
#include "cpu/eigen_omp/ops.hpp"
#include "cpu/naive/gemm.hpp"
#include "tests/seed.hpp"
#include "tests/test_backend.hpp"
#include "tests/variants.hpp"

using namespace triptych;
using testing::require_pass;

TEST_CASE(
    "every variant's gemm matches the float64 reference for every transposition, "
    "including shapes that are not tile multiples, and with NaN and infinities in A and B",
    "[gemm]") {
    const GemmShape sizes[] = {{1, 1, 1},       {17, 33, 5},     {67, 45, 91},
                               {128, 128, 128}, {257, 129, 511}, {3, 300, 2}};
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        for (GemmShape s : sizes)
            for (int trans = 0; trans < 4; ++trans)
                for (float beta : {0.0f, 0.5f})
                    for (check::Values values :
                         {check::Values::finite, check::Values::non_finite}) {
                        s.trans_a = trans & 1;
                        s.trans_b = trans & 2;
                        s.alpha = trans == 3 ? -1.25f : 1.0f;
                        s.beta = beta;
                        require_pass(check::check_gemm(b, s, testing::seed(), values));
                    }
    }
}

TEST_CASE(
    "the non-finite check of gemm fails a gemm that turns NaN into a number or loses an "
    "infinity's sign",
    "[gemm]") {
    // The definition in float, then every NaN of C made 0, or every infinity made +inf.
    struct DropsNaN : testing::TestBackend {
        DropsNaN() : TestBackend("drops_nan") {
            use_kernel(ops::gemm, [](const GemmShape& s, const float* A, const float* B, float* C) {
                cpu_naive::gemm(s, A, B, C);
                for (std::int64_t i = 0; i < s.M * s.N; ++i)
                    if (std::isnan(C[i])) C[i] = 0.0f;
            });
        }
    } drops_nan;
    struct PositiveInfinity : testing::TestBackend {
        PositiveInfinity() : TestBackend("positive_infinity") {
            use_kernel(ops::gemm, [](const GemmShape& s, const float* A, const float* B, float* C) {
                cpu_naive::gemm(s, A, B, C);
                for (std::int64_t i = 0; i < s.M * s.N; ++i)
                    if (std::isinf(C[i])) C[i] = std::numeric_limits<float>::infinity();
            });
        }
    } positive_infinity;
    const GemmShape s{9, 7, 5, false, true, 1.0f, 0.0f};
    for (const Backend* lossy : {static_cast<const Backend*>(&drops_nan),
                                 static_cast<const Backend*>(&positive_infinity)}) {
        INFO(lossy->name());
        CHECK(check::check_gemm(*lossy, s, testing::seed()).comparison.passed);
        CHECK_FALSE(check::check_gemm(*lossy, s, testing::seed(), check::Values::non_finite)
                        .comparison.passed);
    }
}

TEST_CASE(
    "cpu_eigen_omp's gemm splits products past its threshold into panels of C's rows or columns, "
    "the last one short",
    "[gemm]") {
    // Wide (N > M: panels of columns) and tall, each over 5e5 multiply-adds, the longer side not
    // a multiple of the panels' 16.
    const GemmShape sizes[] = {{33, 257, 65}, {257, 33, 65}, {40, 47, 300}};
    const Backend& b = backend("cpu_eigen_omp");
    for (GemmShape s : sizes)
        for (int trans = 0; trans < 4; ++trans)
            for (float beta : {0.0f, 0.5f}) {
                s.trans_a = trans & 1;
                s.trans_b = trans & 2;
                s.beta = beta;
                require_pass(check::check_gemm(b, s, testing::seed()));
            }
}

// OpenBLAS's pool spins for 2^28 cycles after its last work (about a tenth of a second) before it
// sleeps, taking cores from OpenMP's team; use_one_thread_pool stops it. Lent two threads for one
// product, as the openblas benchmark row does, and taken back: in the 100 ms that follow, the
// process uses a fraction of one core's time. Then the pool starts again when asked.
TEST_CASE(
    "cpu_eigen_omp leaves no OpenBLAS thread spinning once OpenBLAS has been lent threads and "
    "they are taken back",
    "[gemm]") {
    backend("cpu_eigen_omp");  // made: OpenBLAS on one thread, its pool stopped
    const int n = 512;
    std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, -1.0f);
    const auto product = [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                    n, 0.0f, c.data(), n);
    };
    const auto cpu_seconds = [] {
        timespec t{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
    };
    for (int round = 0; round < 2; ++round) {
        INFO("round " << round);
        openblas_set_num_threads(2);
        product();
        CHECK(c[0] == 0.5f * 0.25f * float(n));  // exact: 64 in float
        cpu_eigen_omp::use_one_thread_pool();
        const double before = cpu_seconds();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CHECK(cpu_seconds() - before < 0.025);
    }
}

TEST_CASE("every version of every variant's gemm passes its default cross-check cases", "[gemm]") {
    testing::check_default_cases("gemm");  // the GEMM ladder, tensor cores included
}

TEST_CASE("every variant's ReLU forward and backward are exact, for any length", "[relu]") {
    const Shape shapes[] = {{1}, {2}, {3}, {5}, {7}, {33, 65}, {4099}, {1000003}};
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        for (const Shape& s : shapes) {
            for (check::Output out : {check::Output::separate, check::Output::in_place}) {
                require_pass(
                    check::check_activation_forward(b, Activation::relu, s, out, testing::seed()));
                require_pass(
                    check::check_activation_backward(b, Activation::relu, s, out, testing::seed()));
            }
        }
    }
}

TEST_CASE("the cross-check catches a wrong result: a gemm that ignores beta fails", "[gemm]") {
    // A deliberately broken variant: right when beta == 0, wrong otherwise.
    struct IgnoresBeta : testing::TestBackend {
        IgnoresBeta() : TestBackend("ignores_beta") {
            use_kernel(ops::gemm, [](const GemmShape& s, const float* A, const float* B, float* C) {
                GemmShape without_beta = s;
                without_beta.beta = 0;
                cpu_naive::gemm(without_beta, A, B, C);
            });
        }
    } broken;
    const GemmShape s{5, 4, 3, false, false, 1.0f, 0.0f};
    CHECK(check::check_gemm(broken, s, testing::seed()).comparison.passed);
    GemmShape with_beta = s;
    with_beta.beta = 0.5f;
    CHECK_FALSE(check::check_gemm(broken, with_beta, testing::seed()).comparison.passed);
}

TEST_CASE("an op that leaves its output unwritten fails the cross-check", "[relu]") {
    // allocate() fills new tensors with NaN, so a ReLU that writes nothing must fail.
    struct WritesNothing : testing::TestBackend {
        WritesNothing() : TestBackend("writes_nothing") {
            use_kernel(ops::relu_forward, [](std::int64_t, const float*, float*) {});
        }
    } lazy;
    CHECK_FALSE(check::check_activation_forward(lazy, Activation::relu, Shape{100},
                                                check::Output::separate, testing::seed())
                    .comparison.passed);
}
