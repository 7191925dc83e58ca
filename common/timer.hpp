// The one wall-clock timer, for the lesson programs' side-by-side tables. Performance claims come
// from the Google Benchmark suites in bench/, never from this.
#pragma once

#include <chrono>

namespace triptych {

class Timer {
public:
    Timer() : start_(std::chrono::steady_clock::now()) {}
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

private:
    std::chrono::steady_clock::time_point start_;
};

}  // namespace triptych
