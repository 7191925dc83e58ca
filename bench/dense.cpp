// Dense-layer benchmarks: what fusing GEMM + bias + activation buys, on every variant.
//
// Rows, for Y = act(X·Wᵀ + b) with X (batch, in), W (out, in), b (out):
//   dense_forward/<variant>/<batch>x<in>-><out>_<act>            fused where the variant can: the
//                                                                bias and activation applied
//                                                                before a single store of Y
//   dense_forward_unfused/<variant>/<batch>x<in>-><out>_<act>    three steps: gemm, bias_add, the
//                                                                activation
// Counter `flops`: 2·batch·in·out per call (the GEMM's; bias and activation add 2·batch·out, left
// out so that both rows count the same work). The unfused path stores Y, then bias_add reads and
// writes it, then the activation reads and writes it again: 16·batch·out bytes the fused path does
// not move, which the report sets against the time saved. A variant without a fused kernel runs
// the same three steps in both rows (Backend::dense_forward_impl's default).
// Run: triptych_bench --benchmark_filter='dense_forward'
#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

// An MNIST layer (784 inputs), a mid-sized hidden layer, and on a GPU one large enough to fill it.
// cpu_naive stops at the first: its GEMM loops take 0.3 s a call at 256x1024->1024 on the 2-core
// reference machine, which would add most of a minute to every report for a figure known to be
// about 1 (cpu_naive's steps are as slow fused as not).
std::vector<DenseShape> dense_shapes(const Variant& v, const Options& options) {
    const DenseShape mnist{64, 784, 256, Activation::relu};
    const DenseShape hidden{256, 1024, 1024, Activation::relu};
    const DenseShape large{1024, 4096, 4096, Activation::relu};
    switch (v.kind) {
        case DeviceKind::Gpu:
            if (options.quick) return {mnist, hidden};
            return {mnist, hidden, large};
        case DeviceKind::Simulator:
            return {{32, 128, 64, Activation::relu}};
        case DeviceKind::Cpu:
            break;
    }
    if (options.quick || v.label == "cpu_naive") return {mnist};
    return {mnist, hidden};
}

// "64x784->256_relu": DenseShape::str() without the space, so the name stays one shell word.
std::string shape_name(const DenseShape& s) {
    return std::to_string(s.batch) + "x" + std::to_string(s.in) + "->" + std::to_string(s.out) +
           "_" + to_string(s.activation);
}

void dense(benchmark::State& state, const Backend& b, const DenseShape& s, bool fused) {
    const Tensor X = b.upload(Shape{s.batch, s.in}, random_values(s.batch * s.in));
    const Tensor W = b.upload(Shape{s.out, s.in}, random_values(s.out * s.in));
    const Tensor bias = b.upload(Shape{s.out}, random_values(s.out));
    Tensor Y = b.allocate(Shape{s.batch, s.out});
    auto op = [&] {
        if (fused)
            b.dense_forward(X, W, bias, s.activation, Y);
        else
            b.dense_forward_unfused(X, W, bias, s.activation, Y);
    };
    if (!warm_up(state, op, b, Y)) return;
    time_calls(state, b, op);
    count_per_second(state, "flops", s.gemm().flops());
}

}  // namespace

void register_dense(const Options& options) {
    for (const Variant& v : variants(options)) {
        const Backend& b = *v.backend;
        const Tensor one = b.upload(Shape{1, 1}, std::vector<float>{0.5f});
        const Tensor bias = b.upload(Shape{1}, std::vector<float>{0.5f});
        Tensor out = b.allocate(Shape{1, 1});
        const bool has_fused =
            implements([&] { b.dense_forward(one, one, bias, Activation::relu, out); });
        const bool has_unfused =
            implements([&] { b.dense_forward_unfused(one, one, bias, Activation::relu, out); });
        // Fused and unfused rows of a shape one after the other, so that both see the same
        // machine (other load, clock speed).
        for (const DenseShape& s : dense_shapes(v, options)) {
            if (has_fused)
                add("dense_forward/" + v.label + "/" + shape_name(s),
                    [&b, s](benchmark::State& st) { dense(st, b, s, /*fused=*/true); });
            if (has_unfused)
                add("dense_forward_unfused/" + v.label + "/" + shape_name(s),
                    [&b, s](benchmark::State& st) { dense(st, b, s, /*fused=*/false); });
        }
    }
}

}  // namespace triptych::bench
