// The one comparison every check uses: a float32 output against a float64 reference.
//
// Element i passes when |out[i] - ref[i]| <= atol + rtol * scale[i], where scale[i] is the size of
// the quantities that produced ref[i] (for a dot product, sum |a_k * b_k|), or |ref[i]| when the
// op gives none. The test is written `!(error <= bound)`, so NaN never passes where the reference
// is a number, nor does an infinite output. Where the reference itself is NaN or infinite (the
// checks of NaN and infinite inputs), the output must be exactly that: NaN where it is NaN, the
// same infinity where it is infinite. (Those checks fill their outputs with a finite value
// beforehand, not NaN, so that an element nobody writes still fails.)
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace triptych {

struct Tolerance {
    double rtol = 0.0;  // relative to scale[i]
    double atol = 0.0;  // absolute floor
};

struct Comparison {
    bool passed = false;
    double max_abs_error = 0.0;     // max |out - ref| (infinite if any output is not finite)
    double relative_error = 0.0;    // ||out - ref|| / ||ref||, 2-norms
    std::int64_t first_bad = -1;    // index of the first failing element, -1 if none
    std::int64_t bad_count = 0;     // how many elements failed
    double first_bad_output = 0.0;  // out[first_bad] and ref[first_bad], for the message
    double first_bad_reference = 0.0;
    std::string problem;  // "" or why the whole comparison failed (size mismatch)

    // "max abs 1.2e-06, rel 3.4e-08" or "3 elements wrong, first at index 17: 0.5 vs 0.25", or
    // the problem. Each error figure of a passing comparison goes through `figure` where one is
    // given (a lesson marks them so that its output check knows what may differ between
    // machines), as does the whole text of a failing one.
    using Figure = std::string (*)(const std::string&);
    std::string describe(Figure figure = nullptr) const;
    // A failing comparison's text ("3 elements wrong, first at index 17: 0.5 vs 0.25", or the
    // problem) with only the first wrong output's value through `output`: `triptych check`
    // marks that value as the machine's, as it marks the error columns (its last digits follow
    // the kernels' rounding), while the count, the index and the float64 reference are the same
    // on every machine, and a lesson that quotes them can check them anywhere.
    std::string failure(Figure output = nullptr) const;
};

Comparison compare(std::span<const float> out, std::span<const double> ref, Tolerance tol,
                   std::span<const double> scale = {});

}  // namespace triptych
