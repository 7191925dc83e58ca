// The simulator's test suites (tests/sim): each *_test.cpp proves one area of the simulator, on
// inputs written into the test, so nothing needs doing before they run. CTest runs each suite
// once per thread order (TRIPTYCH_SIM_ORDER).
#include "tests/start.hpp"

namespace triptych::testing {

int start_test_run() { return 0; }

}  // namespace triptych::testing
