// Catch2's main, plus the seed every randomised test draws its inputs from: fresh on each run
// (or TRIPTYCH_SEED=S to replay one), printed first so a failure can always be reproduced.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/random.hpp"
#include "tests/seed.hpp"

namespace triptych::testing {

std::uint64_t seed() {
    static const std::uint64_t value = [] {
        const char* text = std::getenv("TRIPTYCH_SEED");
        return text != nullptr ? parse_seed("TRIPTYCH_SEED", text) : fresh_seed();
    }();
    return value;
}

}  // namespace triptych::testing

int main(int argc, char* argv[]) {
    unsigned long long seed = 0;
    try {
        seed = triptych::testing::seed();
    } catch (const triptych::InvalidArgument& error) {
        std::fprintf(stderr, "%s\n", error.what());
        return 2;
    }
    std::printf("input seed %llu (replay with TRIPTYCH_SEED=%llu)\n", seed, seed);
    return Catch::Session().run(argc, argv);
}
