// Max and average pooling on every variant against the float64 reference (check/conv_checks.cpp
// has the inputs, with their ties, and the tolerances), and the reference's backward passes
// against central finite differences of its own forward passes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/kernels.hpp"
#include "common/math.hpp"
#include "common/pooling.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "cpu/naive/pool2d.hpp"
#include "tests/finite_difference.hpp"
#include "tests/seed.hpp"
#include "tests/test_backend.hpp"
#include "tests/variants.hpp"
#include "triptych_config.hpp"
#if TRIPTYCH_GPU_SIM
#include "tests/sim/test_support.hpp"
#endif

using namespace triptych;
using Catch::Matchers::Approx;
using testing::check_default_cases;
using testing::numerical_gradient;
using testing::random_doubles;
using testing::weighted_sum;

TEST_CASE(
    "every variant's max pooling matches the float64 reference exactly, y and argmax, ties going "
    "to the first element of the window and padding never a candidate",
    "[pool]") {
    check_default_cases("max_pool2d");
}

TEST_CASE(
    "every variant's average pooling matches the float64 reference, dividing by the input "
    "elements each window covers (padding not counted), with overlapping windows",
    "[pool]") {
    check_default_cases("avg_pool2d");
}

TEST_CASE(
    "a stride near 2^63 (one window per row or column) pools right on every variant and every "
    "version, and the tolerance of a sum over overlapping windows stays positive",
    "[pool]") {
    // ceil_div(window, stride) once computed window + stride - 1, which overflowed here: the
    // tolerance of average pooling's backward came out 0 or negative, and a right kernel failed.
    constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::max();
    STATIC_REQUIRE(ceil_div<std::int64_t>(2, huge) == 1);
    STATIC_REQUIRE(ceil_div<std::int64_t>(huge, 2) == (std::int64_t(1) << 62));
    STATIC_REQUIRE(ceil_div<std::int64_t>(0, 5) == 0);
    STATIC_REQUIRE(ceil_div<std::int64_t>(-3, 2) == -1);  // ceil(-1.5): a column left of the image
    STATIC_REQUIRE(ceil_div<std::int64_t>(12, 4) == 3);
    STATIC_REQUIRE(ceil_div<std::int64_t>(13, 4) == 4);
    const std::string shapes[] = {"1,1,4,4,2,2,1," + std::to_string(huge) + ",1,1",
                                  "2,2,9,9,5,5," + std::to_string(huge) + ",2,2,2",
                                  "2,2,9,9,3,3,2," + std::to_string(huge) + ",1,1"};
    for (const std::string op_name : {"max_pool2d", "avg_pool2d"}) {
        const check::OpDescription& op = check::op(op_name);
        testing::for_every_variant([&](const Backend& variant) {
            for (const std::string& name : check::versions_to_check(op, variant.name()))
                for (const std::string& shape : shapes) {
                    INFO(op_name << " on " << name << ", shape " << shape);
                    testing::require_pass(op.run(backend(name), shape, testing::seed()));
                }
        });
    }
}

namespace {

// A max pool with one of two classic mistakes: the last of equal values wins (>= instead of >),
// or a window that hangs over the edge counts the padding as a 0.
enum class Mistake { last_of_ties, padding_as_zero };

template <Mistake mistake>
void sloppy_max_pool(const Pool2dShape& s, const float* x, float* y, float* argmax) {
    const std::int64_t P = s.P(), Q = s.Q();
    for (std::int64_t plane = 0; plane < s.N * s.C; ++plane) {
        const float* in = x + plane * s.H * s.W;
        for (std::int64_t p = 0; p < P; ++p)
            for (std::int64_t q = 0; q < Q; ++q) {
                const PoolWindow win = pool_window(s, p, q);
                std::int64_t best = win.h0 * s.W + win.w0;
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w) {
                        const float v = in[h * s.W + w];
                        if (v > in[best] || (mistake == Mistake::last_of_ties && v == in[best]))
                            best = h * s.W + w;
                    }
                float value = in[best];
                const bool over_padding = win.count() < s.window_h * s.window_w;
                if (mistake == Mistake::padding_as_zero && over_padding)
                    value = std::max(value, 0.0f);
                y[plane * P * Q + p * Q + q] = value;
                argmax[plane * P * Q + p * Q + q] = float(best);
            }
    }
}

template <Mistake mistake>
struct SloppyMaxPool : testing::TestBackend {
    SloppyMaxPool() : TestBackend("sloppy_max_pool") {
        use_kernel(ops::max_pool2d_forward, sloppy_max_pool<mistake>);
    }
};

}  // namespace

TEST_CASE(
    "the cross-check catches a max pool whose ties go to the last element, and one that takes "
    "padding as 0",
    "[pool]") {
    const Pool2dShape padded{2, 3, 15, 13, 3, 3, 2, 2, 1, 1};
    const SloppyMaxPool<Mistake::last_of_ties> last_of_ties;
    const std::vector<check::CaseResult> ties =
        check::check_max_pool2d_forward(last_of_ties, padded, testing::seed());
    CHECK(ties[0].comparison.passed);        // the same values...
    CHECK_FALSE(ties[1].comparison.passed);  // ...from the wrong places

    const SloppyMaxPool<Mistake::padding_as_zero> padding_as_zero;
    CHECK_FALSE(check::check_max_pool2d_forward(padding_as_zero, padded, testing::seed())[0]
                    .comparison.passed);
}

TEST_CASE(
    "the reference's pooling backward passes are the derivatives of their forward passes (finite "
    "differences; max pooling on distinct values)",
    "[pool][gradient]") {
    Rng rng(testing::seed());
    // Overlapping 3x2 windows with stride 2 and padding 1; 3x3 windows with stride 1 (up to nine
    // windows share an input element) and padding 1.
    for (const Pool2dShape& s :
         {Pool2dShape{2, 2, 7, 6, 3, 2, 2, 2, 1, 1}, Pool2dShape{1, 1, 5, 5, 3, 3, 1, 1, 1, 1}}) {
        INFO(s.str());
        const std::size_t n = static_cast<std::size_t>(s.x_shape().elements());
        const std::vector<double> dy = random_doubles(s.y_shape().elements(), rng);
        std::vector<double> y(dy.size()), argmax(dy.size()), dx(n);

        // x: a shuffle of n evenly spaced values in (-1, 1), 2/n apart, far more than the step h,
        // so no nudge changes which element is a window's maximum.
        std::vector<double> x(n);
        std::iota(x.begin(), x.end(), 0.0);
        for (std::size_t i = n - 1; i > 0; --i) std::swap(x[i], x[rng.next() % (i + 1)]);
        for (double& v : x) v = (2 * v + 1) / double(n) - 1;
        const auto max_loss = [&](const std::vector<double>& input) {
            std::vector<double> out(dy.size()), where(dy.size());
            cpu_naive::max_pool2d_forward<double>(s, input.data(), out.data(), where.data());
            return weighted_sum(dy, out);
        };
        cpu_naive::max_pool2d_forward<double>(s, x.data(), y.data(), argmax.data());
        cpu_naive::max_pool2d_backward<double>(s, dy.data(), argmax.data(), dx.data());
        CHECK_THAT(dx, Approx(numerical_gradient(max_loss, x)).epsilon(1e-7).margin(1e-9));

        const auto avg_loss = [&](const std::vector<double>& input) {
            std::vector<double> out(dy.size());
            cpu_naive::avg_pool2d_forward<double>(s, input.data(), out.data());
            return weighted_sum(dy, out);
        };
        cpu_naive::avg_pool2d_backward<double>(s, dy.data(), dx.data());
        CHECK_THAT(dx, Approx(numerical_gradient(avg_loss, x)).epsilon(1e-7).margin(1e-9));
    }
}

#if TRIPTYCH_GPU_SIM
TEST_CASE(
    "a GPU pooling backward registered with AdditionOrder::fixed gives the same bits in every "
    "thread order; only the atomic scatters are declared arrival",
    "[pool][versions]") {
    Rng rng(testing::seed());
    // 3x3 windows at stride 1: up to nine windows add into one input element, so the order of
    // the additions decides the last bits wherever it changes.
    const Pool2dShape s{2, 3, 9, 11, 3, 3, 1, 1, 1, 1};
    std::vector<float> x(s.x_shape().elements()), dy(s.y_shape().elements());
    rng.uniform(x, -1, 1);
    rng.uniform(dy, -1, 1);
    int fixed_kernels = 0;
    for (const char* variant : {"gpu_naive", "gpu_tiled"}) {
        for (Op op : {Op::max_pool2d_backward, Op::avg_pool2d_backward}) {
            for (const KernelVersion& v : kernel_versions(variant, op)) {
                const Backend& b = backend(std::string(variant) + "@" + std::to_string(v.number));
                INFO(b.name() << " " << op_name(op) << " version " << v.number);
                // The atomic scatters, and only they, say so.
                CHECK((v.additions == AdditionOrder::arrival) == (v.name == "atomics"));
                if (v.additions == AdditionOrder::arrival) continue;
                ++fixed_kernels;
                const Tensor X = b.upload(s.x_shape(), x), DY = b.upload(s.y_shape(), dy);
                Tensor Y = b.allocate(s.y_shape()), argmax = b.allocate(s.y_shape());
                Tensor dx = b.allocate(s.x_shape());
                b.max_pool2d_forward(s, X, Y, argmax);
                std::vector<std::vector<float>> results;
                for (const char* order : {"forward", "reverse", "random:7"}) {
                    sim_tests::ScopedThreadOrder scoped(order);
                    if (op == Op::max_pool2d_backward)
                        b.max_pool2d_backward(s, DY, argmax, dx);
                    else
                        b.avg_pool2d_backward(s, DY, dx);
                    results.push_back(b.download(dx));
                }
                for (const std::vector<float>& r : results)
                    CHECK(std::equal(r.begin(), r.end(), results.front().begin(),
                                     [](float a, float c) {
                                         return std::bit_cast<std::uint32_t>(a) ==
                                                std::bit_cast<std::uint32_t>(c);
                                     }));
            }
        }
    }
    CHECK(fixed_kernels >= 2);  // gpu_tiled's two backward passes at least
}
#endif
