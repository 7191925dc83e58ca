// Lesson 14: LeNet, and where the time of a training step goes (see README.md next to this file).
//
// On every variant: LeNet from the same seed, one warm-up step, then a few timed steps on the
// next batches of Fashion-MNIST (batch 16), with the backend synchronized after every phase of a
// step (upload, forward, loss, backward, update) and after every layer (Sequential's timing).
// Prints per variant the phases of a step, checked against cpu_naive's losses; then per layer its
// forward and backward time on each variant; then what the batch's upload costs. Exits 1 if a
// variant's losses depart from cpu_naive's.
//
//   lesson_14_training_cnn [SEED]
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "common/compare.hpp"
#include "common/errors.hpp"
#include "common/idx.hpp"
#include "common/nn/models.hpp"
#include "common/nn/trainer.hpp"
#include "common/registry.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

// Batch 16 and 4 timed steps keep the simulator's LeNet (every convolution thread a fiber on the
// CPU) to seconds; a real run's batch is 64 (`triptych train --model lenet --profile`).
constexpr std::int64_t batch = 16, timed_steps = 4;

// As lesson 13: float32 sums in another order round differently, and a few steps of training
// carry those differences forward, far below this; a wrong gradient moves the loss by 1e-2.
const Tolerance loss_tolerance{.rtol = 1e-3, .atol = 1e-4};

struct Profile {
    std::string variant, device;
    DeviceKind kind = DeviceKind::Cpu;
    std::vector<float> losses;                      // of the timed steps
    nn::PhaseTimes phases;                          // summed over the timed steps
    std::vector<nn::Sequential::LayerTime> layers;  // summed over the timed steps
};

// LeNet on `b` from `seed`: a warm-up step on the first batch of `warm_up` (the first call of
// each kernel and allocation is not what a step costs), then one epoch over `timed`, profiled.
Profile profile(const Backend& b, const ImageSet& warm_up, const ImageSet& timed,
                std::uint64_t seed) {
    const auto model = nn::make_model("lenet", b, seed);
    nn::Optimizer optimizer(b, model->parameters(), {.kind = OptimizerKind::adam, .lr = 1e-3f});
    nn::Trainer trainer(*model, optimizer, {.batch = batch, .seed = seed, .time_phases = true});
    trainer.train_step(warm_up.images, warm_up.labels, warm_up.count, warm_up.rows, warm_up.cols);
    model->set_timing(true);
    const nn::EpochResult epoch = trainer.train_epoch(timed, 1);
    return {b.name(),     b.device(),   b.device_kind(),
            epoch.losses, epoch.phases, model->layer_times()};
}

// The images [first, first + count) of `data`.
ImageSet slice(const ImageSet& data, std::int64_t first, std::int64_t count) {
    ImageSet part{count, data.rows, data.cols, {}, {}};
    const std::int64_t pixels = data.rows * data.cols;
    part.images.assign(data.images.begin() + first * pixels,
                       data.images.begin() + (first + count) * pixels);
    part.labels.assign(data.labels.begin() + first, data.labels.begin() + first + count);
    return part;
}

double step_seconds(const nn::PhaseTimes& p) {
    return p.upload + p.forward + p.loss + p.backward + p.update;
}

// "12.3 ms" per step from `seconds` summed over the timed steps; '*' for the simulator.
std::string per_step(double seconds, DeviceKind kind) {
    return lessons::time_text(seconds / double(timed_steps), kind);
}

void print_phases(const Profile& p, const std::string& verdict) {
    const nn::PhaseTimes& t = p.phases;
    std::printf("%-14s %-28s %11s %11s %11s %11s %11s %11s  %s\n", p.variant.c_str(),
                p.device.c_str(), per_step(step_seconds(t), p.kind).c_str(),
                per_step(t.upload, p.kind).c_str(), per_step(t.forward, p.kind).c_str(),
                per_step(t.loss, p.kind).c_str(), per_step(t.backward, p.kind).c_str(),
                per_step(t.update, p.kind).c_str(), verdict.c_str());
}

// One row per layer, named as cpu_naive's, and per variant its forward and backward milliseconds
// per batch. The convolutions' names end in their algorithm, each variant's first choice
// (Backend::conv2d_algorithms): those that differ from cpu_naive's are listed after the table.
void print_layers(const std::vector<Profile>& profiles) {
    const std::string heading = "layer (ms per batch of " + std::to_string(batch) + ")";
    std::printf("\n%-46s", heading.c_str());
    for (const Profile& p : profiles)
        std::printf(" %21s", (p.variant + (p.kind == DeviceKind::Simulator ? " *" : "")).c_str());
    std::printf("\n%-46s", "");
    for (std::size_t i = 0; i < profiles.size(); ++i)
        std::printf(" %10s %10s", "forward", "backward");
    std::printf("\n");
    const std::size_t layers = profiles.front().layers.size();
    for (std::size_t i = 0; i < layers; ++i) {
        std::printf("%-46s", profiles.front().layers[i].layer.c_str());
        for (const Profile& p : profiles) {
            const nn::Sequential::LayerTime& t = p.layers[i];
            const double calls = double(std::max<std::int64_t>(t.calls, 1));
            std::printf(" %10s %10s",
                        lessons::measured_number("%.3f", t.forward_seconds / calls * 1e3).c_str(),
                        lessons::measured_number("%.3f", t.backward_seconds / calls * 1e3).c_str());
        }
        std::printf("\n");
    }
    for (const Profile& p : profiles)
        for (std::size_t i = 0; i < layers; ++i)
            if (p.layers[i].layer != profiles.front().layers[i].layer)
                std::printf("%s runs layer %s\n", p.variant.c_str(), p.layers[i].layer.c_str());
}

// What the upload phase moved and how fast, and its share of the step.
void print_transfers(const std::vector<Profile>& profiles) {
    const double bytes = 4.0 * double(batch) * (28 * 28 + 1);  // images and labels, as floats
    std::printf("\n%-14s %-28s %12s %10s %14s\n", "variant", "device", "upload/step", "GB/s",
                "share of step");
    for (const Profile& p : profiles) {
        const double upload = p.phases.upload / double(timed_steps);
        std::printf("%-14s %-28s %12s %10s %13s%%\n", p.variant.c_str(), p.device.c_str(),
                    lessons::time_text(upload, p.kind).c_str(),
                    lessons::rate_text(bytes, upload, p.kind).c_str(),
                    lessons::measured_number("%.2f", 100 * p.phases.upload / step_seconds(p.phases))
                        .c_str());
    }
    std::printf(
        "One step moves %.0f bytes up (%lld images of 28x28 and their labels, as floats)\n"
        "and 16 bytes (the loss, and a bad label's row if any) down; everything else stays where "
        "the backend keeps it.\n",
        bytes, (long long)batch);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        const FashionMnistFiles files = fashion_mnist_files();
        const ImageSet data =
            read_image_set(files.train_images, files.train_labels, batch * (1 + timed_steps));
        const ImageSet warm_up = slice(data, 0, batch);
        const ImageSet timed = slice(data, batch, batch * timed_steps);
        std::printf(
            "\nLeNet (conv 6@5x5 pad 2, ReLU, max-pool 2, conv 16@5x5, ReLU, max-pool 2, "
            "400-120-84-10),\nAdam lr 1e-3, batch %lld: one warm-up step, then %lld steps timed "
            "phase by phase and\nlayer by layer (the backend synchronized after each), the same "
            "seed (%llu) on every variant\n",
            (long long)batch, (long long)timed_steps, (unsigned long long)seed);

        std::vector<Profile> profiles;
        bool all_passed = true;
        std::vector<std::string> not_run;
        for (const std::string& name : backend_names()) {
            const Backend& b = backend(name);
            try {
                profiles.push_back(profile(b, warm_up, timed, seed));
            } catch (const Unsupported& e) {  // a variant that lacks an op LeNet needs
                not_run.push_back(name + ": not implemented: " + e.what());
            } catch (const std::exception& e) {
                not_run.push_back(name + ": FAIL: " + e.what());
                all_passed = false;
            }
        }
        if (profiles.empty() || profiles.front().variant != "cpu_naive")
            throw Error("cpu_naive, the reference, did not run");
        const bool any_simulated = lessons::warn_if_simulated();

        std::printf("\n%-14s %-28s %11s %11s %11s %11s %11s %11s  %s\n", "variant", "device",
                    "step", "upload", "forward", "loss", "backward", "update",
                    "losses vs cpu_naive");
        const std::vector<float>& reference = profiles.front().losses;
        const std::vector<double> expected(reference.begin(), reference.end());
        print_phases(profiles.front(), "(the reference)");
        for (std::size_t i = 1; i < profiles.size(); ++i) {
            check::CaseResult result;
            result.comparison = compare(profiles[i].losses, expected, loss_tolerance);
            // Where the max-pool backward is an atomic scatter (gpu_naive's, gpu/naive/pool2d.cu),
            // the last bits of the gradients, and so of the later losses, change from run to run.
            // (The losses' sums run in the deterministic mode, whatever the kernel's fast one
            // does.)
            const lessons::Rounding rounding =
                lessons::rounding_of(backend(profiles[i].variant), {Op::max_pool2d_backward});
            print_phases(profiles[i], lessons::verdict(result, rounding));
            all_passed = all_passed && result.comparison.passed;
        }
        for (const std::string& line : not_run) std::printf("%s\n", line.c_str());
        std::printf("Times per step (mean of %lld); losses: tolerance %g relative, %g absolute.\n",
                    (long long)timed_steps, loss_tolerance.rtol, loss_tolerance.atol);

        print_layers(profiles);
        print_transfers(profiles);
        if (any_simulated) lessons::simulator_footnote();
        std::puts(all_passed ? "\nevery variant follows cpu_naive's losses"
                             : "\nFAILED: some variant's losses depart from cpu_naive's");
        return all_passed ? 0 : 1;
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 14: %s\n", error.what());
        return 1;
    }
}
