// The one random-number source: seeded, so any check can be replayed with the seed it printed.
#pragma once

#include <charconv>
#include <cstdint>
#include <random>
#include <span>
#include <string>

#include "common/errors.hpp"

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

// The seed of stream `index` of a run seeded with `seed` (layer i of a model, epoch e of the
// shuffling), so that one seed fixes every stream and the streams are unrelated to each other.
// Each input goes through splitmix64's mixing function (Steele, Lea and Flood, 2014), whose every
// output bit depends on every input bit: nearby seeds or indices give far-apart engine seeds,
// which seed + index would not.
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t index) {
    const auto splitmix64 = [](std::uint64_t x) {
        x += 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        return x ^ (x >> 31);
    };
    return splitmix64(splitmix64(seed) ^ index);
}

// A seed as the user typed it (`--seed S`, a lesson's argument, TRIPTYCH_SEED): every value a
// run prints, 0 to 2^64 - 1, and nothing else. InvalidArgument names `what` (the option) and the
// text otherwise: a sign, a fraction, trailing characters or a value past 2^64 - 1.
inline std::uint64_t parse_seed(const std::string& what, const std::string& text) {
    std::uint64_t seed = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, seed);
    if (text.empty() || error != std::errc() || stop != end)
        throw InvalidArgument(what + " takes an integer from 0 to 18446744073709551615, got '" +
                              text + "'");
    return seed;
}

// A fresh seed from the operating system's entropy source, for runs that were given none.
inline std::uint64_t fresh_seed() {
    std::random_device device;
    return (std::uint64_t(device()) << 32) ^ device();
}

}  // namespace triptych
