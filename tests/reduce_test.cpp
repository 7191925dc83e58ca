// sum and mean in both Reduction modes against the float64 reference, and what the deterministic
// mode promises: the same bits on every run, and on cpu_eigen_omp for any number of threads (as
// for the losses, which sum in that mode).
#include <omp.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "tests/seed.hpp"
#include "tests/test_backend.hpp"
#include "tests/variants.hpp"
#include "triptych_config.hpp"
#if TRIPTYCH_GPU_SIM
#include "gpu/runtime/sim/sim.hpp"
#endif

using namespace triptych;
using testing::check_default_cases;
using testing::for_every_variant;
using testing::require_pass;

TEST_CASE(
    "every variant's sum and mean match the float64 reference in both modes, exactly for "
    "summands every order adds exactly, and give NaN or the infinity the reference gives",
    "[reduce]") {
    check_default_cases("sum");
    check_default_cases("mean");
    for_every_variant([](const Backend& b) {
        // Around the sizes of warps, blocks and chunks.
        for (const Shape& s : {Shape{2}, Shape{31}, Shape{32}, Shape{33}, Shape{1023}, Shape{1025},
                               Shape{4095}, Shape{4097}, Shape{65537}, Shape{3, 5, 7, 11}})
            for (Reduction mode : {Reduction::deterministic, Reduction::fast}) {
                require_pass(
                    check::check_sum(b, s, mode, check::Summands::dyadic, testing::seed()));
                require_pass(
                    check::check_mean(b, s, mode, check::Summands::uniform, testing::seed()));
                for (check::Summands summands : check::non_finite_summands(s.elements()))
                    require_pass(check::check_sum(b, s, mode, summands, testing::seed()));
            }
    });
}

TEST_CASE(
    "the non-finite checks of sum fail a compensated (Kahan) sum, whose correction turns one "
    "infinity into NaN",
    "[reduce]") {
    // Kahan's summation carries the rounding error of each addition in c; once the sum is
    // infinite, c = (inf - sum) - inf is NaN, and so is everything after. Better on finite
    // numbers than the plain loop, so it passes those checks.
    struct Kahan : testing::TestBackend {
        Kahan() : TestBackend("kahan") {
            use_kernel(ops::sum, [](std::int64_t n, const float* x, Reduction) {
                float sum = 0, c = 0;
                for (std::int64_t i = 0; i < n; ++i) {
                    const float y = x[i] - c;
                    const float t = sum + y;
                    c = (t - sum) - y;
                    sum = t;
                }
                return sum;
            });
        }
    } kahan;
    // The infinity lands at a random place. As the last element, it leaves the NaN correction
    // unused and the sum right: 1 seed in 1000 at this size. So each kind runs on three seeds,
    // and must fail on one at least (all three slipping through: 1 in 10^9).
    const Shape s{1000};
    const auto fails_on_one_of_three = [&](Reduction mode, check::Summands summands) {
        for (std::uint64_t k = 0; k < 3; ++k)
            if (!check::check_sum(kahan, s, mode, summands, testing::seed() + k).comparison.passed)
                return true;
        return false;
    };
    for (Reduction mode : {Reduction::deterministic, Reduction::fast}) {
        CHECK(check::check_sum(kahan, s, mode, check::Summands::uniform, testing::seed())
                  .comparison.passed);
        CHECK(check::check_sum(kahan, s, mode, check::Summands::nan, testing::seed())
                  .comparison.passed);
        CHECK(fails_on_one_of_three(mode, check::Summands::plus_infinity));
        CHECK(fails_on_one_of_three(mode, check::Summands::minus_infinity));
    }
}

TEST_CASE("every variant's deterministic sum returns identical bits on repeated runs", "[reduce]") {
    for_every_variant([](const Backend& b) {
        for (const Shape& s : {Shape{1000}, Shape{65537}, Shape{1000, 1001}})
            require_pass(check::check_sum_repeatable(b, s, 10, testing::seed()));
    });
}

namespace {

// Calls `reduce` once per OpenMP thread count and returns the bits of each result.
template <typename Reduce>
std::vector<std::uint32_t> bits_for_thread_counts(Reduce reduce) {
    const int saved = omp_get_max_threads();
    std::vector<std::uint32_t> bits;
    for (int threads : {1, 2, 3, 4, 7}) {
        omp_set_num_threads(threads);
        bits.push_back(std::bit_cast<std::uint32_t>(reduce()));
    }
    omp_set_num_threads(saved);
    return bits;
}

}  // namespace

TEST_CASE(
    "cpu_eigen_omp's deterministic sum and its losses give the same bits for any number of "
    "OpenMP threads",
    "[reduce][losses]") {
    const Backend& b = backend("cpu_eigen_omp");
    Rng rng(testing::seed());
    // Large enough that every thread gets chunks (parallel.hpp's threshold is 2^16 floats).
    const std::int64_t rows = 300, cols = 1001;
    std::vector<float> x(rows * cols), target(rows * cols), labels(rows);
    rng.uniform(x, -3, 3);
    rng.uniform(target);
    for (float& label : labels) label = float(rng.next() % cols);
    const Tensor X = b.upload(Shape{rows, cols}, x);
    const Tensor T = b.upload(Shape{rows, cols}, target);
    const Tensor L = b.upload(Shape{rows}, labels);
    Tensor grad = b.allocate(Shape{rows, cols});

    const auto all_equal = [](const std::vector<std::uint32_t>& bits) {
        for (std::uint32_t b : bits)
            if (b != bits.front()) return false;
        return true;
    };
    CHECK(all_equal(bits_for_thread_counts([&] { return b.sum(X, Reduction::deterministic); })));
    CHECK(all_equal(bits_for_thread_counts([&] { return b.mean(X, Reduction::deterministic); })));
    CHECK(all_equal(bits_for_thread_counts([&] { return b.mse_loss(X, T, grad); })));
    CHECK(all_equal(bits_for_thread_counts([&] { return b.softmax_cross_entropy(X, L, grad); })));
}

#if TRIPTYCH_GPU_SIM
// A cudaMalloc and a cudaFree each wait for the whole device: an op called every training step
// must not pay them on every call. The simulator counts its device allocations.
TEST_CASE(
    "the GPU variants' sums and MSE losses allocate no device memory once their workspace is "
    "there",
    "[reduce][losses]") {
    Rng rng(testing::seed());
    std::vector<float> values(65537), target(values.size());
    rng.uniform(values, -1, 1);
    rng.uniform(target, -1, 1);
    for (const char* variant : {"gpu_naive", "gpu_tiled"}) {
        for (const KernelVersion& v : kernel_versions(variant, Op::sum)) {
            const Backend& b = backend(std::string(variant) + "@" + std::to_string(v.number));
            const Tensor x = b.upload(Shape{std::int64_t(values.size())}, values);
            for (Reduction mode : {Reduction::fast, Reduction::deterministic}) {
                INFO(b.name() << (mode == Reduction::fast ? " fast" : " deterministic"));
                b.sum(x, mode);  // may grow the workspace
                const std::uint64_t before = sim::device_mallocs();
                for (int call = 0; call < 3; ++call) b.sum(x, mode);
                CHECK(sim::device_mallocs() == before);
            }
        }
        const Backend& b = backend(variant);
        const Tensor prediction = b.upload(Shape{std::int64_t(values.size())}, values);
        const Tensor y = b.upload(Shape{std::int64_t(target.size())}, target);
        Tensor grad = b.allocate(prediction.shape());
        INFO(b.name() << " mse_loss");
        b.mse_loss(prediction, y, grad);
        const std::uint64_t before = sim::device_mallocs();
        for (int call = 0; call < 3; ++call) b.mse_loss(prediction, y, grad);
        CHECK(sim::device_mallocs() == before);
    }
}
#endif
