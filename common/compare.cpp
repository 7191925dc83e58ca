#include "common/compare.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

namespace triptych {

Comparison compare(std::span<const float> out, std::span<const double> ref, Tolerance tol,
                   std::span<const double> scale) {
    Comparison c;
    if (out.size() != ref.size() || (!scale.empty() && scale.size() != ref.size())) {
        c.problem = "output has " + std::to_string(out.size()) + " elements, reference " +
                    std::to_string(ref.size());
        return c;
    }
    double diff_norm2 = 0.0, ref_norm2 = 0.0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const double o = out[i];
        if (!std::isfinite(ref[i])) {
            // The op's rule for NaN and infinite inputs: the output is exactly what the
            // reference is (NaN where it is NaN, the same infinity), or the element fails.
            const bool same = std::isnan(ref[i]) ? std::isnan(o) : o == ref[i];
            if (!same) {
                if (c.first_bad < 0) {
                    c.first_bad = static_cast<std::int64_t>(i);
                    c.first_bad_output = o;
                    c.first_bad_reference = ref[i];
                }
                ++c.bad_count;
                c.max_abs_error = std::numeric_limits<double>::infinity();
            }
            continue;
        }
        const double error = std::abs(o - ref[i]);
        const double magnitude = scale.empty() ? std::abs(ref[i]) : scale[i];
        const double bound = tol.atol + tol.rtol * magnitude;
        // False for a NaN error; an output equal to the reference passes even where the scale is
        // not a number (0 * inf for an output that underflowed to exactly 0).
        const bool good = std::isfinite(o) && (o == ref[i] || error <= bound);
        if (!good) {
            if (c.first_bad < 0) {
                c.first_bad = static_cast<std::int64_t>(i);
                c.first_bad_output = o;
                c.first_bad_reference = ref[i];
            }
            ++c.bad_count;
        }
        c.max_abs_error = std::isfinite(error) ? std::max(c.max_abs_error, error)
                                               : std::numeric_limits<double>::infinity();
        diff_norm2 += error * error;
        ref_norm2 += ref[i] * ref[i];
    }
    c.relative_error = ref_norm2 > 0 ? std::sqrt(diff_norm2 / ref_norm2) : std::sqrt(diff_norm2);
    if (!std::isfinite(c.relative_error))
        c.relative_error = std::numeric_limits<double>::infinity();
    c.passed = c.bad_count == 0 && !out.empty();
    if (out.empty()) c.problem = "nothing to compare (empty output)";
    return c;
}

std::string Comparison::describe(Figure figure) const {
    const auto shown = [figure](const std::string& text) { return figure ? figure(text) : text; };
    if (!problem.empty()) return shown(problem);
    if (passed) {
        char abs_error[32], rel_error[32];
        std::snprintf(abs_error, sizeof abs_error, "%.3g", max_abs_error);
        std::snprintf(rel_error, sizeof rel_error, "%.3g", relative_error);
        return "max abs " + shown(abs_error) + ", rel " + shown(rel_error);
    }
    return shown(failure());
}

std::string Comparison::failure(Figure output) const {
    if (!problem.empty()) return problem;
    char count[96], value[32], reference[40];
    std::snprintf(count, sizeof count,
                  "%lld elements wrong, first at index %lld: ", static_cast<long long>(bad_count),
                  static_cast<long long>(first_bad));
    std::snprintf(value, sizeof value, "%.9g", first_bad_output);
    std::snprintf(reference, sizeof reference, " vs %.9g", first_bad_reference);
    return count + (output ? output(value) : std::string(value)) + reference;
}

}  // namespace triptych
