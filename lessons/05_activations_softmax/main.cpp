// Lesson 05: elementwise kernels and row reductions, on sigmoid, tanh and softmax (see README.md
// next to this file).
//
// First shows why softmax subtracts the row max: the textbook formula e^x / sum e^x, computed in
// float on logits near 100, gives inf and NaN; every variant's softmax_forward, which subtracts
// the max, gives the right answer. Then runs sigmoid, tanh and softmax, forward and backward, on
// every variant, each checked against the float64 reference, with its time and GB/s. Exits 1 if
// any variant is wrong.
//
//   lesson_05_activations_softmax [SEED]
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <vector>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

// A row of logits where e^x overflows float (above e^88.7 = 3.4e38) for two of the four values.
const std::vector<float> big_logits{80.0f, 90.0f, 100.0f, 88.0f};

void print_row(const char* label, const std::vector<float>& values) {
    std::printf("  %-26s [", label);
    for (std::size_t j = 0; j < values.size(); ++j) {
        if (j > 0) std::printf(", ");
        if (std::isnan(values[j]))
            std::printf("NaN");  // printf would say "nan" or "-nan"
        else
            std::printf("%.3g", values[j]);
    }
    std::puts("]");
}

// The textbook formula, in float, without subtracting the max.
void show_overflow() {
    std::vector<float> e(big_logits.size()), y(big_logits.size());
    float sum = 0.0f;
    for (std::size_t j = 0; j < e.size(); ++j) {
        e[j] = std::exp(big_logits[j]);
        sum += e[j];
    }
    for (std::size_t j = 0; j < e.size(); ++j) y[j] = e[j] / sum;
    std::puts("Softmax of one row of logits, in float:");
    print_row("x", big_logits);
    std::puts("without subtracting the max, y = e^x / sum e^x:");
    print_row("e^x", e);
    std::printf("  %-26s %g\n", "sum e^x", sum);
    print_row("y", y);
    std::puts("  (e^80 / inf = 0, inf / inf = NaN: the row is lost, and every gradient after it)");
}

// softmax_forward of the same row on every variant (each subtracts the max). Returns false if a
// variant's output is not finite.
bool show_stable() {
    std::puts("softmax_forward of every variant, y = e^(x - max) / sum e^(x - max):");
    bool finite = true;
    for (const std::string& name : backend_names()) {
        const Backend& b = backend(name);
        try {
            const Tensor x = b.upload(Shape{1, std::int64_t(big_logits.size())}, big_logits);
            Tensor y = b.allocate(x.shape());
            b.softmax_forward(x, y);
            const std::vector<float> out = b.download(y);
            print_row(name.c_str(), out);
            for (float v : out)
                if (!std::isfinite(v)) finite = false;
        } catch (const Unsupported& e) {
            std::printf("  %-26s not implemented: %s\n", name.c_str(), e.what());
        }
    }
    return finite;
}

// One row of the table: an op on one shape, and the bytes it must move at least (each input read
// once, the output written once) for the GB/s column.
struct Case {
    const char* op;
    double bytes;
    std::function<check::CaseResult(const Backend&)> run;
};

std::vector<Case> cases(std::uint64_t seed) {
    using namespace check;
    // 999 x 1001: a multiple of neither 4 (a float4) nor 256 (a block), as in lesson 01.
    const Shape tensor{999, 1001};
    // 64 rows of 1000 (a batch of a 1000-class classifier): gpu_tiled gives each row a warp;
    // 4 rows of 30000: longer than 1024, so a block per row.
    const Shape batch{64, 1000}, long_rows{4, 30000};
    const double n = double(tensor.elements());
    const double forward = 8, backward = 12;  // bytes per element: x, y; or y, dy, dx
    auto elements = [](const Shape& s) { return double(s.elements()); };
    return {
        {"sigmoid_forward", forward * n,
         [=](const Backend& b) {
             return check_activation_forward(b, Activation::sigmoid, tensor, Output::separate,
                                             seed);
         }},
        {"sigmoid_backward", backward * n,
         [=](const Backend& b) {
             return check_activation_backward(b, Activation::sigmoid, tensor, Output::separate,
                                              seed);
         }},
        {"tanh_forward", forward * n,
         [=](const Backend& b) {
             return check_activation_forward(b, Activation::tanh, tensor, Output::separate, seed);
         }},
        {"tanh_backward", backward * n,
         [=](const Backend& b) {
             return check_activation_backward(b, Activation::tanh, tensor, Output::separate, seed);
         }},
        {"gelu_forward", forward * n,
         [=](const Backend& b) {
             return check_activation_forward(b, Activation::gelu, tensor, Output::separate, seed);
         }},
        {"gelu_backward", backward * n,
         [=](const Backend& b) {
             return check_activation_backward(b, Activation::gelu, tensor, Output::separate, seed);
         }},
        {"softmax_forward", forward * elements(batch),
         [=](const Backend& b) { return check_softmax_forward(b, batch, Logits::uniform, seed); }},
        {"softmax_forward", forward * elements(batch),
         [=](const Backend& b) { return check_softmax_forward(b, batch, Logits::huge, seed); }},
        {"softmax_forward", forward * elements(long_rows),
         [=](const Backend& b) {
             return check_softmax_forward(b, long_rows, Logits::uniform, seed);
         }},
        {"softmax_backward", backward * elements(batch),
         [=](const Backend& b) { return check_softmax_backward(b, batch, Logits::uniform, seed); }},
    };
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        std::puts("");
        show_overflow();
        bool all_passed = show_stable();

        std::printf("\n%-17s %-23s %-14s %-28s %11s %8s  %s\n", "op", "input", "variant", "device",
                    "time", "GB/s", "vs float64 reference");
        bool any_simulated = false;
        for (const Case& c : cases(seed)) {
            for (const std::string& name : backend_names()) {
                const Backend& b = backend(name);
                try {
                    const check::CaseResult r = lessons::run_check(b, [&] { return c.run(b); });
                    std::printf("%-17s %-23s %-14s %-28s %11s %8s  %s\n", c.op, r.shape.c_str(),
                                name.c_str(), r.device.c_str(),
                                lessons::time_text(r.seconds, b.device_kind()).c_str(),
                                lessons::rate_text(c.bytes, r.seconds, b.device_kind()).c_str(),
                                lessons::verdict(r).c_str());
                    all_passed = all_passed && r.comparison.passed;
                    any_simulated = any_simulated || b.device_kind() == DeviceKind::Simulator;
                } catch (const Unsupported& e) {  // an op the variant does not have yet
                    std::printf("%-17s %-23s %-14s %-28s %11s %8s  not implemented: %s\n", c.op, "",
                                name.c_str(), b.device().c_str(), "", "", e.what());
                }
            }
        }
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "GB/s = the bytes the op must move at least (its inputs read once, its output written\n"
            "once) / the time of one call; bench/ has the real measurements.");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 05: %s\n", error.what());
        return 1;
    }
}
