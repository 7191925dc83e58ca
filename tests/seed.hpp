// The seed of this test run's random inputs (see tests/seed.cpp).
#pragma once

#include <cstdint>

namespace triptych::testing {

std::uint64_t seed();

}  // namespace triptych::testing
