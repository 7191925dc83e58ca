// The helpers every suite shares; see suites.hpp.
#include "bench/suites.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

#include "common/errors.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"

namespace triptych::bench {

std::vector<Variant> variants(const Options& options) {
    std::vector<Variant> out;
    for (const std::string& name : backend_names()) {
        const Backend& b = backend(name);
        const DeviceKind kind = b.device_kind();
        if (kind != DeviceKind::Simulator)
            out.push_back({name, &b, kind});
        else if (options.include_simulator)
            out.push_back({name + "_on_simulator", &b, kind});
    }
    return out;
}

std::vector<Variant> other_versions(const Variant& v, Op op) {
    std::vector<Variant> out;
    const std::string& variant = v.backend->variant();
    for (const KernelVersion& version : kernel_versions(variant, op)) {
        if (version.is_default) continue;
        const std::string name = variant + "@" + std::to_string(version.number);
        const std::string label = v.kind == DeviceKind::Simulator ? name + "_on_simulator" : name;
        out.push_back({label, &backend(name), v.kind});
    }
    return out;
}

std::vector<std::int64_t> powers_of_two(std::int64_t low, std::int64_t high) {
    std::vector<std::int64_t> sizes;
    for (std::int64_t n = 1; n <= high; n *= 2)
        if (n >= low) sizes.push_back(n);
    return sizes;
}

// 2^16 floats (256 KiB) fit in L2, 2^20 (4 MiB) in L3, 2^24 (64 MiB) only in DRAM; a GPU adds
// 2^26 (256 MiB), where launch overhead is negligible against the transfer. The simulator runs
// one fiber per CUDA thread, so it gets one small size.
std::vector<std::int64_t> stream_sizes(DeviceKind kind, const Options& options) {
    switch (kind) {
        case DeviceKind::Gpu:
            if (options.quick) return {1 << 16, 1 << 20};
            return {1 << 16, 1 << 20, 1 << 24, 1 << 26};
        case DeviceKind::Simulator:
            return {1 << 12};
        case DeviceKind::Cpu:
            break;
    }
    if (options.quick) return {1 << 16, 1 << 18};
    return {1 << 16, 1 << 20, 1 << 24};
}

// 4096x1000: a classifier's batch over 1000 classes; 64x100000: long rows, where one thread per row
// (gpu_naive) leaves most of a GPU idle; 65536x10: MNIST-sized rows, where per-row overhead counts.
// A GPU adds each with 8 times the rows, so that launch overhead no longer hides the bandwidth.
std::vector<RowsCols> row_shapes(DeviceKind kind, const Options& options) {
    if (kind == DeviceKind::Simulator) return {{16, 256}};
    if (options.quick) return {{256, 1000}, {4, 100000}, {16384, 10}};
    std::vector<RowsCols> shapes{{4096, 1000}, {64, 100000}, {65536, 10}};
    if (kind == DeviceKind::Gpu)
        shapes.insert(shapes.end(), {{32768, 1000}, {512, 100000}, {524288, 10}});
    return shapes;
}

std::vector<std::int64_t> copy_sizes(DeviceKind kind, const Options& options) {
    std::vector<std::int64_t> sizes = stream_sizes(kind, options);
    for (const RowsCols& shape : row_shapes(kind, options))
        sizes.push_back(shape.rows * shape.cols);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

std::vector<float> random_values(std::int64_t count) {
    std::vector<float> values(static_cast<std::size_t>(count));
    Rng(20240601).uniform(values);
    return values;
}

void add(const std::string& name, std::function<void(benchmark::State&)> body) {
    auto guarded = [body = std::move(body)](benchmark::State& state) {
        try {
            body(state);
        } catch (const std::exception& e) {
            state.SkipWithError(e.what());  // also stops the timer if the loop was running
        }
    };
    benchmark::RegisterBenchmark(name.c_str(), guarded)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
}

bool implements(const std::function<void()>& try_once) {
    try {
        try_once();
        return true;
    } catch (const Unsupported&) {
        return false;
    } catch (const std::exception&) {
        return true;
    }
}

void time_calls(benchmark::State& state, const Backend& b, const std::function<void()>& op) {
    for (auto _ : state) {
        op();
        b.synchronize();
    }
}

void count_per_second(benchmark::State& state, const char* name, double per_call) {
    state.counters[name] =
        benchmark::Counter(per_call, benchmark::Counter::kIsIterationInvariantRate);
}

bool warm_up(benchmark::State& state, const std::function<void()>& op, const Backend& owner,
             const Tensor& output) {
    op();
    owner.synchronize();
    const std::vector<float> values = owner.download(output);
    for (std::size_t i = 0; i < values.size(); ++i)
        if (std::isnan(values[i])) {
            state.SkipWithError(
                ("output element " + std::to_string(i) + " was never written (still NaN)").c_str());
            return false;
        }
    state.SetLabel(owner.device());
    return true;
}

bool warm_up(benchmark::State& state, const std::function<float()>& op, const Backend& owner) {
    if (std::isnan(op())) {
        state.SkipWithError("the result is NaN");
        return false;
    }
    state.SetLabel(owner.device());
    return true;
}

}  // namespace triptych::bench
