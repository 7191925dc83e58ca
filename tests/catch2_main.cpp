// Catch2's implementation (a single-header library compiles it in the one file that says so) and
// the main() of every test program: triptych_tests, sim_tests and sim_recorder_tests. It is the
// largest file the build compiles, so it is compiled once for all of them, at -O1
// (tests/CMakeLists.txt): the tests spend their time in the code they test, not in Catch2's.
// Before the tests run, main() lets the program start its run (tests/start.hpp).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/start.hpp"

int main(int argc, char* argv[]) {
    const int status = triptych::testing::start_test_run();
    return status != 0 ? status : Catch::Session().run(argc, argv);
}
