// The rows of the op descriptions and the helpers every suite shares; see suites.hpp.
#include "bench/suites.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/json.hpp"
#include "common/registry.hpp"

namespace triptych::bench {
namespace {

struct Described {
    std::string op, counter, work, table;
};

std::vector<Described>& described() {
    static std::vector<Described> all;
    return all;
}

// Whether `b` has every kernel the rows run.
bool runs(const Backend& b, const check::BenchRows& rows) {
    for (Op op : rows.needs)
        if (!b.implements(op)) return false;
    return true;
}

// One row: the case set up on b, warmed up and checked, then timed, with its counters.
void time_case(benchmark::State& state, const Backend& b, const check::BenchRows& rows,
               const check::BenchCase& c) {
    const check::Workload work = c.prepare(b);
    if (work.result) {
        if (std::isnan(work.result())) {
            state.SkipWithError("the result is NaN");
            return;
        }
        state.SetLabel(b.device());
        time_calls(state, b, [&] { benchmark::DoNotOptimize(work.result()); });
    } else {
        if (!warm_up(state, work.call, b, work.output)) return;
        time_calls(state, b, work.call);
    }
    count_per_second(state, rows.counter.c_str(), c.work);
    for (const auto& [name, value] : c.extra_counters) state.counters[name] = value;
}

}  // namespace

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

void describe_rows(const std::string& op, const std::string& counter, const std::string& work,
                   const std::string& table) {
    for (const Described& d : described())
        if (d.op == op) return;
    described().push_back({op, counter, work, table});
}

std::string described_rows_json() {
    std::string out;
    for (const Described& d : described())
        out += (out.empty() ? "" : ", ") + json_string(d.op) +
               ": {\"counter\": " + json_string(d.counter) + ", \"work\": " + json_string(d.work) +
               ", \"table\": " + json_string(d.table) + "}";
    return "{" + out + "}";
}

void register_descriptions(const Options& options) {
    for (const check::OpDescription& description : check::ops()) {
        for (const check::BenchRows& rows : description.bench) {
            describe_rows(rows.op, rows.counter, rows.work, rows.table);
            for (const Variant& variant : variants(options)) {
                // The variant, then its other versions of the rows' kernels (the GEMM ladder),
                // each once: max pooling's backward rows need the forward kernel too, and both
                // have a version 2.
                std::vector<Variant> versions{variant};
                for (Op op : rows.needs)
                    for (Variant& other : other_versions(variant, op))
                        if (std::none_of(versions.begin(), versions.end(),
                                         [&](const Variant& v) { return v.label == other.label; }))
                            versions.push_back(other);
                for (const Variant& v : versions) {
                    if (!runs(*v.backend, rows)) continue;
                    const check::BenchContext context{v.kind, options.quick, *v.backend};
                    for (const check::BenchCase& c : rows.cases(context))
                        add(rows.op + "/" + v.label + "/" + c.size,
                            [b = v.backend, &rows, c](benchmark::State& s) {
                                time_case(s, *b, rows, c);
                            });
                }
            }
        }
    }
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

}  // namespace triptych::bench
