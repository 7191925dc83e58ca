// Lesson 12: optimizers, SGD with momentum, Adam and RMSprop (see README.md next to this file).
//
// First shows what each rule does with a gradient, on cpu_naive: the first step for gradients of
// three sizes (SGD's step grows with the gradient, Adam's and RMSprop's do not), and the weight
// after k steps of the same gradient (momentum builds up speed). Then runs six configurations
// over LeNet-5's ten parameter tensors, five steps each, on every variant, weights and state
// checked against the float64 reference, with the time of one step. Exits 1 if any variant is
// wrong.
//
//   lesson_12_optimizers [SEED]
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

// A configuration and the short name the tables give it.
struct Named {
    std::string label;
    OptimizerConfig config;
};

Named make(std::string label, OptimizerKind kind, float lr, float momentum = 0.0f) {
    return {std::move(label), OptimizerConfig{.kind = kind, .lr = lr, .momentum = momentum}};
}

// w after each step of `config` on backend b, one weight per gradient of `gradients`, all starting
// at 0; `gradients` is used again at every step, for `steps` steps. Returns w after each step.
std::vector<std::vector<float>> trajectory(const Backend& b, const OptimizerConfig& config,
                                           const std::vector<float>& gradients, int steps) {
    const Shape shape{std::int64_t(gradients.size())};
    Tensor w = b.upload(shape, std::vector<float>(gradients.size(), 0.0f));
    const Tensor g = b.upload(shape, gradients);
    std::vector<Tensor> states;
    states.reserve(2);  // tensor.state points into it
    Backend::OptimizerTensor tensor{&w, &g};
    for (int s = 0; s < config.state_tensors(); ++s) {
        states.push_back(b.upload(shape, std::vector<float>(gradients.size(), 0.0f)));
        tensor.state[s] = &states.back();
    }
    std::vector<std::vector<float>> after;
    for (int k = 1; k <= steps; ++k) {
        b.optimizer_step(config, k, {&tensor, 1});
        after.push_back(b.download(w));
    }
    return after;
}

void show_rules() {
    const Backend& b = backend("cpu_naive");
    const float lr = 0.01f;
    const std::vector<Named> configs{
        make("sgd", OptimizerKind::sgd, lr), make("sgd momentum 0.9", OptimizerKind::sgd, lr, 0.9f),
        make("adam", OptimizerKind::adam, lr), make("rmsprop", OptimizerKind::rmsprop, lr)};

    std::printf("One step from w = 0, lr = %g (cpu_naive): the change of w for a gradient g of\n",
                lr);
    std::puts("three sizes. SGD moves by lr * g; Adam by lr whatever |g| is; RMSprop by");
    std::puts("lr / sqrt(1 - alpha) = 10 lr on its first step.");
    std::printf("  %-18s %12s %12s %12s\n", "optimizer", "g = 0.001", "g = 1", "g = 100");
    for (const Named& c : configs) {
        const std::vector<float> w = trajectory(b, c.config, {0.001f, 1.0f, 100.0f}, 1)[0];
        std::printf("  %-18s %12.4g %12.4g %12.4g\n", c.label.c_str(), w[0], w[1], w[2]);
    }

    const std::vector<int> shown{1, 2, 5, 20, 50};
    std::printf("\nw after k steps of the same g = 1, lr = %g: momentum 0.9 gathers speed up to\n",
                lr);
    std::puts(
        "lr * g / (1 - 0.9) = 10 lr per step; Adam keeps lr per step; RMSprop's steps shrink");
    std::puts("as its mean square of g grows from 0 to 1.");
    std::printf("  %-18s", "optimizer");
    for (int k : shown) std::printf(" %9s", ("k = " + std::to_string(k)).c_str());
    std::puts("");
    for (const Named& c : configs) {
        const std::vector<std::vector<float>> w = trajectory(b, c.config, {1.0f}, shown.back());
        std::printf("  %-18s", c.label.c_str());
        for (int k : shown) std::printf(" %9.4f", w[std::size_t(k - 1)][0]);
        std::puts("");
    }
}

// The configurations of the table: training's usual ones, and each option once.
std::vector<Named> table_configs() {
    std::vector<Named> configs{make("sgd momentum", OptimizerKind::sgd, 0.05f, 0.9f)};
    Named nesterov = configs.back();
    nesterov.label = "sgd nesterov wd";
    nesterov.config.nesterov = true;
    nesterov.config.weight_decay = 5e-4f;
    configs.push_back(nesterov);
    configs.push_back(make("adam", OptimizerKind::adam, 0.001f));
    Named adamw = configs.back();
    adamw.label = "adamw";
    adamw.config.weight_decay = 0.01f;
    adamw.config.decoupled_weight_decay = true;
    configs.push_back(adamw);
    configs.push_back(make("rmsprop", OptimizerKind::rmsprop, 0.001f));
    configs.push_back(make("rmsprop momentum", OptimizerKind::rmsprop, 0.001f, 0.9f));
    return configs;
}

// LeNet-5's parameter tensors: conv 6@5x5, conv 16@6x5x5, dense 400-120, 120-84, 84-10, each
// weight followed by its bias.
const std::vector<std::int64_t> lenet_sizes{150, 6, 2400, 16, 48000, 120, 10080, 84, 840, 10};

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        std::puts("");
        show_rules();

        std::int64_t floats = 0;
        for (std::int64_t n : lenet_sizes) floats += n;
        std::printf(
            "\nLeNet-5's parameters: %zu tensors, %lld floats. 5 steps of each optimizer, a fresh\n"
            "random gradient each step; the weights (first row) and each state tensor after them\n"
            "against the float64 reference. gpu_naive launches one kernel per tensor and step,\n"
            "gpu_tiled one for all ten. The configurations:\n",
            lenet_sizes.size(), (long long)floats);

        const std::vector<Named> configs = table_configs();
        for (const Named& c : configs)
            std::printf("  %-18s %s\n", c.label.c_str(), c.config.str().c_str());

        const bool any_simulated = lessons::warn_if_simulated(
            "!!! They do not show what one launch instead of ten saves on a GPU. GPU figures\n"
            "!!! come from `triptych report` on a GPU.\n");

        std::printf("\n%-18s %-14s %-28s %11s %8s  %s\n", "optimizer", "variant", "device",
                    "time/step", "GB/s", "vs float64 reference");
        bool all_passed = true;
        for (const Named& c : configs) {
            // Per float: w and g read, w written, each state read and written.
            const double bytes = 4.0 * (3.0 + 2.0 * c.config.state_tensors()) * double(floats);
            for (const std::string& name : backend_names()) {
                const Backend& b = backend(name);
                try {
                    const std::vector<check::CaseResult> results = lessons::run_checks(b, [&] {
                        return check::check_optimizer(b, c.config, lenet_sizes, 5, seed);
                    });
                    for (const check::CaseResult& r : results) {
                        // The weights' row has the time; each state tensor's row its verdict
                        // (the quantity is the end of the case's shape text, after ": ").
                        const bool first = &r == &results.front();
                        const std::string what =
                            first ? c.label : "  (" + r.shape.substr(r.shape.rfind(": ") + 2) + ")";
                        const std::string time =
                            first ? lessons::time_text(r.seconds, b.device_kind()) : "";
                        const std::string rate =
                            first ? lessons::rate_text(bytes, r.seconds, b.device_kind()) : "";
                        std::printf("%-18s %-14s %-28s %11s %8s  %s\n", what.c_str(),
                                    first ? name.c_str() : "", first ? r.device.c_str() : "",
                                    time.c_str(), rate.c_str(), lessons::verdict(r).c_str());
                        all_passed = all_passed && r.comparison.passed;
                    }
                } catch (const Unsupported& e) {  // an op the variant does not have yet
                    std::printf("%-18s %-14s %-28s %11s %8s  not implemented: %s\n",
                                c.label.c_str(), name.c_str(), b.device().c_str(), "", "",
                                e.what());
                }
            }
        }
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "time/step: the mean of one optimizer step over the five (each step's own call,\n"
            "synchronized). GB/s = the bytes a step must move at least (w, g and the state read,\n"
            "w and the state written) / that time; bench/ has the real measurements.");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 12: %s\n", error.what());
        return 1;
    }
}
