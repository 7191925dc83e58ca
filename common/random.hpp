// The one random-number source: seeded, so any check can be replayed with the seed it printed.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace triptych {

class Rng {
public:
    explicit Rng(std::uint64_t seed) : engine_(seed) {}

    // Fills `out` with values drawn uniformly from [low, high).
    void uniform(std::span<float> out, float low = -1.0f, float high = 1.0f) {
        std::uniform_real_distribution<float> dist(low, high);
        for (float& v : out) v = dist(engine_);
    }
    std::uint64_t next() { return engine_(); }

private:
    std::mt19937_64 engine_;
};

// A fresh seed from the operating system's entropy source, for runs that were given none.
inline std::uint64_t fresh_seed() {
    std::random_device device;
    return (std::uint64_t(device()) << 32) ^ device();
}

}  // namespace triptych
