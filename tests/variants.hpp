// What the cross-check tests share: how a case that fails is reported (op, variant, shape, seed
// and the comparison's verdict, everything needed to replay it), and the loop over every
// registered variant.
//
// A variant that does not implement an op (or an algorithm, or refuses a shape, as cuDNN's FFT
// refuses strides) throws Unsupported. For gpu_vendor, which implements what NVIDIA's libraries
// offer, that is skipped with a WARN; for a hand-written variant (cpu_naive, cpu_eigen_omp,
// gpu_naive, gpu_tiled) it is a failure: every one of them implements every op.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/registry.hpp"
#include "tests/seed.hpp"

namespace triptych::testing {

// Whether a variant is written by hand in this project (all but gpu_vendor, the libraries).
inline bool hand_written(const Backend& b) { return b.variant() != "gpu_vendor"; }

inline void require_pass(const check::CaseResult& r) {
    if (!r.not_run.empty()) {  // Unsupported for this pass or algorithm: see the top of this file
        if (hand_written(backend(r.variant)))
            FAIL_CHECK("hand-written variant " << r.variant << " must run " << r.op << " "
                                               << r.shape << ": " << r.not_run);
        else
            WARN("skipped, " << r.variant << " does not run " << r.op << " " << r.shape << ": "
                             << r.not_run);
        return;
    }
    INFO(r.op << " on " << r.variant << " (" << r.device << "), shape " << r.shape << ", seed "
              << seed() << ", tolerance " << r.tolerance << ": " << r.comparison.describe());
    CHECK(r.comparison.passed);
}

inline void require_pass(const std::vector<check::CaseResult>& results) {
    for (const check::CaseResult& r : results) require_pass(r);
}

// Runs check(backend) on every registered variant (see the top of this file for Unsupported).
template <typename Check>
void for_every_variant(Check check) {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        try {
            check(b);
        } catch (const Unsupported& e) {
            if (hand_written(b))
                FAIL_CHECK("hand-written variant " << variant
                                                   << " must implement every op: " << e.what());
            else
                WARN("skipped, the variant does not run it: " << e.what());
        }
    }
}

// Every default case of the named op (check::op(name).default_shapes), on every variant and
// every version of the op's kernels it has (check::versions_to_check).
inline void check_default_cases(const std::string& op_name) {
    const check::OpDescription& op = check::op(op_name);
    for_every_variant([&](const Backend& variant) {
        for (const std::string& name : check::versions_to_check(op, variant.name())) {
            const Backend& b = backend(name);
            for (const std::string& shape : op.default_shapes)
                require_pass(op.run(b, shape, seed()));
        }
    });
}

}  // namespace triptych::testing
