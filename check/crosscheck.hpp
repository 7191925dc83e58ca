// The cross-check: every op of every variant against the float64 cpu_naive reference.
//
// Each op is an OpCheck: its name, the shapes checked by default (sizes that are not multiples of
// any tile among them), and how to run one shape on one backend. A run draws fresh random inputs
// from the seed, poisons the outputs (NaN), runs the op, downloads the result and compares it with
// `compare` (common/compare.hpp) under the op's tolerance. `triptych check`, the tests and the
// lessons all go through here, so they check the same thing the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/compare.hpp"

namespace triptych::check {

struct CaseResult {
    std::string op;           // "gemm", "relu_forward"
    std::string variant;      // the backend's name
    std::string device;       // the backend's device line
    std::string shape;        // "67x45x91 NT a=1.5 b=0"
    std::string tolerance;    // how the bound is formed, e.g. "2(K+2)u * sum|a*b|", "exact"
    Comparison comparison;
    double seconds = 0;       // the op alone, after the inputs are in place (for lesson tables)
};

struct OpCheck {
    std::string name;
    std::string shape_syntax;                // what --shape takes, e.g. "M,N,K"
    std::vector<std::string> default_shapes;
    // Runs every case of one shape (gemm: the four transpositions) on `backend`.
    std::function<std::vector<CaseResult>(const Backend& backend, const std::string& shape,
                                          std::uint64_t seed)>
        run;
};

// Every op the cross-check knows, in the order `triptych check` lists them.
const std::vector<OpCheck>& ops();
// The named op; InvalidArgument naming the known ops otherwise.
const OpCheck& op(const std::string& name);

// Lower-level entry points, for tests that go beyond the default cases.
CaseResult check_gemm(const Backend& backend, const GemmShape& shape, std::uint64_t seed);
CaseResult check_relu_forward(const Backend& backend, const Shape& shape, std::uint64_t seed);
CaseResult check_relu_backward(const Backend& backend, const Shape& shape, std::uint64_t seed);

// "17,33,5" -> {17, 33, 5}; InvalidArgument naming `op` and the text otherwise.
std::vector<std::int64_t> parse_sizes(const std::string& op, const std::string& text);

}  // namespace triptych::check
