// The seed every randomised test of triptych_tests draws its inputs from: fresh on each run (or
// TRIPTYCH_SEED=S to replay one), printed before the tests run so a failure can always be
// reproduced.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/random.hpp"
#include "tests/seed.hpp"
#include "tests/start.hpp"

namespace triptych::testing {

std::uint64_t seed() {
    static const std::uint64_t value = [] {
        const char* text = std::getenv("TRIPTYCH_SEED");
        return text != nullptr ? parse_seed("TRIPTYCH_SEED", text) : fresh_seed();
    }();
    return value;
}

int start_test_run() {
    unsigned long long value = 0;
    try {
        value = seed();
    } catch (const InvalidArgument& error) {
        std::fprintf(stderr, "%s\n", error.what());
        return 2;
    }
    std::printf("input seed %llu (replay with TRIPTYCH_SEED=%llu)\n", value, value);
    return 0;
}

}  // namespace triptych::testing
