// The simulator's test suite (tests/sim): Catch2's main. Each *_test.cpp proves one area of the
// simulator; CTest runs the whole suite once per thread order (TRIPTYCH_SIM_ORDER).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
