// Lesson 06: losses and reductions, and whether a sum gives the same bits twice (see README.md
// next to this file).
//
// Three parts:
//   1. cross-entropy as -log(softmax) gives inf where a probability underflows; computed from the
//      logits with log-sum-exp (softmax_cross_entropy) it stays finite, on every variant;
//   2. mse_loss and softmax_cross_entropy on every variant, loss and gradient each checked against
//      the float64 reference;
//   3. sum in Reduction::deterministic and Reduction::fast, run several times on one tensor on
//      every variant: do the bits change between runs? And the loss, which uses the deterministic
//      mode.
// Exits 1 if any result is wrong, or if a deterministic result changes between runs.
//
//   lesson_06_losses_reductions [SEED]
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "cpu/naive/reduce.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

constexpr int repeats = 10;  // runs per mode in part 3

// Part 1: logits whose class 2 is 110 below the max: its probability, e^-110 = 1.7e-48, is below
// the smallest float (1.4e-45) and rounds to 0.
const std::vector<float> logits{20.0f, 0.0f, -90.0f};
const std::vector<float> label{2.0f};

bool show_log_softmax() {
    std::puts("Cross-entropy of one row, logits [20, 0, -90], label 2");
    std::printf(
        "  exact: (max - z[label]) + log(sum e^(z - max)) = 110 + log(1 + e^-20 + e^-110)"
        " = %.12g\n",
        110.0 + std::log1p(std::exp(-20.0) + std::exp(-110.0)));
    std::printf("  %-14s %-24s %s\n", "variant", "-log(softmax(z)[label])",
                "softmax_cross_entropy (log-sum-exp)");
    bool finite = true;
    for (const std::string& name : backend_names()) {
        const Backend& b = backend(name);
        try {
            const Tensor z = b.upload(Shape{1, 3}, logits);
            Tensor y = b.allocate(z.shape()), grad = b.allocate(z.shape());
            b.softmax_forward(z, y);
            const float via_softmax = -std::log(b.download(y)[2]);
            const float loss = b.softmax_cross_entropy(z, b.upload(Shape{1}, label), grad);
            std::printf("  %-14s %-24g %.9g\n", name.c_str(), via_softmax, loss);
            finite = finite && std::isfinite(loss);
        } catch (const Unsupported& e) {
            std::printf("  %-14s not implemented: %s\n", name.c_str(), e.what());
        }
    }
    std::puts("  (softmax(z)[2] = e^-110 / ... rounds to 0 in float, and -log(0) = inf)\n");
    return finite;
}

// Part 2: a row per result; each loss call gives two (the loss, then its gradient), and
// lessons::run_check times one, so each is run for its own row.
struct LossCase {
    const char* op;
    std::function<std::vector<check::CaseResult>(const Backend&)> run;
};

bool show_losses(std::uint64_t seed, bool& any_simulated) {
    const LossCase cases[] = {
        {"mse_loss",
         [=](const Backend& b) {
             return check::check_mse_loss(b, {64, 1000}, seed);
         }},
        {"softmax_cross_entropy",
         [=](const Backend& b) {
             return check::check_softmax_cross_entropy(b, 128, 1000, check::Logits::uniform, seed);
         }},
        {"softmax_cross_entropy",
         [=](const Backend& b) {
             return check::check_softmax_cross_entropy(b, 128, 1000, check::Logits::huge, seed);
         }},
    };
    std::printf("%-22s %-27s %-14s %-28s %11s  %s\n", "op", "case", "variant", "device", "time",
                "vs float64 reference");
    bool all_passed = true;
    for (const LossCase& c : cases) {
        for (const std::string& name : backend_names()) {
            const Backend& b = backend(name);
            for (std::size_t k = 0; k < 2; ++k) {
                try {
                    const check::CaseResult r =
                        lessons::run_check(b, [&] { return c.run(b).at(k); });
                    std::printf("%-22s %-27s %-14s %-28s %11s  %s\n", c.op, r.shape.c_str(),
                                name.c_str(), r.device.c_str(),
                                lessons::time_text(r.seconds, b.device_kind()).c_str(),
                                lessons::verdict(r).c_str());
                    all_passed = all_passed && r.comparison.passed;
                    any_simulated = any_simulated || b.device_kind() == DeviceKind::Simulator;
                } catch (const Unsupported& e) {  // an op the variant does not have yet
                    std::printf("%-22s %-27s %-14s %-28s %11s  not implemented: %s\n", c.op, "",
                                name.c_str(), b.device().c_str(), "", e.what());
                    break;
                }
            }
        }
    }
    return all_passed;
}

// Part 3: how many different results `repeats` runs of `op` gave, and the first one ("same bits"
// or "3 different: 0.1 0.2 0.3", values printed with all 9 significant digits of a float). Where
// the op adds in arrival order (`rounding` run_dependent), even whether the runs agree is a
// measurement.
std::string repeat_text(const std::function<float()>& op, lessons::Rounding rounding,
                        int& distinct) {
    std::set<std::uint32_t> bits;
    std::vector<float> values;
    for (int run = 0; run < repeats; ++run) {
        const float v = op();
        if (bits.insert(std::bit_cast<std::uint32_t>(v)).second) values.push_back(v);
    }
    distinct = int(values.size());
    char text[64];
    std::snprintf(text, sizeof text, "%.9g", values.front());
    if (distinct == 1 && rounding == lessons::Rounding::run_dependent)
        return lessons::measured(std::string(text) + "  same bits in all " +
                                 std::to_string(repeats));
    if (distinct == 1)
        return lessons::machine_figure(text) + "  same bits in all " + std::to_string(repeats);
    std::string out = std::to_string(distinct) + " different:";
    for (std::size_t i = 0; i < values.size() && i < 4; ++i) {
        std::snprintf(text, sizeof text, " %.9g", values[i]);
        out += text;
    }
    // Which results a run of additions in a racing order gives is itself a measurement.
    return lessons::measured(out + (values.size() > 4 ? " ..." : ""));
}

bool show_determinism(std::uint64_t seed, bool& any_simulated) {
    // A length that is a multiple of no block or chunk size. x: the values check_sum draws from
    // the seed (uniform in [-1, 1)), whose sum rounds differently in every order of addition, so
    // that its verdict and the runs below are about the same tensor. The loss: 128 rows of 1000
    // logits.
    const Shape shape{200003};
    const std::int64_t rows = 128, classes = 1000;
    std::vector<float> x(static_cast<std::size_t>(shape.elements()));
    Rng(seed).uniform(x);
    std::vector<float> z(static_cast<std::size_t>(rows * classes)), labels(rows);
    Rng rng(seed + 1);
    rng.uniform(z, -10.0f, 10.0f);
    for (float& l : labels) l = float(rng.next() % std::uint64_t(classes));
    const std::vector<double> wide(x.begin(), x.end());

    std::printf("\nsum of %lld floats, exactly %.9f (float64); each mode run %d more times\n",
                (long long)shape.elements(), cpu_naive::sum<double>(shape.elements(), wide.data()),
                repeats);
    std::printf("%-14s %-22s %11s  %-40s %s\n", "variant", "mode", "time", "vs float64 reference",
                "results of the runs");
    bool all_passed = true;
    for (const std::string& name : backend_names()) {
        const Backend& b = backend(name);
        try {
            const Tensor X = b.upload(shape, x);
            for (Reduction mode : {Reduction::deterministic, Reduction::fast}) {
                const check::CaseResult r = lessons::run_check(b, [&] {
                    return check::check_sum(b, shape, mode, check::Summands::uniform, seed);
                });
                // The fast mode adds in arrival order where the kernel says so (AdditionOrder).
                const lessons::Rounding rounding = mode == Reduction::fast
                                                       ? lessons::rounding_of(b, {Op::sum})
                                                       : lessons::Rounding::fixed;
                int distinct = 0;
                const std::string runs =
                    repeat_text([&] { return b.sum(X, mode); }, rounding, distinct);
                const bool repeatable = mode == Reduction::fast || distinct == 1;
                std::printf("%-14s %-22s %11s  %-40s %s%s\n", name.c_str(),
                            mode == Reduction::fast ? "sum fast" : "sum deterministic",
                            lessons::time_text(r.seconds, b.device_kind()).c_str(),
                            lessons::verdict(r, rounding).c_str(), repeatable ? "" : "FAIL  ",
                            runs.c_str());
                all_passed = all_passed && r.comparison.passed && repeatable;
            }
            const Tensor Z = b.upload(Shape{rows, classes}, z);
            const Tensor L = b.upload(Shape{rows}, labels);
            Tensor grad = b.allocate(Z.shape());
            int distinct = 0;
            const std::string runs =
                repeat_text([&] { return b.softmax_cross_entropy(Z, L, grad); },
                            lessons::Rounding::fixed, distinct);
            std::printf("%-14s %-22s %11s  %-40s %s%s\n", name.c_str(), "cross-entropy loss", "",
                        "(checked in the table above)", distinct == 1 ? "" : "FAIL  ",
                        runs.c_str());
            all_passed = all_passed && distinct == 1;
            any_simulated = any_simulated || b.device_kind() == DeviceKind::Simulator;
        } catch (const Unsupported& e) {  // an op the variant does not have yet
            std::printf("%-14s not implemented: %s\n", name.c_str(), e.what());
        }
    }
    return all_passed;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        std::puts("");
        bool any_simulated = false;
        bool all_passed = show_log_softmax();
        all_passed = show_losses(seed, any_simulated) && all_passed;
        all_passed = show_determinism(seed, any_simulated) && all_passed;
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "fast: whatever order of addition is quickest (atomics on a GPU); the last bits may\n"
            "change between runs. deterministic: a fixed order, the same bits on every run; the\n"
            "losses use it (Reduction in common/ops.hpp).");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 06: %s\n", error.what());
        return 1;
    }
}
