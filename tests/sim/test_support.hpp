// Helpers for the simulator's Catch2 tests: a scoped thread order, the message of an expected
// exception, and one line of a source file (to check the line numbers a kernel file exports).
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "gpu/runtime/sim/removed_barriers.hpp"
#include "gpu/runtime/sim/sim.hpp"

namespace triptych::sim_tests {

// Runs the simulator's threads in `order` ("forward", "reverse", "random:SEED") until the end of
// the scope, then restores the order the test run was started with (TRIPTYCH_SIM_ORDER).
class ScopedThreadOrder {
public:
    explicit ScopedThreadOrder(const std::string& order) : saved_(sim::thread_order()) {
        sim::set_thread_order(sim::parse_thread_order(order));
    }
    ~ScopedThreadOrder() { sim::set_thread_order(saved_); }
    ScopedThreadOrder(const ScopedThreadOrder&) = delete;
    ScopedThreadOrder& operator=(const ScopedThreadOrder&) = delete;

private:
    sim::ThreadOrder saved_;
};

// Removes the barriers at `sites` ("FILE:LINE[,FILE:LINE...]", as TRIPTYCH_SIM_SKIP_SYNC takes
// them) until the end of the scope, then removes those the test run was started with again.
class ScopedRemovedBarriers {
public:
    explicit ScopedRemovedBarriers(const std::string& sites) {
        for (const sim::BarrierSite& site : sim::removed_barriers())
            saved_ += (saved_.empty() ? "" : ",") + site.str();
        sim::set_removed_barriers(sites);
    }
    ~ScopedRemovedBarriers() { sim::set_removed_barriers(saved_); }
    ScopedRemovedBarriers(const ScopedRemovedBarriers&) = delete;
    ScopedRemovedBarriers& operator=(const ScopedRemovedBarriers&) = delete;

private:
    std::string saved_;
};

// Calls `action`, which must throw an Exception; returns its message ("" and a failed check if it
// threw nothing or something else).
template <typename Exception, typename Action>
std::string message_of(Action&& action) {
    try {
        action();
    } catch (const Exception& e) {
        return e.what();
    } catch (const std::exception& e) {
        FAIL_CHECK("threw a different exception: " << e.what());
        return "";
    }
    FAIL_CHECK("threw nothing");
    return "";
}

// Line `line` (1-based) of the file at `path`, or "" if there is none.
inline std::string source_line(const std::string& path, int line) {
    std::ifstream file(path);
    std::string text;
    for (int i = 0; i < line && std::getline(file, text); ++i) {
    }
    return file ? text : "";
}

// "name.cu:123": how a message names a line of a file, whatever directory it shows.
inline std::string file_and_line(const std::string& path, int line) {
    return path.substr(path.find_last_of('/') + 1) + ":" + std::to_string(line);
}

}  // namespace triptych::sim_tests
