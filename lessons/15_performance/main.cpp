// Lesson 15: performance versus problem size, the fixed cost of a call, and the half-performance
// size n1/2 (see README.md next to this file).
//
// Times ReLU (8 bytes moved per element: memory-bound) and square GEMM (2N^3 flops on 12N^2
// bytes: compute-bound once N is large) over a ladder of sizes on every variant that is not the
// simulator, each call synchronized, as the benchmarks time it. Every case is also checked against
// the float64 reference. Then, per variant, what the ladder shows: the time of the smallest call
// (the fixed cost), the best rate, and n1/2, the smallest size reaching half of it. Exits 1 if a
// variant is wrong.
//
//   lesson_15_performance [SEED]
#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "common/timer.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

// One measured case: the op at one size on one variant.
struct Point {
    std::int64_t size;  // floats for ReLU, N for GEMM
    double seconds;     // per call
    double rate;        // bytes or flops per second
};

// Seconds per call of `op` on `b`: after one untimed call (first-call costs), calls with the
// backend synchronized after each, as the benchmarks do, until 20 ms and at least 3 calls have
// passed. One call of a tiny op lasts well under a microsecond; the mean over many resolves it.
double seconds_per_call(const Backend& b, const std::function<void()>& op) {
    op();
    b.synchronize();
    const Timer timer;
    std::int64_t calls = 0;
    do {
        op();
        b.synchronize();
        ++calls;
    } while (calls < 3 || timer.seconds() < 0.02);
    return timer.seconds() / double(calls);
}

std::vector<float> random_floats(std::int64_t count, std::uint64_t seed) {
    std::vector<float> values(static_cast<std::size_t>(count));
    Rng(seed).uniform(values);
    return values;
}

// "1024 (4 KiB)" for a float count; "N=256" for a GEMM.
std::string size_text(const std::string& op, std::int64_t size) {
    if (op == "gemm") return "N=" + std::to_string(size);
    const double bytes = 4.0 * double(size);
    char text[48];
    if (bytes < 1 << 20)
        std::snprintf(text, sizeof text, "%lld (%.0f KiB)", (long long)size, bytes / 1024);
    else
        std::snprintf(text, sizeof text, "%lld (%.0f MiB)", (long long)size, bytes / (1 << 20));
    return text;
}

// An op at one size: how to time it and how to check it on a variant.
struct Case {
    std::string op;
    std::int64_t size;
    double work;                                 // bytes (ReLU) or flops (GEMM) per call
    std::function<double(const Backend&)> time;  // seconds per call
    std::function<check::CaseResult(const Backend&)> check;
};

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        std::vector<const Backend*> variants;
        std::vector<std::string> skipped;
        bool gpu = false;
        for (const std::string& name : backend_names()) {
            const Backend& b = backend(name);
            if (b.device_kind() == DeviceKind::Simulator) {
                skipped.push_back(name);
                continue;
            }
            variants.push_back(&b);
            gpu = gpu || b.device_kind() == DeviceKind::Gpu;
        }
        if (!skipped.empty()) {
            std::printf("\nnot timed: ");
            for (const std::string& name : skipped) std::printf("%s ", name.c_str());
            std::puts(
                "(the CUDA simulator: its times describe the CPU running it, not a\nGPU; "
                "README.md quotes this project's benchmark on an H200)");
        }

        // ReLU from 1 KiB (a call is all fixed cost) to 16 MiB (beyond most L2 caches; a GPU goes
        // on to 64 MiB); GEMM from N = 16 to 256 (a GPU to 1024, where it nears its peak).
        std::vector<Case> cases;
        for (std::int64_t n = 256; n <= (gpu ? (1 << 24) : (1 << 22)); n *= 4)
            cases.push_back({"relu_forward", n, 8.0 * double(n),
                             [n, seed](const Backend& b) {
                                 const Tensor x = b.upload(Shape{n}, random_floats(n, seed));
                                 Tensor y = b.allocate(Shape{n});
                                 return seconds_per_call(
                                     b, [&] { b.activation_forward(Activation::relu, x, y); });
                             },
                             [n, seed](const Backend& b) {
                                 return check::check_activation_forward(
                                     b, Activation::relu, Shape{n}, check::Output::separate, seed);
                             }});
        for (std::int64_t N = 16; N <= (gpu ? 1024 : 256); N *= 2)
            cases.push_back(
                {"gemm", N, 2.0 * double(N) * double(N) * double(N),
                 [N, seed](const Backend& b) {
                     const Tensor A = b.upload(Shape{N, N}, random_floats(N * N, seed));
                     const Tensor B = b.upload(Shape{N, N}, random_floats(N * N, seed + 1));
                     Tensor C = b.allocate(Shape{N, N});
                     return seconds_per_call(b, [&] { b.gemm(GemmShape{N, N, N}, A, B, C); });
                 },
                 [N, seed](const Backend& b) {
                     return check::check_gemm(b, GemmShape{N, N, N}, seed);
                 }});

        std::printf("\n%-13s %-16s %-14s %-22s %12s %14s %12s  %s\n", "op", "size", "variant",
                    "device", "us/call", "rate", "vs cpu_naive", "vs float64 reference");
        // relu[v], gemm[v]: the ladder variant v climbed, for the summary below.
        std::vector<std::vector<Point>> relu(variants.size()), gemm(variants.size());
        bool all_passed = true;
        for (const Case& c : cases) {
            double naive_seconds = 0;
            for (std::size_t v = 0; v < variants.size(); ++v) {
                const Backend& b = *variants[v];
                // cpu_naive's triple loop takes seconds a call beyond N = 256.
                if (c.op == "gemm" && b.name() == "cpu_naive" && c.size > 256) continue;
                try {
                    const check::CaseResult result = c.check(b);
                    const double seconds = c.time(b);
                    if (b.name() == "cpu_naive") naive_seconds = seconds;
                    const Point point{c.size, seconds, c.work / seconds};
                    (c.op == "gemm" ? gemm : relu)[v].push_back(point);
                    std::string speedup;
                    if (naive_seconds > 0)
                        speedup = lessons::measured_number("%.2f", naive_seconds / seconds) + "x";
                    std::printf("%-13s %-16s %-14s %-22.22s %12s %9s %-4s %12s  %s\n", c.op.c_str(),
                                size_text(c.op, c.size).c_str(), b.name().c_str(),
                                b.device().c_str(),
                                lessons::measured_number("%.2f", seconds * 1e6).c_str(),
                                lessons::measured_number("%.2f", point.rate * 1e-9).c_str(),
                                c.op == "gemm" ? "GF/s" : "GB/s", speedup.c_str(),
                                lessons::verdict(result).c_str());
                    all_passed = all_passed && result.comparison.passed;
                } catch (const Unsupported& e) {  // a variant without the op (gpu_vendor: ReLU)
                    std::printf("%-13s %-16s %-14s %-22.22s not implemented: %s\n", c.op.c_str(),
                                size_text(c.op, c.size).c_str(), b.name().c_str(),
                                b.device().c_str(), e.what());
                }
                std::fflush(stdout);
            }
        }
        std::puts(
            "us/call: the mean of many calls, the backend synchronized after each; rate: 8 bytes\n"
            "per ReLU element (GB/s), 2N^3 flops per GEMM (GFLOP/s, GF/s); vs cpu_naive: how many\n"
            "times faster than cpu_naive at the same size. One machine, one run: bench/ has the\n"
            "repeated measurements.");

        // What each ladder shows. n1/2 (Hockney): below it, a call's fixed cost dominates; above
        // it, the rate the hardware sustains.
        std::printf("\n%-13s %-14s %16s %20s %18s\n", "op", "variant", "smallest call us",
                    "best rate", "n1/2 (half of it)");
        for (const auto& [op, ladders] : {std::pair{"relu_forward", &relu}, {"gemm", &gemm}}) {
            for (std::size_t v = 0; v < variants.size(); ++v) {
                const std::vector<Point>& points = (*ladders)[v];
                if (points.empty()) continue;
                const Point best = *std::max_element(
                    points.begin(), points.end(),
                    [](const Point& a, const Point& b) { return a.rate < b.rate; });
                const Point half = *std::find_if(points.begin(), points.end(), [&](const Point& p) {
                    return p.rate >= best.rate / 2;
                });
                const std::string unit = std::string(op) == "gemm" ? " GFLOP/s" : " GB/s";
                std::printf("%-13s %-14s %16s %12s%-8s %18s\n", op, variants[v]->name().c_str(),
                            lessons::measured_number("%.2f", points.front().seconds * 1e6).c_str(),
                            lessons::measured_number("%.2f", best.rate * 1e-9).c_str(),
                            unit.c_str(), lessons::measured(size_text(op, half.size)).c_str());
            }
        }
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 15: %s\n", error.what());
        return 1;
    }
}
