// The comparison itself must be able to fail: on NaN, on infinity, on one wrong element, and on
// an output of the wrong length. Otherwise every other test proves nothing.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "common/compare.hpp"

using triptych::compare;
using triptych::Comparison;
using triptych::Tolerance;

namespace {
const std::vector<double> reference = {1.0, -2.0, 3.0, 0.5, 0.0, 7.25};
std::vector<float> copy_of_reference() { return {reference.begin(), reference.end()}; }
}  // namespace

TEST_CASE("an output equal to the reference passes with zero error", "[compare]") {
    const auto c = compare(copy_of_reference(), reference, Tolerance{});
    CHECK(c.passed);
    CHECK(c.max_abs_error == 0.0);
    CHECK(c.first_bad == -1);
}

TEST_CASE("a planted NaN fails even with a huge tolerance", "[compare]") {
    auto out = copy_of_reference();
    out[3] = std::numeric_limits<float>::quiet_NaN();
    const auto c = compare(out, reference, Tolerance{1e30, 1e30});
    CHECK_FALSE(c.passed);
    CHECK(c.first_bad == 3);
    CHECK(c.bad_count == 1);
}

TEST_CASE("an infinite output fails", "[compare]") {
    auto out = copy_of_reference();
    out[0] = std::numeric_limits<float>::infinity();
    const auto c = compare(out, reference, Tolerance{1e30, 1e30});
    CHECK_FALSE(c.passed);
    CHECK(c.first_bad == 0);
}

TEST_CASE(
    "where the reference is NaN or infinite the output must be exactly that: NaN for NaN, the "
    "same infinity, whatever the tolerance",
    "[compare]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const float fnan = std::numeric_limits<float>::quiet_NaN();
    const float finf = std::numeric_limits<float>::infinity();
    const std::vector<double> ref{1.0, nan, inf, -inf};
    CHECK(compare(std::vector<float>{1.0f, fnan, finf, -finf}, ref, Tolerance{}).passed);
    const Tolerance loose{1e30, 1e30};
    const Comparison a_number = compare(std::vector<float>{1.0f, 0.0f, finf, -finf}, ref, loose);
    CHECK_FALSE(a_number.passed);
    CHECK(a_number.first_bad == 1);
    CHECK_FALSE(compare(std::vector<float>{1.0f, fnan, -finf, -finf}, ref, loose).passed);
    CHECK_FALSE(compare(std::vector<float>{1.0f, fnan, fnan, -finf}, ref, loose).passed);
    CHECK_FALSE(compare(std::vector<float>{1.0f, fnan, 3e38f, -finf}, ref, loose).passed);
}

TEST_CASE("an output equal to the reference passes even where the scale is not a number",
          "[compare]") {
    const std::vector<double> ref{0.0, 2.0};
    const std::vector<double> scale{std::numeric_limits<double>::quiet_NaN(), 1.0};
    CHECK(compare(std::vector<float>{0.0f, 2.0f}, ref, Tolerance{1e-6, 0.0}, scale).passed);
    CHECK_FALSE(compare(std::vector<float>{1e-30f, 2.0f}, ref, Tolerance{1e-6, 0.0}, scale).passed);
}

TEST_CASE("a single wrong element fails and is located", "[compare]") {
    auto out = copy_of_reference();
    out[5] += 1e-3f;
    const auto c = compare(out, reference, Tolerance{1e-6, 0.0});
    CHECK_FALSE(c.passed);
    CHECK(c.first_bad == 5);
    CHECK(c.bad_count == 1);
    CHECK(c.max_abs_error == Approx(1e-3).epsilon(1e-3));
    CHECK(c.describe().find("index 5") != std::string::npos);
    // A failing comparison's whole text goes through the figure formatter, a passing one's
    // numbers one by one.
    const auto bracket = [](const std::string& text) { return "[" + text + "]"; };
    const std::string failed = c.describe(+bracket);
    CHECK(failed.front() == '[');
    CHECK(failed.back() == ']');
    const auto good = compare(copy_of_reference(), reference, Tolerance{1e-6, 0.0});
    CHECK(good.describe(+bracket) == "max abs [0], rel [0]");
    CHECK(good.describe() == "max abs 0, rel 0");
    // failure() puts only the wrong output's value through it, not the count, index or reference.
    char value[32];
    std::snprintf(value, sizeof value, "%.9g", double(out[5]));
    CHECK(c.failure(+bracket) ==
          "1 elements wrong, first at index 5: [" + std::string(value) + "] vs 7.25");
    CHECK(c.describe() == c.failure());
}

TEST_CASE("errors within the tolerance pass, and the bound uses the given scale", "[compare]") {
    auto out = copy_of_reference();
    out[1] += 1e-4f;
    CHECK(compare(out, reference, Tolerance{1e-3, 0.0}).passed);
    // Against a scale of 1e-6 the same error is too large.
    const std::vector<double> tiny_scale(reference.size(), 1e-6);
    CHECK_FALSE(compare(out, reference, Tolerance{1e-3, 0.0}, tiny_scale).passed);
}

TEST_CASE("an output of the wrong length, or an empty one, fails", "[compare]") {
    auto out = copy_of_reference();
    out.pop_back();
    CHECK_FALSE(compare(out, reference, Tolerance{1, 1}).passed);
    CHECK_FALSE(compare(std::vector<float>{}, std::vector<double>{}, Tolerance{1, 1}).passed);
}
