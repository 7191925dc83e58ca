// Training benchmarks: one whole training step of the built-in models, and what a step moves
// across the bus.
//
// Rows (batch 64, Fashion-MNIST's 28x28 images, as `triptych train` and
// bench/pytorch_peer.py train run them):
//   train_step/<variant>/<model>       one Trainer::train_step on a fixed random batch: the images
//                                      and labels up, forward, softmax_cross_entropy and its loss
//                                      down, backward, one Adam update (lr 1e-3, as the PyTorch
//                                      peer). Counter `images`: 64 per step, shown as images/s.
//   train_step/<variant>/<model>+<way> on a GPU variant, the same steps with the trainer's options
//                                      (way: overlap, graph, overlap+graph; lesson 16): an epoch of
//                                      16 batches through Trainer::train_epoch, whose first step of
//                                      each batch size runs without a graph. Counter `images`: the
//                                      epoch's 1024, so that its images/s stand beside the plain
//                                      step's.
//   train_transfer/<variant>/64x784    the step's traffic alone: the images (64x784 floats) and
//                                      labels (64) up, the loss (one float) down. Counter `bytes`.
// The report sets each model's images/s side by side per variant, cpu_eigen_omp's against
// PyTorch's, and the transfer against the step: the share of a step spent on the bus, which is
// all a GPU backend's step moves (the weights, gradients and optimizer state stay on the device).
// Simulator variants (with --include-simulator) time the mlp only: a LeNet step takes seconds
// there.
// Run: triptych_bench --benchmark_filter='train_'
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "bench/suites.hpp"
#include "common/errors.hpp"
#include "common/idx.hpp"
#include "common/nn/models.hpp"
#include "common/nn/trainer.hpp"

namespace triptych::bench {
namespace {

constexpr std::int64_t batch = 64, rows = 28, cols = 28;

// A batch of `count` images with pixels in [0, 1), and labels in 0..9 held as floats.
struct Batch {
    std::vector<float> images, labels;
};

Batch random_batch(std::int64_t count) {
    Batch b{check::bench_values(count * rows * cols), check::bench_values(count)};
    for (float& pixel : b.images) pixel = (pixel + 1) / 2;
    for (float& label : b.labels) label = std::floor((label + 1) * 5);  // [-1, 1) -> 0..9
    return b;
}

// A model, its Adam optimizer and a trainer, as `triptych train --optimizer adam` builds them.
struct Run {
    std::unique_ptr<nn::Sequential> model;
    std::unique_ptr<nn::Optimizer> optimizer;
    std::unique_ptr<nn::Trainer> trainer;

    Run(const Backend& b, const std::string& name, bool overlap = false, bool graph = false)
        : model(nn::make_model(name, b, /*seed=*/1)),
          optimizer(std::make_unique<nn::Optimizer>(
              b, model->parameters(), OptimizerConfig{.kind = OptimizerKind::adam, .lr = 1e-3f})),
          trainer(std::make_unique<nn::Trainer>(
              *model, *optimizer,
              nn::TrainOptions{.batch = batch, .overlap = overlap, .graph = graph})) {}

    float step(const Batch& data, std::int64_t count) {
        return trainer->train_step(data.images, data.labels, count, rows, cols);
    }
};

void train_step(benchmark::State& state, const Backend& b, const std::string& model) {
    Run run(b, model);
    const Batch data = random_batch(batch);
    // The warm-up step pays for the first allocations; a NaN loss would make the time a lie.
    if (!std::isfinite(run.step(data, batch))) {
        state.SkipWithError("the warm-up step's loss is not finite");
        return;
    }
    state.SetLabel(b.device());
    time_calls(state, b, [&] { run.step(data, batch); });
    count_per_second(state, "images", double(batch));
}

// The trainer's options of lesson 16, as a row names them.
struct Way {
    const char* name;
    bool overlap, graph;
};
constexpr Way ways[] = {
    {"overlap", true, false}, {"graph", false, true}, {"overlap+graph", true, true}};
constexpr std::int64_t epoch_batches = 16;

void train_epoch_way(benchmark::State& state, const Backend& b, const std::string& model,
                     const Way& way) {
    Run run(b, model, way.overlap, way.graph);
    const Batch data = random_batch(epoch_batches * batch);
    const ImageSet epoch{epoch_batches * batch, rows, cols, data.images, data.labels};
    // The warm-up epoch pays for the allocations and the pinned buffers.
    const std::vector<float> losses = run.trainer->train_epoch(epoch, 1).losses;
    if (!std::all_of(losses.begin(), losses.end(), [](float l) { return std::isfinite(l); })) {
        state.SkipWithError("a warm-up step's loss is not finite");
        return;
    }
    state.SetLabel(b.device());
    time_calls(state, b, [&] { run.trainer->train_epoch(epoch, 1); });
    count_per_second(state, "images", double(epoch.count));
}

void train_transfer(benchmark::State& state, const Backend& b) {
    const Batch data = random_batch(batch);
    Tensor images = b.allocate(Shape{batch, 1, rows, cols});
    Tensor labels = b.allocate(Shape{batch});
    const Tensor loss = b.upload(Shape{1}, std::vector<float>{2.3f});
    auto op = [&] {
        b.upload(images, data.images);
        b.upload(labels, data.labels);
        benchmark::DoNotOptimize(b.download(loss));
    };
    if (!warm_up(state, op, b, images)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", sizeof(float) * double(batch * rows * cols + batch + 1));
}

}  // namespace

void register_train(const Options& options) {
    describe_rows("train_step", "images", "64 images", "train");
    describe_rows("train_transfer", "bytes", "4·(64·784 + 64 + 1)", "train");
    for (const Variant& v : variants(options)) {
        const Backend& b = *v.backend;
        for (const std::string& model : nn::model_names()) {
            if (v.kind == DeviceKind::Simulator && model != "mlp") continue;
            // One step on one image: a variant that lacks an op the model needs gets no row.
            try {
                Run(b, model).step(random_batch(1), 1);
            } catch (const Unsupported&) {
                continue;
            }
            add("train_step/" + v.label + "/" + model,
                [&b, model](benchmark::State& s) { train_step(s, b, model); });
            if (b.async() == nullptr) continue;  // the ways need streams
            for (const Way& way : ways)
                add("train_step/" + v.label + "/" + model + "+" + way.name,
                    [&b, model, way](benchmark::State& s) { train_epoch_way(s, b, model, way); });
        }
        add("train_transfer/" + v.label + "/" + std::to_string(batch) + "x" +
                std::to_string(rows * cols),
            [&b](benchmark::State& s) { train_transfer(s, b); });
    }
}

}  // namespace triptych::bench
