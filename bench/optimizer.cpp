// Optimizer benchmarks: one step of SGD (momentum 0.9), Adam or RMSprop over all the parameter
// tensors of a model, as training runs it after each batch.
//
// Rows: optimizer_step_<kind>/<variant>/<model>, kind sgd, adam or rmsprop, model
//   mlp     784-256-128-10: 6 tensors (256x784, 256, 128x256, 128, 10x128, 10), 235 146 floats
//   lenet   LeNet-5: 10 tensors (6x1x5x5, 6, 16x6x5x5, 16, 120x400, 120, 84x120, 84, 10x84, 10),
//           61 706 floats
// Counter `bytes`, what one step must read and write: per float of the model, w and g read and w
// written, and each state tensor read and written: 4 (3 + 2 S) bytes, S = 1 for SGD with momentum,
// 2 for Adam, 1 for RMSprop. Counter `tensors`: how many tensors one step updates.
//
// The point of these rows is the launch count on a GPU. gpu_naive starts one kernel per tensor
// (6 or 10), gpu_tiled one for all of them (gpu/tiled/optimizer.cu): the models are small (1 MB
// of weights for the mlp), so a step costs about as much as its launches, and the difference
// between the two rows is mostly launch overhead.
// Run: triptych_bench --benchmark_filter='optimizer_step'
#include <string>
#include <vector>

#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

struct Model {
    const char* name;
    std::vector<Shape> parameters;
};

const std::vector<Model>& models() {
    static const std::vector<Model> all{
        {"mlp", {{256, 784}, {256}, {128, 256}, {128}, {10, 128}, {10}}},
        {"lenet",
         {{6, 1, 5, 5},
          {6},
          {16, 6, 5, 5},
          {16},
          {120, 400},
          {120},
          {84, 120},
          {84},
          {10, 84},
          {10}}},
    };
    return all;
}

// Momentum 0.9 for SGD, as training uses it; PyTorch's defaults otherwise.
OptimizerConfig config_of(OptimizerKind kind) {
    OptimizerConfig config{.kind = kind};
    if (kind == OptimizerKind::sgd) config.momentum = 0.9f;
    return config;
}

void optimizer_step(benchmark::State& state, const Backend& b, OptimizerKind kind,
                    const Model& model) {
    const OptimizerConfig config = config_of(kind);
    const int states = config.state_tensors();
    // Each parameter with its gradient and state, all on b.
    struct Parameter {
        Tensor value, grad, state[2];
    };
    std::vector<Parameter> parameters(model.parameters.size());
    std::vector<Backend::OptimizerTensor> tensors(model.parameters.size());
    double floats = 0;
    for (std::size_t t = 0; t < parameters.size(); ++t) {
        const Shape& shape = model.parameters[t];
        Parameter& p = parameters[t];
        p.value = b.upload(shape, random_values(shape.elements()));
        p.grad = b.upload(shape, random_values(shape.elements()));
        tensors[t] = {&p.value, &p.grad};
        for (int s = 0; s < states; ++s) {
            p.state[s] = b.upload(shape, std::vector<float>(std::size_t(shape.elements()), 0.0f));
            tensors[t].state[s] = &p.state[s];
        }
        floats += double(shape.elements());
    }
    std::int64_t step = 0;  // Adam's bias correction counts the steps
    auto op = [&] { b.optimizer_step(config, ++step, tensors); };
    if (!warm_up(state, op, b, parameters.front().value)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", sizeof(float) * (3.0 + 2.0 * states) * floats);
    state.counters["tensors"] = double(tensors.size());
}

}  // namespace

void register_optimizer(const Options& options) {
    for (const Variant& v : variants(options)) {
        const Backend& b = *v.backend;
        for (OptimizerKind kind :
             {OptimizerKind::sgd, OptimizerKind::adam, OptimizerKind::rmsprop}) {
            const bool has_step = implements([&] {
                Tensor w = b.upload(Shape{1}, std::vector<float>{0.5f});
                const Tensor g = b.upload(Shape{1}, std::vector<float>{0.25f});
                Tensor s0 = b.upload(Shape{1}, std::vector<float>{0.0f});
                Tensor s1 = b.upload(Shape{1}, std::vector<float>{0.0f});
                const OptimizerConfig config = config_of(kind);
                Backend::OptimizerTensor t{&w, &g};
                for (int s = 0; s < config.state_tensors(); ++s) t.state[s] = s == 0 ? &s0 : &s1;
                b.optimizer_step(config, 1, {&t, 1});
            });
            if (!has_step) continue;
            for (const Model& model : models())
                add("optimizer_step_" + to_string(kind) + "/" + v.label + "/" + model.name,
                    [&b, kind, &model](benchmark::State& s) { optimizer_step(s, b, kind, model); });
        }
    }
}

}  // namespace triptych::bench
