#include "common/machine.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

namespace triptych {

namespace {

// "  AMD EPYC   " -> "AMD EPYC": the words of a /proc/cpuinfo value, one space apart.
std::string words(const std::string& value) {
    std::string out;
    std::size_t i = 0;
    while (i < value.size()) {
        while (i < value.size() && std::isspace(static_cast<unsigned char>(value[i]))) ++i;
        std::size_t end = i;
        while (end < value.size() && !std::isspace(static_cast<unsigned char>(value[end]))) ++end;
        if (end > i) out += (out.empty() ? "" : " ") + value.substr(i, end - i);
        i = end;
    }
    return out;
}

// The first two CPUs the calling thread may run on, or {-1, -1}.
std::pair<int, int> first_two_cpus() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {-1, -1};
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
    return cpus.size() == 2 ? std::pair{cpus[0], cpus[1]} : std::pair{-1, -1};
}

bool pin_to(int cpu) {
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET(cpu, &only);
    return pthread_setaffinity_np(pthread_self(), sizeof only, &only) == 0;
}

// The ball: a counter alone in its cache line. The first thread serves odd numbers and waits for
// the next even one; the second answers each odd number with the even one after it. Either gives
// up once `stop` is set: by a thread that could not be pinned, or by a wait that found the time
// up (on a busy machine a pinned thread shares its CPU, and each bounce may wait for its turn).
struct Rally {
    using Clock = std::chrono::steady_clock;
    alignas(64) std::atomic<std::int64_t> ball{0};
    alignas(64) std::atomic<bool> stop{false};
    Clock::time_point give_up;

    explicit Rally(std::chrono::milliseconds budget) : give_up(Clock::now() + budget) {}

    bool wait_for(std::int64_t value) {
        for (std::int64_t spins = 1; ball.load(std::memory_order_acquire) != value; ++spins) {
            if (stop.load(std::memory_order_relaxed)) return false;
            if (spins % 1024 == 0 && Clock::now() > give_up) {
                stop.store(true);
                return false;
            }
        }
        return true;
    }
};

}  // namespace

RoundTrip cache_line_round_trip(std::chrono::milliseconds budget) {
    const auto [first, second] = first_two_cpus();
    RoundTrip trip{first, second, -1, "this process may run on one CPU only"};
    if (first < 0) return trip;
    constexpr int runs = 5;
    constexpr std::int64_t bounces = 10000;
    Rally rally(budget);
    std::atomic<bool> pinned{true};
    std::vector<double> nanoseconds;
    // Run r's round trips are numbers r * bounces ... r * bounces + bounces - 1 of the rally; run
    // 0 warms up (both threads awake on their CPUs, the line in their caches), runs 1 to `runs`
    // are timed.
    std::thread partner([&, second = second] {
        if (!pin_to(second)) {
            pinned.store(false);
            rally.stop.store(true);
            return;
        }
        for (std::int64_t n = 0; n < (runs + 1) * bounces; ++n) {
            if (!rally.wait_for(2 * n + 1)) return;
            rally.ball.store(2 * n + 2, std::memory_order_release);
        }
    });
    std::thread server([&, first = first] {
        if (!pin_to(first)) {
            pinned.store(false);
            rally.stop.store(true);
            return;
        }
        for (int run = 0; run <= runs; ++run) {
            const auto start = Rally::Clock::now();
            for (std::int64_t n = run * bounces; n < (run + 1) * bounces; ++n) {
                rally.ball.store(2 * n + 1, std::memory_order_release);
                if (!rally.wait_for(2 * n + 2)) return;
            }
            const auto end = Rally::Clock::now();
            const std::chrono::duration<double, std::nano> took = end - start;
            if (run > 0) nanoseconds.push_back(took.count() / double(bounces));
            // the waits look at the clock only every 1024 spins, which quick bounces never reach
            if (run < runs && end > rally.give_up) {
                rally.stop.store(true);
                return;
            }
        }
    });
    server.join();
    partner.join();
    if (!pinned.load()) {
        trip.why_not = "a thread could not be pinned to one of them";
        return trip;
    }
    if (rally.stop.load()) {
        trip.why_not =
            "the CPUs were too busy to finish in " + std::to_string(budget.count()) + " ms";
        return trip;
    }
    std::nth_element(nanoseconds.begin(), nanoseconds.begin() + runs / 2, nanoseconds.end());
    trip.nanoseconds = nanoseconds[runs / 2];
    trip.why_not.clear();
    return trip;
}

std::string describe(const RoundTrip& trip) {
    if (trip.first < 0) return "not measured (" + trip.why_not + ")";
    const std::string cpus =
        "CPU " + std::to_string(trip.first) + " and CPU " + std::to_string(trip.second);
    if (trip.nanoseconds < 0) return "not measured between " + cpus + " (" + trip.why_not + ")";
    return std::to_string(std::lround(trip.nanoseconds)) + " ns between " + cpus;
}

std::string cpu_model() {
    // The first processor's fields: every core of these machines is the same model.
    std::map<std::string, std::string> fields;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = words(line.substr(0, colon));
        if (key == "model name" || key == "cpu family" || key == "model")
            fields.emplace(key, words(line.substr(colon + 1)));  // the first one is kept
    }
    std::string model = fields.count("model name") ? fields["model name"] : "unknown CPU";
    if (fields.count("cpu family") && fields.count("model"))
        model += " (family " + fields["cpu family"] + ", model " + fields["model"] + ")";
    return model;
}

const char* compiled_vector_isa() {
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__)
    return "AVX2";
#elif defined(__AVX__)
    return "AVX";
#elif defined(__SSE2__)
    return "SSE2";
#else
    return "no x86 vectors";
#endif
}

std::string cpu_description() {
    return cpu_model() + ", code compiled for " + compiled_vector_isa();
}

std::int64_t proc_kilobytes(const char* file, const std::string& key) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ":", 0) == 0) {  // "MemAvailable:   22817516 kB"
            std::istringstream fields(line.substr(key.size() + 1));
            std::int64_t kilobytes = -1;
            std::string unit;
            return fields >> kilobytes >> unit && unit == "kB" && kilobytes >= 0 ? kilobytes : -1;
        }
    return -1;
}

std::int64_t available_memory() {
    const std::int64_t kilobytes = proc_kilobytes("/proc/meminfo", "MemAvailable");
    return kilobytes < 0 ? -1 : kilobytes * 1024;
}

}  // namespace triptych
