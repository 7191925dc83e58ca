// The thread order knob: how it is parsed, where it comes from, and what it is for — a kernel that
// forgets a __syncthreads() gives wrong results in reverse and random order, while the same kernel
// with the barrier is right in every order.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <random>
#include <string>

#include "common/errors.hpp"
#include "tests/sim/kernels.hpp"
#include "tests/sim/test_support.hpp"

namespace triptych::sim_tests {
namespace {

// Fresh random inputs every call, so stale shared memory from an earlier block or launch cannot
// happen to hold the right value.
std::vector<float> fresh_inputs() {
    static std::mt19937 rng(13);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    std::vector<float> in(4 * left_neighbour_block);
    for (float& v : in) v = value(rng);
    return in;
}

// How many threads output something other than their left neighbour's input.
int wrong_left_neighbours(const std::string& order, bool with_barrier) {
    ScopedThreadOrder scoped(order);
    const std::vector<float> in = fresh_inputs();
    const std::vector<float> out = left_neighbour(in, with_barrier);
    int wrong = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const std::size_t t = i % left_neighbour_block;
        wrong += out[i] != in[t > 0 ? i - 1 : i];
    }
    return wrong;
}

}  // namespace

TEST_CASE("parse_thread_order accepts forward, reverse and random:SEED", "[sim][order]") {
    CHECK(sim::parse_thread_order("forward").order == sim::Order::forward);
    CHECK(sim::parse_thread_order("reverse").order == sim::Order::reverse);
    const sim::ThreadOrder random = sim::parse_thread_order("random:12345");
    CHECK(random.order == sim::Order::random);
    CHECK(random.seed == 12345);
    CHECK(sim::parse_thread_order("random:0").seed == 0);
    for (const char* text : {"forward", "reverse", "random:12345"})
        CHECK(sim::parse_thread_order(text).str() == text);
}

TEST_CASE("parse_thread_order rejects anything else with InvalidArgument", "[sim][order]") {
    for (const char* junk :
         {"", "backward", "forwards", "random", "random:", "random:abc", "random:12x", "random:-1",
          "reverse:3", " forward", "random:99999999999999999999999"}) {
        INFO("'" << junk << "'");
        CHECK_THROWS_AS(sim::parse_thread_order(junk), InvalidArgument);
    }
}

TEST_CASE("the thread order comes from TRIPTYCH_SIM_ORDER, forward by default", "[sim][order]") {
    const char* env = std::getenv("TRIPTYCH_SIM_ORDER");
    const bool set = env != nullptr && *env != '\0';
    CHECK(sim::thread_order().str() == (set ? env : "forward"));
}

TEST_CASE("a missing __syncthreads() gives wrong results in reverse and random order",
          "[sim][order][barrier]") {
    // Forward order runs thread t - 1 to its end before thread t: the race stays hidden, which is
    // why every suite also runs in the other orders.
    CHECK(wrong_left_neighbours("forward", false) == 0);
    CHECK(wrong_left_neighbours("reverse", false) > 0);
    CHECK(wrong_left_neighbours("random:12345", false) > 0);
    CHECK(wrong_left_neighbours("random:7", false) > 0);
}

TEST_CASE("the same kernel with its __syncthreads() is right in every order",
          "[sim][order][barrier]") {
    for (const char* order : {"forward", "reverse", "random:12345", "random:7"}) {
        INFO("order " << order);
        CHECK(wrong_left_neighbours(order, true) == 0);
    }
}

}  // namespace triptych::sim_tests
