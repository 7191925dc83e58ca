// conv2d on every variant, with every algorithm it offers, against the float64 reference
// (check/conv_checks.cpp has the tolerances and their reasons), and the reference's backward
// passes against central finite differences of its own forward pass.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "check/description.hpp"
#include "common/errors.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "common/winograd.hpp"
#include "cpu/eigen_omp/conv_direct.hpp"
#include "cpu/naive/conv2d.hpp"
#include "gpu/tiled/divisor.hpp"
#include "tests/finite_difference.hpp"
#include "tests/seed.hpp"
#include "tests/test_backend.hpp"
#include "tests/variants.hpp"

using namespace triptych;
using Catch::Matchers::Approx;
using testing::for_every_variant;
using testing::numerical_gradient;
using testing::random_doubles;
using testing::require_pass;
using testing::weighted_sum;

namespace {

// One of conv2d's default shapes (`triptych check --op conv2d`), except that on the simulator
// LeNet's batch of 64 runs as a batch of 7: the same layers and code paths, in a quarter of the
// time (measured on gpu_tiled, all three algorithms: 1.3 s of CPU instead of 5.2 s, and the suite
// runs three times, then again under the sanitizers). Batch 64 stays in `triptych check`.
Conv2dShape test_shape(const Backend& b, const std::string& text) {
    Conv2dShape s = check::parse_conv2d_shape(text);
    if (b.device_kind() == DeviceKind::Simulator) s.N = std::min<std::int64_t>(s.N, 7);
    return s;
}

bool offers(const Backend& b, ConvAlgorithm algorithm) {
    const std::vector<ConvAlgorithm> algorithms = b.conv2d_algorithms();
    return std::find(algorithms.begin(), algorithms.end(), algorithm) != algorithms.end();
}

}  // namespace

TEST_CASE("every variant offers a conv2d algorithm, and cpu_naive exactly the direct one",
          "[conv]") {
    CHECK(backend("cpu_naive").conv2d_algorithms() == std::vector{ConvAlgorithm::direct});
    for (const std::string& name : backend_names()) {
        const Backend& b = backend(name);
        INFO(name);
        if (b.device_kind() == DeviceKind::Cpu)
            CHECK_FALSE(b.conv2d_algorithms().empty());
        else if (b.conv2d_algorithms().empty())
            WARN("skipped, no conv2d algorithm yet: " << name);
    }
}

TEST_CASE(
    "the benchmarks' named conv shapes, as their run's context gives them to the report, are "
    "each one that `triptych check --shape` reads back as the shape itself",
    "[conv]") {
    for (const bool quick : {false, true}) {
        const std::string json = check::named_conv_shapes_json(quick);
        INFO(json);
        const std::regex pair("\"([a-z0-9_]+)\": \"([0-9,]+)\"");
        std::vector<std::string> names;
        for (auto m = std::sregex_iterator(json.begin(), json.end(), pair);
             m != std::sregex_iterator(); ++m) {
            names.push_back((*m)[1]);
            const Conv2dShape s = check::parse_conv2d_shape((*m)[2]);
            const std::string dims = std::to_string(s.N) + "," + std::to_string(s.C) + "," +
                                     std::to_string(s.H) + "," + std::to_string(s.W) + "," +
                                     std::to_string(s.K) + "," + std::to_string(s.R) + "," +
                                     std::to_string(s.S) + "," + std::to_string(s.stride_h) + "," +
                                     std::to_string(s.stride_w) + "," + std::to_string(s.pad_h) +
                                     "," + std::to_string(s.pad_w);
            CHECK(dims == std::string((*m)[2]));
        }
        // Each name once, the simulator's shape among them; the full run has LeNet's layer.
        CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
        CHECK(std::count(names.begin(), names.end(), "tiny") == 1);
        if (!quick)
            CHECK(json.find("\"lenet_conv1\": \"64,1,28,28,6,5,5,1,1,2,2\"") != std::string::npos);
        // Nothing but those pairs in braces.
        CHECK(json.front() == '{');
        CHECK(json.back() == '}');
        CHECK(std::count(json.begin(), json.end(), ':') == std::ptrdiff_t(names.size()));
    }
}

namespace {

// Each pass of `b`'s `algorithm` on `s` matches the float64 reference, on inputs of `values`.
void require_passes(const Backend& b, const Conv2dShape& s, ConvAlgorithm algorithm,
                    check::Values values = check::Values::finite) {
    const std::uint64_t seed = testing::seed();
    require_pass(check::check_conv2d_forward(b, s, algorithm, seed, values));
    require_pass(check::check_conv2d_backward_data(b, s, algorithm, seed, values));
    require_pass(check::check_conv2d_backward_weights(b, s, algorithm, seed, values));
}

// require_passes with every algorithm of every variant, on each of `shapes` the algorithm takes.
void require_passes_on(const std::vector<std::string>& shapes, check::Values values) {
    for (ConvAlgorithm algorithm : conv_algorithms)
        for (const std::string& text : shapes)
            for_every_variant([&](const Backend& b) {
                const Conv2dShape s = test_shape(b, text);
                if (offers(b, algorithm) && conv_algorithm_applies(algorithm, s))
                    require_passes(b, s, algorithm, values);
            });
}

}  // namespace

TEST_CASE(
    "every variant's conv2d forward, backward_data and backward_weights match the float64 "
    "reference with every algorithm it offers: 1x1 and whole-input filters, strides 2 and 3, "
    "padding over half the filter, non-square shapes, C = 1 and K = 1, LeNet's layers",
    "[conv]") {
    // One algorithm and one shape at a time, so that a variant still writing an algorithm, or one
    // that refuses some shapes (cuDNN's FFT takes stride 1 only), is tested on the rest.
    for (ConvAlgorithm algorithm : conv_algorithms)
        for (const std::string& text : check::op("conv2d").default_shapes)
            for_every_variant([&](const Backend& b) {
                if (!offers(b, algorithm)) return;
                const Conv2dShape s = test_shape(b, text);
                const std::uint64_t seed = testing::seed();
                if (!conv_algorithm_applies(algorithm, s)) {
                    // Refused by each pass (3x3 and 5x5 at stride 1 only).
                    INFO(s.str());
                    CHECK_THROWS_AS(check::check_conv2d_forward(b, s, algorithm, seed),
                                    Unsupported);
                    CHECK_THROWS_AS(check::check_conv2d_backward_data(b, s, algorithm, seed),
                                    Unsupported);
                    CHECK_THROWS_AS(check::check_conv2d_backward_weights(b, s, algorithm, seed),
                                    Unsupported);
                    return;
                }
                require_passes(b, s, algorithm);
            });
}

TEST_CASE(
    "every variant's conv2d matches the reference on output rows far shorter than a SIMD vector, "
    "with every algorithm, and writes nothing outside its outputs",
    "[conv]") {
    // Rows of 1 and 2 outputs (3 and 4 columns padded by 1) under 5x5 and 3x3 filters at stride
    // 1, where winograd's 5x5 passes once stored whole vectors from the rows before the last
    // past the end of y and dx. A host buffer's guards (common/host_backend.hpp) stop the program
    // when it is freed if anything wrote outside it.
    const std::vector<std::string> shapes = {"3,2,10,3,4,5,5,1,1,2,1", "2,3,9,4,2,5,5,1,1,2,1",
                                             "3,2,7,1,3,3,3,1,1,1,1"};
    require_passes_on(shapes, check::Values::finite);
}

TEST_CASE(
    "every variant's conv2d follows the rule for NaN and infinities in x and dy with every "
    "algorithm: no number where the reference has none, nor the other infinity",
    "[conv]") {
    // Shapes where the special values meet padding (stride 2, pad 3, pad 5), the direct kernels'
    // flat planes (LeNet's conv1, pad 3,0), im2col's shifted form (16 channels) and Winograd's
    // tiles.
    const std::vector<std::string> shapes = {"2,3,17,19,4,3,3,2,1",    "3,5,7,6,4,3,3,1,3",
                                             "2,3,9,8,5,5,5,1,5",      "64,1,28,28,6,5,5,1,2",
                                             "2,3,11,9,4,5,5,1,1,3,0", "2,16,11,13,67,3,3,1,1"};
    require_passes_on(shapes, check::Values::non_finite);
}

namespace {

// Stand-ins for a variant's conv2d: every pass as the definition in float, then `after` applied to
// each pass's output (dw only, of backward_weights), with the algorithms whose checks they test.
template <void (*after)(float* out, std::int64_t n)>
struct DefinitionThen : testing::TestBackend {
    DefinitionThen() : TestBackend("definition_then") {
        use_kernel(ops::conv2d_forward, [](const Conv2dShape& s, ConvAlgorithm, const float* x,
                                           const float* w, const float* b, float* y) {
            cpu_naive::conv2d_forward<float>(s, x, w, b, y);
            after(y, s.y_shape().elements());
        });
        use_kernel(ops::conv2d_backward_data, [](const Conv2dShape& s, ConvAlgorithm,
                                                 const float* dy, const float* w, float* dx) {
            cpu_naive::conv2d_backward_data<float>(s, dy, w, dx);
            after(dx, s.x_shape().elements());
        });
        use_kernel(ops::conv2d_backward_weights,
                   [](const Conv2dShape& s, ConvAlgorithm, const float* x, const float* dy,
                      float* dw, float* db) {
                       cpu_naive::conv2d_backward_weights<float>(s, x, dy, dw, db);
                       after(dw, s.w_shape().elements());
                   });
    }
    std::vector<ConvAlgorithm> conv2d_algorithms() const override {
        return {ConvAlgorithm::direct, ConvAlgorithm::fft, ConvAlgorithm::winograd};
    }
};

// One way of losing a non-finite value, applied to every output: the kernels the non-finite
// check must fail.
enum class Loss { nan_to_zero, clamp, flip_infinity };

template <Loss loss>
void lose(float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        if (loss == Loss::nan_to_zero && std::isnan(out[i])) out[i] = 0.0f;
        if (loss == Loss::clamp) out[i] = std::clamp(out[i], -1e30f, 1e30f);
        if (loss == Loss::flip_infinity && std::isinf(out[i])) out[i] = -out[i];
    }
}

template <Loss loss>
using LossyConv = DefinitionThen<lose<loss>>;

// Every output scaled by `factor`: a stand-in for an FFT or Winograd convolution with a given
// relative error.
template <float factor>
void scale(float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] *= factor;
}

template <float factor>
using ScaledConv = DefinitionThen<scale<factor>>;

}  // namespace

TEST_CASE(
    "the non-finite check of conv2d fails a kernel that turns NaN into a number, or an infinity "
    "into a large number or the other infinity",
    "[conv]") {
    const Conv2dShape s{2, 3, 9, 8, 4, 3, 3, 1, 1};
    const std::uint64_t seed = testing::seed();
    const auto forward = [&](const Backend& lossy, ConvAlgorithm algorithm) {
        return check::check_conv2d_forward(lossy, s, algorithm, seed, check::Values::non_finite)
            .comparison.passed;
    };
    const auto weights = [&](const Backend& lossy, ConvAlgorithm algorithm) {
        return check::check_conv2d_backward_weights(lossy, s, algorithm, seed,
                                                    check::Values::non_finite)[0]
            .comparison.passed;
    };
    const LossyConv<Loss::nan_to_zero> nan_to_zero;
    const LossyConv<Loss::clamp> clamp;
    const LossyConv<Loss::flip_infinity> flip_infinity;
    for (ConvAlgorithm algorithm : {ConvAlgorithm::direct, ConvAlgorithm::fft}) {
        INFO(to_string(algorithm));
        // Even where an algorithm may spread NaN (fft), it may not make a number of one.
        CHECK_FALSE(forward(nan_to_zero, algorithm));
        CHECK_FALSE(forward(clamp, algorithm));
        CHECK_FALSE(forward(flip_infinity, algorithm));
        CHECK_FALSE(weights(nan_to_zero, algorithm));
        CHECK_FALSE(weights(clamp, algorithm));
        CHECK_FALSE(weights(flip_infinity, algorithm));
    }
    // Without non-finite inputs the lossy kernels are the definition: they pass.
    CHECK(check::check_conv2d_forward(clamp, s, ConvAlgorithm::direct, seed).comparison.passed);
}

TEST_CASE(
    "the fft tolerance is relative to whole planes, yet fails outputs 0.1% off; the direct "
    "tolerance fails them at 0.01%",
    "[conv]") {
    // LeNet's second convolution at batch 2: sums of 150 products, FFTs of 32 x 32 (L = 10).
    const Conv2dShape s{2, 6, 14, 14, 16, 5, 5};
    const auto passes = [&](const Backend& scaled, ConvAlgorithm algorithm) {
        return check::check_conv2d_forward(scaled, s, algorithm, testing::seed()).comparison.passed;
    };
    CHECK(passes(ScaledConv<1.0f + 1e-6f>(), ConvAlgorithm::fft));
    CHECK_FALSE(passes(ScaledConv<1.0f + 1e-3f>(), ConvAlgorithm::fft));
    CHECK(passes(ScaledConv<1.0f + 1e-6f>(), ConvAlgorithm::direct));
    CHECK_FALSE(passes(ScaledConv<1.0f + 1e-4f>(), ConvAlgorithm::direct));
}

TEST_CASE(
    "the winograd tolerance, larger than direct's, still fails every pass 0.1% off on ResNet's "
    "channel counts (3x3) and on LeNet's second layer (5x5)",
    "[conv]") {
    // 64 channels in and out, 3x3, padding 1, on 2 images of 9 x 11 (odd P and Q): sums of 576
    // products, as ResNet's layer. LeNet's second layer at batch 2: F(4, 5) along columns.
    for (const Conv2dShape& s :
         {Conv2dShape{2, 64, 9, 11, 64, 3, 3, 1, 1, 1, 1}, Conv2dShape{2, 6, 14, 14, 16, 5, 5}}) {
        INFO(s.str());
        const std::uint64_t seed = testing::seed();
        const auto forward = [&](const Backend& b) {
            return check::check_conv2d_forward(b, s, ConvAlgorithm::winograd, seed)
                .comparison.passed;
        };
        const auto backward_data = [&](const Backend& b) {
            return check::check_conv2d_backward_data(b, s, ConvAlgorithm::winograd, seed)
                .comparison.passed;
        };
        const auto dw = [&](const Backend& b) {
            return check::check_conv2d_backward_weights(b, s, ConvAlgorithm::winograd, seed)[0]
                .comparison.passed;
        };
        const ScaledConv<1.0f + 1e-6f> close;
        const ScaledConv<1.0f + 1e-3f> off;
        CHECK(forward(close));
        CHECK(backward_data(close));
        CHECK(dw(close));
        CHECK_FALSE(forward(off));
        CHECK_FALSE(backward_data(off));
        CHECK_FALSE(dw(off));
    }
}

TEST_CASE("F(4, 5)'s matrices compute four outputs of a 5-tap correlation", "[conv]") {
    // y = A^T [(G g) . (B^T d)] against the definition, in double, on fresh random d and g; the
    // matrices hold fractions like 1/90, so to a few roundings of the sum of |d g|.
    const WinogradMatrices& f = winograd_f4_5;
    constexpr int m = WinogradMatrices::m, r = WinogradMatrices::r, alpha = WinogradMatrices::alpha;
    Rng rng(testing::seed());
    for (int trial = 0; trial < 100; ++trial) {
        const std::vector<double> d = random_doubles(alpha, rng), g = random_doubles(r, rng);
        double Gg[alpha] = {}, Bd[alpha] = {};
        for (int j = 0; j < alpha; ++j) {
            for (int k = 0; k < r; ++k) Gg[j] += f.G[j][k] * g[std::size_t(k)];
            for (int e = 0; e < alpha; ++e) Bd[j] += f.BT[j][e] * d[std::size_t(e)];
        }
        for (int i = 0; i < m; ++i) {
            double y = 0, expected = 0, scale = 0;
            for (int j = 0; j < alpha; ++j) y += f.AT[i][j] * Gg[j] * Bd[j];
            for (int k = 0; k < r; ++k) {
                expected += d[std::size_t(i + k)] * g[std::size_t(k)];
                scale += std::abs(d[std::size_t(i + k)] * g[std::size_t(k)]);
            }
            INFO("trial " << trial << ", output " << i);
            REQUIRE(std::abs(y - expected) <= 1e-12 * scale);
        }
    }
}

TEST_CASE("the cross-check catches a conv2d that flips its filters (a true convolution)",
          "[conv]") {
    struct FlippedConv : testing::TestBackend {
        FlippedConv() : TestBackend("flipped_conv") {
            use_kernel(ops::conv2d_forward, [](const Conv2dShape& s, ConvAlgorithm, const float* x,
                                               const float* w, const float* b, float* y) {
                std::vector<float> flipped(static_cast<std::size_t>(s.w_shape().elements()));
                for (std::int64_t kc = 0; kc < s.K * s.C; ++kc)
                    for (std::int64_t r = 0; r < s.R; ++r)
                        for (std::int64_t t = 0; t < s.S; ++t)
                            flipped[(kc * s.R + r) * s.S + t] =
                                w[(kc * s.R + (s.R - 1 - r)) * s.S + (s.S - 1 - t)];
                cpu_naive::conv2d_forward<float>(s, x, flipped.data(), b, y);
            });
        }
        std::vector<ConvAlgorithm> conv2d_algorithms() const override {
            return {ConvAlgorithm::direct};
        }
    } flipped;
    // A 1x1 filter reads the same either way; a 3x3 one does not.
    CHECK(check::check_conv2d_forward(flipped, Conv2dShape{2, 3, 9, 8, 4, 1, 1},
                                      ConvAlgorithm::direct, testing::seed())
              .comparison.passed);
    CHECK_FALSE(check::check_conv2d_forward(flipped, Conv2dShape{2, 3, 9, 8, 4, 3, 3},
                                            ConvAlgorithm::direct, testing::seed())
                    .comparison.passed);
}

TEST_CASE(
    "cpu_eigen_omp's direct conv2d takes the kernel its plan counts cheapest; by inputs matches "
    "the float64 reference with rows spread by a stride; 1 to 8 output channels; filter columns "
    "in several blocks",
    "[conv]") {
    using cpu_eigen_omp::conv2d_direct_kernels;
    // LeNet's layers, as lesson 08 counts them, with AVX-512's 16 lanes or AVX2's 8.
    const Conv2dShape conv1 = check::parse_conv2d_shape("64,1,28,28,6,5,5,1,2");
    const Conv2dShape conv2 = check::parse_conv2d_shape("64,6,14,14,16,5,5,1,0");
    CHECK(conv2d_direct_kernels(conv1).forward == "by pixels");
    // conv1's backward_data: by inputs counts 58 against by pixels' 60 with 16 lanes, 113 against
    // 108 with 8.
#ifdef __AVX512F__
    CHECK(conv2d_direct_kernels(conv1).backward_data == "by inputs");
#else
    CHECK(conv2d_direct_kernels(conv1).backward_data == "by pixels");
#endif
    CHECK(conv2d_direct_kernels(conv2).forward == "by channels");
    CHECK(conv2d_direct_kernels(conv2).backward_data == "by inputs");
    // Lesson 10's 9x9 filter: by inputs counts cheaper, but its sums (144 KiB) would not fit the
    // L1 cache it is limited to.
    const Conv2dShape nine = check::parse_conv2d_shape("1,4,32,32,4,9,9,1,4");
    CHECK(conv2d_direct_kernels(nine).forward == "by pixels");
    // Rows of 4 inputs padded to 40,000 outputs: by inputs counts far cheaper, but would keep
    // 12,500 column masks (5 filter columns x 2,500 Vecs of outputs with 16 lanes; twice that with
    // 8).
    const Conv2dShape wide = check::parse_conv2d_shape("1,8,5,4,2,5,5,1,1,0,20000");
    CHECK(conv2d_direct_kernels(wide).forward == "by pixels");

    // Shapes whose pass goes by inputs with 16 lanes and with 8: inputs much narrower than the
    // rows padding makes of them. N,C,H,W,K,R,S,STRIDE_H,STRIDE_W,PAD_H,PAD_W.
    struct Case {
        const char* shape;
        bool forward;  // else backward_data
    };
    const Case cases[] = {
        {"64,6,14,14,16,5,5,1,0", false},     // LeNet's conv2: 6 channels, 5 filter columns
        {"2,3,9,12,5,4,7,2,1,1,0", false},    // dy's rows spread by stride 2, 3 channels
        {"3,7,6,9,1,3,5,1,1,3,4", true},      // 1 output channel, with a bias
        {"2,9,5,3,7,2,5,1,1,1,4", true},      // 7 channels
        {"2,11,4,2,8,3,6,1,1,2,5", true},     // 8 channels
        {"3,5,4,16,12,2,13,1,1,1,0", false},  // 13 filter columns, in 7 blocks (16 lanes) or 13
    };
    const Backend& b = backend("cpu_eigen_omp");
    for (const Case& c : cases) {
        const Conv2dShape s = check::parse_conv2d_shape(c.shape);
        INFO(c.shape);
        const cpu_eigen_omp::DirectKernels kernels = conv2d_direct_kernels(s);
        const std::uint64_t seed = testing::seed();
        if (c.forward) {
            CHECK(kernels.forward == "by inputs");
            require_pass(check::check_conv2d_forward(b, s, ConvAlgorithm::direct, seed));
        } else {
            CHECK(kernels.backward_data == "by inputs");
            require_pass(check::check_conv2d_backward_data(b, s, ConvAlgorithm::direct, seed));
        }
    }
}

TEST_CASE(
    "the reference's conv2d backward passes (dx, dw, db) are the derivatives of its forward pass "
    "(finite differences), with strides and padding",
    "[conv][gradient]") {
    Rng rng(testing::seed());
    // Stride 2 with padding 1; then stride 3 by 1 with padding 2 on a 2x3 filter (more than half
    // of it), where some input rows are never read and must get a zero gradient.
    for (const Conv2dShape& s : {Conv2dShape{2, 2, 5, 6, 3, 3, 2, 2, 2, 1, 1},
                                 Conv2dShape{1, 3, 7, 4, 2, 2, 3, 3, 1, 2, 0}}) {
        INFO(s.str());
        const std::vector<double> x = random_doubles(s.x_shape().elements(), rng);
        const std::vector<double> w = random_doubles(s.w_shape().elements(), rng);
        const std::vector<double> b = random_doubles(s.K, rng);
        const std::vector<double> dy = random_doubles(s.y_shape().elements(), rng);
        // L(x, w, b) = sum dy * conv(x, w, b)
        const auto loss = [&](const std::vector<double>& xs, const std::vector<double>& ws,
                              const std::vector<double>& bs) {
            std::vector<double> y(static_cast<std::size_t>(s.y_shape().elements()));
            cpu_naive::conv2d_forward<double>(s, xs.data(), ws.data(), bs.data(), y.data());
            return weighted_sum(dy, y);
        };
        std::vector<double> dx(x.size()), dw(w.size()), db(b.size());
        cpu_naive::conv2d_backward_data<double>(s, dy.data(), w.data(), dx.data());
        cpu_naive::conv2d_backward_weights<double>(s, x.data(), dy.data(), dw.data(), db.data());

        const auto by_x = [&](const std::vector<double>& v) { return loss(v, w, b); };
        const auto by_w = [&](const std::vector<double>& v) { return loss(x, v, b); };
        const auto by_b = [&](const std::vector<double>& v) { return loss(x, w, v); };
        CHECK_THAT(dx, Approx(numerical_gradient(by_x, x)).epsilon(1e-7).margin(1e-9));
        CHECK_THAT(dw, Approx(numerical_gradient(by_w, w)).epsilon(1e-7).margin(1e-9));
        CHECK_THAT(db, Approx(numerical_gradient(by_b, b)).epsilon(1e-7).margin(1e-9));
    }
}

TEST_CASE("gpu_tiled's Divisor (multiply-high and shift) divides as / does, for every divisor size",
          "[conv]") {
    // conv_implicit_gemm.cu turns flat indices into coordinates with it, on every element it
    // gathers. Divisors: 1 to 2000, every power of two and its neighbours, the largest int; for
    // each, the dividends where rounding is closest (multiples of d and their neighbours), the
    // largest int and random ones (the run's seed).
    std::vector<int> divisors;
    for (int d = 1; d <= 2000; ++d) divisors.push_back(d);
    for (int bit = 11; bit <= 30; ++bit)
        for (int delta : {-1, 0, 1}) divisors.push_back((1 << bit) + delta);
    divisors.push_back(INT_MAX);
    std::mt19937_64 random(testing::seed());
    std::uniform_int_distribution<int> dividend(0, INT_MAX);
    for (int d : divisors) {
        const gpu_tiled::Divisor divisor(d);
        std::vector<int> dividends = {0, 1, d - 1, d, INT_MAX, INT_MAX - 1};
        if (d < INT_MAX / 2) dividends.insert(dividends.end(), {d + 1, 2 * d - 1, 2 * d});
        const int top = INT_MAX / d * d;  // the largest multiple of d
        dividends.insert(dividends.end(), {top, top - 1});
        for (int i = 0; i < 64; ++i) dividends.push_back(dividend(random));
        for (int n : dividends) {
            const auto [quotient, remainder] = divisor.divmod(n);
            if (quotient != n / d || remainder != n % d)
                FAIL(n << " / " << d << ": Divisor gives " << quotient << " rest " << remainder
                       << ", / gives " << n / d << " rest " << n % d);
        }
    }
}
