// Reduction benchmarks: the sum of n floats in both modes, side by side.
//
// Rows: sum_deterministic/<variant>/<n> and sum_fast/<variant>/<n> (the stream sizes).
//   deterministic  a fixed order of additions: the same bits on every run (the losses use it)
//   fast           whatever order is quickest (atomics on a GPU); the last bits may vary
// Counter `bytes`: a sum reads its n floats once and writes one number, 4n bytes. mean is sum / n
// (common/backend.cpp), so it has no rows of its own. Reading without writing can beat the copy,
// which reads and writes, so a sum may exceed 100% of the copy bandwidth.
// Run: triptych_bench --benchmark_filter='sum_'
#include "bench/suites.hpp"

namespace triptych::bench {
namespace {

void sum(benchmark::State& state, const Backend& b, Reduction mode, std::int64_t n) {
    const Tensor x = b.upload(Shape{n}, random_values(n));
    auto op = [&] { return b.sum(x, mode); };
    if (!warm_up(state, op, b)) return;
    time_calls(state, b, [&] { benchmark::DoNotOptimize(op()); });
    count_per_second(state, "bytes", sizeof(float) * double(n));
}

}  // namespace

void register_reductions(const Options& options) {
    for (const Reduction mode : {Reduction::deterministic, Reduction::fast}) {
        const std::string op = mode == Reduction::deterministic ? "sum_deterministic" : "sum_fast";
        for (const Variant& v : variants(options)) {
            const Backend& b = *v.backend;
            const Tensor one = b.upload(Shape{1}, std::vector<float>{0.5f});
            if (!implements([&] { b.sum(one, mode); })) continue;
            for (std::int64_t n : stream_sizes(v.kind, options))
                add(op + "/" + v.label + "/" + std::to_string(n),
                    [&b, mode, n](benchmark::State& s) { sum(s, b, mode, n); });
        }
    }
}

}  // namespace triptych::bench
