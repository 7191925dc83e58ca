// The dense forward op, Y = act(X * W^T + b), fused (dense_forward) and as three steps
// (dense_forward_unfused), on every variant against the float64 reference
// (check/crosscheck.hpp). The Dense layer built on it is tested in dense_test.cpp.
#include <catch2/catch.hpp>

#include "check/crosscheck.hpp"
#include "tests/seed.hpp"
#include "tests/variants.hpp"

using namespace triptych;
using testing::check_default_cases;
using testing::for_every_variant;
using testing::require_pass;

TEST_CASE(
    "every variant's fused and unfused dense forward match the float64 reference for every "
    "activation, and follow the rule for NaN and infinities in x",
    "[dense]") {
    check_default_cases("dense_forward");
    check_default_cases("dense_forward_unfused");
    for_every_variant([](const Backend& b) {
        // Batch 1, one output, and sizes around tiles and the CPU epilogue's blocks.
        const DenseShape sizes[] = {{1, 5, 1}, {3, 1, 7}, {33, 17, 2049}, {129, 64, 31}};
        for (DenseShape s : sizes)
            for (Activation a :
                 {Activation::none, Activation::relu, Activation::sigmoid, Activation::tanh})
                for (check::Values values : {check::Values::finite, check::Values::non_finite}) {
                    s.activation = a;
                    require_pass(check::check_dense_forward(b, s, check::DensePath::fused,
                                                            testing::seed(), values));
                    require_pass(check::check_dense_forward(b, s, check::DensePath::unfused,
                                                            testing::seed(), values));
                }
    });
}
