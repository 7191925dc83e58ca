// What a test program does before Catch2 runs its tests. Each program defines it: triptych_tests
// prints the seed of its random inputs (tests/seed.cpp), the simulator's suites do nothing
// (tests/sim/start.cpp). main() is tests/catch2_main.cpp's.
#pragma once

namespace triptych::testing {

// 0 to run the tests, or the status the program exits with instead.
int start_test_run();

}  // namespace triptych::testing
