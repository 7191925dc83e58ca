// The cross-check of the optimizers: several steps of SGD, Adam or RMSprop over a list of
// parameter tensors, on one variant and in float64 with the reference (cpu_naive::optimizer_step
// in double, cpu/naive/optimizer.hpp), comparing the weights and every state tensor at the end;
// and the OpChecks `triptych check --op sgd|adam|rmsprop` runs.
//
// The inputs: weights uniform in [-1, 1), state tensors 0 (as before a first step), and a fresh
// gradient for every step, the same on both sides, of magnitude uniform in [0.5, 1) and a random
// sign. Not [-1, 1): Adam's and RMSprop's steps divide the gradient by its own running size, so an
// element whose gradient g = grad + weight_decay * w cancels to near 0 has its float32 rounding
// (relative to grad, not to g) blown up to a good part of a step, and the comparison would measure
// that ill-conditioning, not the code (seen: 1 element of 235,146 off by 3x the tolerance, seed
// 6127603962658584558). With |grad| >= 0.5 and weight_decay * |w| <= 0.3 in every configuration
// here, g stays away from 0. Several steps, because the
// state carries one step's errors into the next, and a wrong bias correction (which depends on the
// step) or a state tensor read from the wrong place only shows after the first.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "check/case_helpers.hpp"
#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/optimizer_rule.hpp"
#include "cpu/naive/optimizer.hpp"

namespace triptych::check {
namespace {

// The state tensors' names, in the order of optimizer_update's s0, s1 (common/optimizer_rule.hpp).
std::vector<std::string> state_names(const OptimizerConfig& config) {
    std::vector<std::string> names;
    switch (config.kind) {
        case OptimizerKind::sgd:
            names = {"velocity"};
            break;
        case OptimizerKind::adam:
            names = {"mean", "mean square"};
            break;
        case OptimizerKind::rmsprop:
            names = {"mean square", "momentum buffer"};
            break;
    }
    names.resize(static_cast<std::size_t>(config.state_tensors()));
    return names;
}

// "[1, 7, 1000, 4099]": the sizes of the parameter tensors, or their count and total for a long
// list ("130 tensors, 8515 floats").
std::string describe_sizes(const std::vector<std::int64_t>& sizes) {
    std::int64_t total = 0;
    for (std::int64_t n : sizes) total += n;
    if (sizes.size() > 12)
        return std::to_string(sizes.size()) + " tensors, " + std::to_string(total) + " floats";
    return Shape(sizes).str();
}

// One quantity of the reference (the weights, or one state), every tensor of the list side by
// side, in float64, and the scale its tolerance is measured against (see check_optimizer):
// each element's largest magnitude over the run, plus the sum over steps of the largest change any
// element took in that step.
struct Tracked {
    std::vector<double> values;
    std::vector<double> largest;
    double moved = 0;

    explicit Tracked(std::vector<double> start) : values(std::move(start)), largest(values.size()) {
        for (std::size_t i = 0; i < values.size(); ++i) largest[i] = std::abs(values[i]);
    }
    // After a step that turned `before` into `values`. Only finite values count: an element a
    // NaN or an infinity reached must match it exactly, whatever the scale, and must not widen
    // the others' tolerance.
    void record(const std::vector<double>& before) {
        double step = 0;
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (!std::isfinite(values[i]) || !std::isfinite(before[i])) continue;
            step = std::max(step, std::abs(values[i] - before[i]));
            largest[i] = std::max(largest[i], std::abs(values[i]));
        }
        moved += step;
    }
    std::vector<double> scale() const {
        std::vector<double> s = largest;
        for (double& v : s) v += moved;
        return s;
    }
};

}  // namespace

// Tolerance. One step of an element is at most about a dozen roundings (Adam: the weight decay,
// two running means, two bias corrections, a square root, eps, a division, lr and the subtraction
// from w), each relative to the quantities of that step, and the state it starts from carries at
// most 5 roundings per earlier step (a running mean is two products and a sum). An error relative
// to the whole state can exceed the element's own value where a running mean cancels (momentum
// over gradients of opposite signs), so the scale of element i is its largest magnitude over the
// run plus the sum, over the steps, of the largest change of any element of the list: the size of
// what was added and subtracted. With k steps: (12 + 5k) u of that scale, doubled; for 5 steps
// 4.4e-6 of it, about 4e-6 for weights in [-1, 1). A wrong rule is far above that: a missed weight
// decay, bias correction or Nesterov term, or state read from the wrong tensor, moves weights by a
// good part of a step (lr = 0.01 to 0.1 in the default configurations, optimizer_check_configs).
//
// Non-finite gradients (Values::non_finite): no tolerance. The rule applies each formula in IEEE
// arithmetic, as torch.optim does, without skipping or clipping anything, so the elements they
// reach must be exactly what float64 gives: for a +inf gradient, SGD's weight -inf and Adam's and
// RMSprop's NaN (inf / sqrt(inf)), and for a NaN, NaN; and the state carries them on. The other
// elements keep their tolerance.
std::vector<CaseResult> check_optimizer(const Backend& backend, const OptimizerConfig& config,
                                        const std::vector<std::int64_t>& sizes, int steps,
                                        std::uint64_t seed, Values values) {
    config.validate();
    const std::string op = to_string(config.kind);
    if (sizes.empty() || steps < 1)
        throw InvalidArgument(op + " check: needs at least one tensor and one step, got " +
                              std::to_string(sizes.size()) + " tensors and " +
                              std::to_string(steps) + " steps");
    std::vector<std::int64_t> offsets{0};
    for (std::int64_t n : sizes) {
        if (n < 1)
            throw InvalidArgument(op + " check: every tensor size must be >= 1, got " +
                                  describe_sizes(sizes));
        offsets.push_back(offsets.back() + n);
    }
    const std::int64_t total = offsets.back();
    const std::vector<std::string> names = state_names(config);
    const std::size_t states = names.size();

    Rng rng(seed);
    const std::vector<float> w0 = random_values(total, rng);
    std::vector<std::vector<float>> gradients;
    for (int k = 0; k < steps; ++k) {
        std::vector<float> g = random_values(total, rng, 0.5f, 1.0f);
        for (float& v : g)
            if (rng.next() % 2 == 0) v = -v;
        gradients.push_back(std::move(g));
    }
    if (values == Values::non_finite) plant_three_non_finite(gradients[steps > 1 ? 1 : 0], rng);

    // The reference: every step in float64, tensor by tensor.
    Tracked ref_w(widen(w0));
    std::vector<Tracked> ref_states(states, Tracked(std::vector<double>(std::size_t(total), 0.0)));
    for (int k = 1; k <= steps; ++k) {
        const OptimizerRule<double> rule = optimizer_rule<double>(config, k);
        const std::vector<double> g = widen(gradients[std::size_t(k - 1)]);
        const std::vector<double> w_before = ref_w.values;
        std::vector<std::vector<double>> states_before;
        for (const Tracked& s : ref_states) states_before.push_back(s.values);
        for (std::size_t t = 0; t < sizes.size(); ++t) {
            const std::int64_t at = offsets[t];
            double* s0 = states > 0 ? ref_states[0].values.data() + at : nullptr;
            double* s1 = states > 1 ? ref_states[1].values.data() + at : nullptr;
            cpu_naive::optimizer_step<double>(rule, sizes[t], ref_w.values.data() + at,
                                              g.data() + at, s0, s1);
        }
        ref_w.record(w_before);
        for (std::size_t s = 0; s < states; ++s) ref_states[s].record(states_before[s]);
    }

    // The variant: the same steps on its own tensors.
    struct Parameter {
        Tensor value, grad, state[2];
    };
    std::vector<Parameter> parameters(sizes.size());
    std::vector<Backend::OptimizerTensor> tensors(sizes.size());
    for (std::size_t t = 0; t < sizes.size(); ++t) {
        const Shape shape{sizes[t]};
        Parameter& p = parameters[t];
        p.value = backend.upload(
            shape, std::vector<float>(w0.begin() + offsets[t], w0.begin() + offsets[t + 1]));
        p.grad = backend.allocate(shape);
        tensors[t].value = &p.value;
        tensors[t].grad = &p.grad;
        for (std::size_t s = 0; s < states; ++s) {
            p.state[s] = backend.upload(shape, std::vector<float>(std::size_t(sizes[t]), 0.0f));
            tensors[t].state[s] = &p.state[s];
        }
    }
    double seconds = 0;
    for (int k = 1; k <= steps; ++k) {
        const std::vector<float>& g = gradients[std::size_t(k - 1)];
        for (std::size_t t = 0; t < sizes.size(); ++t)
            backend.upload(parameters[t].grad,
                           std::vector<float>(g.begin() + offsets[t], g.begin() + offsets[t + 1]));
        seconds += timed(backend, [&] { backend.optimizer_step(config, k, tensors); });
    }

    // Each quantity of every tensor, side by side, against the reference's.
    const double rtol = 2.0 * double(12 + 5 * steps) * unit_roundoff;
    const std::string tolerance = format("%.2g * (max|x| + moved)", rtol);
    const auto compare_quantity = [&](const std::string& name, auto tensor_of, const Tracked& ref) {
        std::vector<float> out;
        for (const Parameter& p : parameters) {
            const std::vector<float> part = backend.download(tensor_of(p));
            out.insert(out.end(), part.begin(), part.end());
        }
        CaseResult r = result_for(
            backend, op,
            config.str() + " " + describe_sizes(sizes) + " " + std::to_string(steps) + " steps" +
                (values == Values::non_finite ? " NaN+-inf" : "") + ": " + name);
        r.tolerance = tolerance;
        r.seconds = seconds / steps;
        r.comparison = compare(out, ref.values, Tolerance{rtol, 0.0}, ref.scale());
        return r;
    };
    std::vector<CaseResult> results{compare_quantity(
        "weights", [](const Parameter& p) -> const Tensor& { return p.value; }, ref_w)};
    for (std::size_t s = 0; s < states; ++s)
        results.push_back(compare_quantity(
            names[s], [s](const Parameter& p) -> const Tensor& { return p.state[s]; },
            ref_states[s]));
    return results;
}

std::vector<OptimizerConfig> optimizer_check_configs(OptimizerKind kind) {
    OptimizerConfig base;
    base.kind = kind;
    std::vector<OptimizerConfig> configs;
    const auto with = [&](auto change) {
        OptimizerConfig c = base;
        change(c);
        configs.push_back(c);
    };
    switch (kind) {
        case OptimizerKind::sgd:
            base.lr = 0.1f;
            with([](OptimizerConfig&) {});
            with([](OptimizerConfig& c) { c.weight_decay = 0.1f; });
            with([](OptimizerConfig& c) { c.momentum = 0.9f; });
            with([](OptimizerConfig& c) {
                c.momentum = 0.9f;
                c.nesterov = true;
                c.weight_decay = 0.1f;
            });
            break;
        case OptimizerKind::adam:
            base.lr = 0.01f;
            with([](OptimizerConfig&) {});
            with([](OptimizerConfig& c) { c.weight_decay = 0.1f; });
            with([](OptimizerConfig& c) {
                c.weight_decay = 0.1f;
                c.decoupled_weight_decay = true;
            });
            break;
        case OptimizerKind::rmsprop:
            base.lr = 0.01f;
            with([](OptimizerConfig&) {});
            with([](OptimizerConfig& c) {
                c.momentum = 0.9f;
                c.weight_decay = 0.1f;
            });
            break;
    }
    return configs;
}

namespace {

// "N1[,N2,...]": one 1-D parameter tensor of each size; every configuration of the kind, 5 steps.
auto optimizer_run(OptimizerKind kind) {
    return [kind](const Backend& b, const std::string& text, std::uint64_t seed) {
        const std::string op = to_string(kind);
        const std::vector<std::int64_t> sizes = parse_sizes(op, text);
        double elements = 0;
        for (std::int64_t n : sizes) {
            if (n < 1)
                throw InvalidArgument(op + ": every tensor size must be >= 1, got '" + text + "'");
            elements += double(n);
        }
        // Each element's value, gradient and state, as floats on the host and the backend, and
        // the reference's value in doubles.
        require_memory(op, text, 32.0 * elements);
        std::vector<CaseResult> results;
        for (Values values : {Values::finite, Values::non_finite})
            for (const OptimizerConfig& config : optimizer_check_configs(kind))
                for (CaseResult& r : check_optimizer(b, config, sizes, 5, seed, values))
                    results.push_back(std::move(r));
        return results;
    };
}

}  // namespace

// --- the benchmark rows: one optimizer step over all the parameter tensors of a model ------------

namespace {

// The parameter tensors of the built-in models (common/nn/models.cpp), as training updates them:
//   mlp     784-256-128-10: 6 tensors, 235 146 floats
//   lenet   LeNet-5: 10 tensors, 61 706 floats
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
OptimizerConfig bench_config(OptimizerKind kind) {
    OptimizerConfig config{.kind = kind};
    if (kind == OptimizerKind::sgd) config.momentum = 0.9f;
    return config;
}

// The point of these rows is the launch count on a GPU: gpu_naive starts one kernel per tensor (6
// or 10), gpu_tiled one for all of them; the models are small (1 MB of weights for the mlp), so a
// step costs about as much as its launches. The work: per float of the model, w and g read and w
// written, and each state tensor read and written, 4 (3 + 2 S) bytes; counter `tensors`, how many
// tensors one step updates.
std::function<std::vector<BenchCase>(const BenchContext&)> optimizer_rows(OptimizerKind kind) {
    return [kind](const BenchContext&) {
        const OptimizerConfig config = bench_config(kind);
        const int states = config.state_tensors();
        std::vector<BenchCase> cases;
        for (const Model& model : models()) {
            double floats = 0;
            for (const Shape& shape : model.parameters) floats += double(shape.elements());
            cases.push_back(
                {model.name,
                 4.0 * (3.0 + 2.0 * states) * floats,
                 {{"tensors", double(model.parameters.size())}},
                 [config, states, &model](const Backend& b) {
                     // Each parameter with its gradient and state, all on b, owned by the call.
                     struct Parameters {
                         std::vector<Tensor> values, grads, state;
                         std::vector<Backend::OptimizerTensor> tensors;
                         std::int64_t step = 0;  // Adam's bias correction counts the steps
                     };
                     auto p = std::make_shared<Parameters>();
                     const std::size_t n = model.parameters.size();
                     p->values.reserve(n);
                     p->grads.reserve(n);
                     p->state.reserve(n * 2);
                     for (const Shape& shape : model.parameters) {
                         p->values.push_back(b.upload(shape, bench_values(shape.elements())));
                         p->grads.push_back(b.upload(shape, bench_values(shape.elements())));
                         Backend::OptimizerTensor t{&p->values.back(), &p->grads.back()};
                         for (int s = 0; s < states; ++s) {
                             p->state.push_back(b.upload(
                                 shape, std::vector<float>(std::size_t(shape.elements()), 0.0f)));
                             t.state[s] = &p->state.back();
                         }
                         p->tensors.push_back(t);
                     }
                     return Workload{
                         [&b, config, p] { b.optimizer_step(config, ++p->step, p->tensors); },
                         p->values.front(),
                         {}};
                 }});
        }
        return cases;
    };
}

BenchRows optimizer_bench_rows(OptimizerKind kind) {
    return {"optimizer_step_" + to_string(kind),
            "bytes",
            "4·(3 + 2·states)·floats",
            "optimizer",
            optimizer_rows(kind),
            {Op::optimizer_step}};
}

}  // namespace

// Default shapes (lists of tensor sizes): one weight; sizes of 1, a prime, 1000 and 4099 (off
// every block and chunk size); the parameter tensors of the mlp (784-256-128-10) and of LeNet-5,
// as training updates them; and 130 tensors of 1 to 130 floats, more than gpu_tiled's fused launch
// holds (64), so that it needs three.
std::vector<OpDescription> optimizer_descriptions() {
    std::string many;
    for (int n = 1; n <= 130; ++n) many += (n > 1 ? "," : "") + std::to_string(n);
    const std::string lenet = "150,6,2400,16,48000,120,10080,84,840,10";
    const std::vector<std::string> lists = {"1", "1,7,1000,4099", "200704,256,32768,128,1280,10",
                                            lenet, many};
    const std::string syntax = "N1[,N2,...] (one parameter tensor of each size)";
    return {
        {"sgd",
         syntax,
         lists,
         lenet,
         optimizer_run(OptimizerKind::sgd),
         {Op::optimizer_step},
         {optimizer_bench_rows(OptimizerKind::sgd)}},
        {"adam",
         syntax,
         lists,
         lenet,
         optimizer_run(OptimizerKind::adam),
         {Op::optimizer_step},
         {optimizer_bench_rows(OptimizerKind::adam)}},
        {"rmsprop",
         syntax,
         lists,
         lenet,
         optimizer_run(OptimizerKind::rmsprop),
         {Op::optimizer_step},
         {optimizer_bench_rows(OptimizerKind::rmsprop)}},
    };
}

}  // namespace triptych::check
