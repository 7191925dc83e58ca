// What the cross-check tests share: how a case that fails is reported (op, variant, shape, seed
// and the comparison's verdict, everything needed to replay it), and the loop over every
// registered variant.
//
// A variant that does not implement an op (or an algorithm, or refuses a shape, as cuDNN's FFT
// refuses strides) throws Unsupported. For a GPU variant that is skipped with a WARN; for a CPU
// variant it is a failure, so nothing CPU-side is ever quietly missing.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/registry.hpp"
#include "tests/seed.hpp"

namespace triptych::testing {

inline void require_pass(const check::CaseResult& r) {
    if (!r.not_run.empty()) {  // Unsupported for this pass or algorithm: see the top of this file
        if (backend(r.variant).device_kind() == DeviceKind::Cpu)
            FAIL_CHECK("CPU variant " << r.variant << " must run " << r.op << " " << r.shape
                                      << ": " << r.not_run);
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
            if (b.device_kind() == DeviceKind::Cpu)
                FAIL_CHECK("CPU variant " << variant << " must implement every op: " << e.what());
            else
                WARN("skipped, the variant does not run it: " << e.what());
        }
    }
}

// Every default case of the named op (check::op(name).default_shapes), on every variant.
inline void check_default_cases(const std::string& op_name) {
    const check::OpCheck& op = check::op(op_name);
    for_every_variant([&](const Backend& b) {
        for (const std::string& shape : op.default_shapes) require_pass(op.run(b, shape, seed()));
    });
}

}  // namespace triptych::testing
