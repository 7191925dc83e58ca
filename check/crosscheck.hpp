// The cross-check: every op of every variant against the float64 cpu_naive reference.
//
// Each op is an OpDescription (check/description.hpp): its name, the shapes checked by default
// (sizes that are not multiples of any tile among them), how to run one shape on one backend, and
// its benchmark rows. A run draws fresh random inputs from the seed, poisons the outputs (NaN),
// runs the op, downloads the result and compares it with `compare` (common/compare.hpp) under the
// op's tolerance. `triptych check`, the tests, the benchmarks and the lessons all go through here,
// so they check and time the same thing the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "check/description.hpp"
#include "common/backend.hpp"
#include "common/compare.hpp"

namespace triptych::check {

struct CaseResult {
    std::string op;         // "gemm", "relu_forward"
    std::string variant;    // the backend's name
    std::string device;     // the backend's device line
    std::string shape;      // "67x45x91 NT a=1.5 b=0"
    std::string tolerance;  // how the bound is formed, e.g. "2(K+2)u * sum|a*b|", "exact"
    Comparison comparison;
    double seconds = 0;  // the op alone, after the inputs are in place (for lesson tables)
    // Why the case did not run, or "": the variant lacks this pass or algorithm, or refuses this
    // shape (Unsupported). Set by ops that run several passes or algorithms per shape, so that one
    // refusal does not hide the others' results.
    std::string not_run;
};

// The backends `check` runs on `variant`: the variant itself, then each of its versions of the
// op's kernels that it does not run by default, as "<variant>@<N>" in number order.
std::vector<std::string> versions_to_check(const OpDescription& check, const std::string& variant);

// Whether `backend` runs `check`'s kernels as asked: true unless it names a version ("gpu_tiled@5")
// that none of those kernels has in its variant.
bool runs_version_of(const OpDescription& check, const Backend& backend);
// InvalidArgument unless runs_version_of(check, backend), naming the versions there are.
void require_version_of(const OpDescription& check, const Backend& backend);

// Every op's description (check/description.hpp), in the order `triptych check` lists them.
const std::vector<OpDescription>& ops();
// The named op; InvalidArgument naming the known ops otherwise.
const OpDescription& op(const std::string& name);

// What the inputs hold: the op's usual values, or NaN, +inf and -inf planted among them (every 7th
// value), which must come out as each op's rule says (common/backend.hpp); the output then starts
// as a finite marker rather than NaN, so that an element expected to be NaN still has to be
// written.
enum class Values { finite, non_finite };

// Where an elementwise op writes: a fresh tensor, or over its input (y = x; for a backward pass,
// dx = dy).
enum class Output { separate, in_place };

// Lower-level entry points, for tests and lessons that go beyond the default cases. Each runs one
// case; the losses run one call and return two results, the loss and then its gradient.
CaseResult check_gemm(const Backend& backend, const GemmShape& shape, std::uint64_t seed,
                      Values values = Values::finite);
// An activation's forward or backward pass (common/activations.hpp), against its formula in
// float64 (activations.cpp has the inputs and each tolerance). The backward pass's input is what
// the activation's backward takes: x, or an output y of the forward.
CaseResult check_activation_forward(const Backend& backend, Activation activation,
                                    const Shape& shape, Output output, std::uint64_t seed,
                                    Values values = Values::finite);
CaseResult check_activation_backward(const Backend& backend, Activation activation,
                                     const Shape& shape, Output output, std::uint64_t seed,
                                     Values values = Values::finite);

// The bias; "rows" are the tensor seen as (rows, last dimension).
CaseResult check_bias_add(const Backend& backend, const Shape& shape, Output output,
                          std::uint64_t seed, Values values = Values::finite);
// bias_backward's non-finite dy: +inf at [0, 0], -inf at the last element, and with 2 rows and 3
// columns or more, +inf and -inf both in column 1 (their sum is NaN); a NaN at random elsewhere.
CaseResult check_bias_backward(const Backend& backend, const Shape& shape, std::uint64_t seed,
                               Values values = Values::finite);

// The logits softmax and cross-entropy are checked on; every default shape runs all three.
enum class Logits {
    uniform,     // uniform in [-10, 10)
    huge,        // +1e4 or -1e4 (random sign) plus uniform [-1, 1): e^x overflows float unless
                 // the row max is subtracted, and half of each row underflows to exactly 0
    equal_rows,  // every logit of a row the same value, uniform in [-1e4, 1e4): y = 1 / cols
    non_finite,  // uniform in [-10, 10), and by rows in turn: one NaN; one +inf; a third of the
                 // row -inf; the whole row -inf (the softmax rule of common/backend.hpp)
};
std::string to_string(Logits logits);

// softmax_backward's y is the float64 softmax of such logits, rounded to float.
CaseResult check_softmax_forward(const Backend& backend, const Shape& shape, Logits logits,
                                 std::uint64_t seed);
CaseResult check_softmax_backward(const Backend& backend, const Shape& shape, Logits logits,
                                  std::uint64_t seed);

// Losses: {the returned loss, the gradient}. Cross-entropy's labels are random class indices.
std::vector<CaseResult> check_mse_loss(const Backend& backend, const Shape& shape,
                                       std::uint64_t seed, Values values = Values::finite);
std::vector<CaseResult> check_softmax_cross_entropy(const Backend& backend, std::int64_t rows,
                                                    std::int64_t classes, Logits logits,
                                                    std::uint64_t seed);

// What sum and mean add up.
enum class Summands {
    uniform,  // uniform in [-1, 1): the order of the additions shows in the last bits
    dyadic,   // multiples of 1/64 in [-1, 1] (coarser, down to integers, as n grows past 2^18):
              // for up to 2^24 elements every partial sum is a float, so every order of addition
              // gives the exact sum
    // Uniform, with non-finite values planted (the rule of sum in common/backend.hpp):
    nan,              // one NaN at a random place: the sum is NaN
    plus_infinity,    // one +inf at a random place: the sum is +inf
    minus_infinity,   // one -inf at a random place: the sum is -inf
    both_infinities,  // +inf in the first half, -inf in the second: the sum is NaN (n >= 2)
};
// The non-finite kinds a tensor of n elements can hold: all four, or without both_infinities
// for one element.
inline std::vector<Summands> non_finite_summands(std::int64_t n) {
    std::vector<Summands> kinds{Summands::nan, Summands::plus_infinity, Summands::minus_infinity};
    if (n >= 2) kinds.push_back(Summands::both_infinities);
    return kinds;
}
CaseResult check_sum(const Backend& backend, const Shape& shape, Reduction mode, Summands summands,
                     std::uint64_t seed);
CaseResult check_mean(const Backend& backend, const Shape& shape, Reduction mode, Summands summands,
                      std::uint64_t seed);
// Deterministic mode gives the same result every time: `runs` more sums of the same tensor must
// equal the first, exactly (compared as values: +0 and -0 count as equal).
CaseResult check_sum_repeatable(const Backend& backend, const Shape& shape, int runs,
                                std::uint64_t seed);

// dense_forward (fused) or dense_forward_unfused against the float64 gemm, bias and activation.
enum class DensePath { fused, unfused };
CaseResult check_dense_forward(const Backend& backend, const DenseShape& shape, DensePath path,
                               std::uint64_t seed, Values values = Values::finite);

// --- convolution and pooling (conv_checks.cpp) ---
// Each pass runs with one algorithm, which must be among backend.conv2d_algorithms().
// x, w, b and dy are uniform in [-1, 1); with Values::non_finite, x and dy also hold +inf, -inf
// and a NaN (conv2d's rule for them is in common/backend.hpp). backward_weights returns {dw, db}.
CaseResult check_conv2d_forward(const Backend& backend, const Conv2dShape& shape,
                                ConvAlgorithm algorithm, std::uint64_t seed,
                                Values values = Values::finite);
CaseResult check_conv2d_backward_data(const Backend& backend, const Conv2dShape& shape,
                                      ConvAlgorithm algorithm, std::uint64_t seed,
                                      Values values = Values::finite);
std::vector<CaseResult> check_conv2d_backward_weights(const Backend& backend,
                                                      const Conv2dShape& shape,
                                                      ConvAlgorithm algorithm, std::uint64_t seed,
                                                      Values values = Values::finite);

// Max pooling's x holds many ties (see conv_checks.cpp), so the first-in-window rule is checked:
// forward returns {y, argmax}, both exact. backward scatters dy through the reference's argmax.
// Values::non_finite plants NaN and infinities in x (forward) or dy (backward).
std::vector<CaseResult> check_max_pool2d_forward(const Backend& backend, const Pool2dShape& shape,
                                                 std::uint64_t seed,
                                                 Values values = Values::finite);
CaseResult check_max_pool2d_backward(const Backend& backend, const Pool2dShape& shape,
                                     std::uint64_t seed, Values values = Values::finite);
CaseResult check_avg_pool2d_forward(const Backend& backend, const Pool2dShape& shape,
                                    std::uint64_t seed, Values values = Values::finite);
CaseResult check_avg_pool2d_backward(const Backend& backend, const Pool2dShape& shape,
                                     std::uint64_t seed, Values values = Values::finite);

// --- optimizers (optimizer_checks.cpp) ---
// `steps` steps (1, 2, ...) of `config` over 1-D parameter tensors of the given sizes, against
// cpu_naive::optimizer_step in float64 over the same steps: weights uniform in [-1, 1), state
// tensors 0, a fresh gradient each step of magnitude uniform in [0.5, 1) and a random sign. With
// Values::non_finite, the second step's gradient (the first's if there is one step) holds +inf
// at the first element of the list, -inf at the last and a NaN at random, which the state
// carries into every later step. Returns the weights' result, then one per state tensor (each
// comparing every tensor of the list); op is the kind ("adam"), seconds the mean time of one step.
std::vector<CaseResult> check_optimizer(const Backend& backend, const OptimizerConfig& config,
                                        const std::vector<std::int64_t>& sizes, int steps,
                                        std::uint64_t seed, Values values = Values::finite);
// The configurations `triptych check --op sgd|adam|rmsprop` runs on each list of sizes: sgd plain,
// with weight decay, with momentum, Nesterov with weight decay; adam plain, with L2 weight decay,
// AdamW; rmsprop plain, with momentum and weight decay.
std::vector<OptimizerConfig> optimizer_check_configs(OptimizerKind kind);

// --shape texts, as `triptych check` takes them; InvalidArgument naming the op and the text for
// a wrong count or an invalid shape.
//   conv2d: N,C,H,W,K,R,S[,STRIDE,PAD] or N,C,H,W,K,R,S,STRIDE_H,STRIDE_W,PAD_H,PAD_W
//   pools:  N,C,H,W,WINDOW,STRIDE[,PAD] or N,C,H,W,WINDOW_H,WINDOW_W,STRIDE_H,STRIDE_W,PAD_H,PAD_W
Conv2dShape parse_conv2d_shape(const std::string& text);
Pool2dShape parse_pool2d_shape(const std::string& op, const std::string& text);

// "17,33,5" -> {17, 33, 5}; InvalidArgument naming `op` and the text otherwise.
std::vector<std::int64_t> parse_sizes(const std::string& op, const std::string& text);

}  // namespace triptych::check
