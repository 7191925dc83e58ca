// Loss benchmarks: mse_loss over n floats and softmax_cross_entropy over (rows, classes) logits,
// each returning the mean loss and writing its gradient.
//
// Rows: mse_loss/<variant>/<n> (the stream sizes) and
// softmax_cross_entropy/<variant>/<rows>x<classes> (the row shapes, as softmax). Counter `bytes`,
// what one call must read and write:
//   mse_loss               reads prediction and target, writes grad     12n bytes
//   softmax_cross_entropy  reads logits and labels, writes grad         8·rows·classes + 4·rows
// Each is an elementwise pass plus a reduction to one number (the losses use the deterministic
// mode of sum), so they too are measured against the copy bandwidth.
// Run: triptych_bench --benchmark_filter='(mse_loss|softmax_cross_entropy)/'
#include <algorithm>

#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

// One class index per row, drawn uniformly from [0, classes) and held as floats, as the loss
// expects them.
std::vector<float> random_labels(std::int64_t rows, std::int64_t classes) {
    std::vector<float> labels = random_values(rows);
    for (float& label : labels) {
        const auto index = static_cast<std::int64_t>((label + 1.0f) / 2.0f * float(classes));
        label = static_cast<float>(std::clamp<std::int64_t>(index, 0, classes - 1));
    }
    return labels;
}

void mse_loss(benchmark::State& state, const Backend& b, std::int64_t n) {
    const Tensor prediction = b.upload(Shape{n}, random_values(n));
    const Tensor target = b.upload(Shape{n}, random_values(n));
    Tensor grad = b.allocate(Shape{n});
    auto op = [&] { benchmark::DoNotOptimize(b.mse_loss(prediction, target, grad)); };
    if (!warm_up(state, op, b, grad)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes", 3.0 * sizeof(float) * double(n));
}

void softmax_cross_entropy(benchmark::State& state, const Backend& b, RowsCols m) {
    const Shape shape{m.rows, m.cols};
    const Tensor logits = b.upload(shape, random_values(m.rows * m.cols));
    const Tensor labels = b.upload(Shape{m.rows}, random_labels(m.rows, m.cols));
    Tensor grad = b.allocate(shape);
    auto op = [&] { benchmark::DoNotOptimize(b.softmax_cross_entropy(logits, labels, grad)); };
    if (!warm_up(state, op, b, grad)) return;
    time_calls(state, b, op);
    count_per_second(state, "bytes",
                     sizeof(float) * (2.0 * double(m.rows * m.cols) + double(m.rows)));
}

}  // namespace

void register_losses(const Options& options) {
    for (const Variant& v : variants(options)) {
        const Backend& b = *v.backend;
        const Tensor zero = b.upload(Shape{1}, std::vector<float>{0.0f});
        const Tensor logits = b.upload(Shape{1, 1}, std::vector<float>{0.5f});
        Tensor grad = b.allocate(Shape{1}), logits_grad = b.allocate(Shape{1, 1});
        const bool has_mse = implements([&] { b.mse_loss(zero, zero, grad); });
        const bool has_cross_entropy =
            implements([&] { b.softmax_cross_entropy(logits, zero, logits_grad); });
        if (has_mse)
            for (std::int64_t n : stream_sizes(v.kind, options))
                add("mse_loss/" + v.label + "/" + std::to_string(n),
                    [&b, n](benchmark::State& s) { mse_loss(s, b, n); });
        if (has_cross_entropy)
            for (const RowsCols m : row_shapes(v.kind, options))
                add("softmax_cross_entropy/" + v.label + "/" + m.str(),
                    [&b, m](benchmark::State& s) { softmax_cross_entropy(s, b, m); });
    }
}

}  // namespace triptych::bench
