// The simulator's test suite (tests/sim): Catch2's main. Each *_test.cpp proves one area of the
// simulator; CTest runs the whole suite once per thread order (TRIPTYCH_SIM_ORDER).
#define CATCH_CONFIG_MAIN
// g++ 12 with -fsanitize=address warns about libstdc++'s <regex>, which Catch2's main compiles:
// a false positive inside the standard library.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <catch2/catch.hpp>
