// The thread order knob: how it is parsed, where it comes from, and what it is for — a kernel that
// forgets a __syncthreads() gives wrong results in reverse and random order, while the same kernel
// with the barrier is right in every order. And the knob that removes a barrier without editing
// the kernel (TRIPTYCH_SIM_SKIP_SYNC): the kernel with its barrier removed that way behaves as the
// one written without it.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <random>
#include <string>

#include "common/errors.hpp"
#include "tests/sim/kernels.hpp"
#include "tests/sim/test_support.hpp"
#include "triptych_config.hpp"

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
int wrong_left_neighbours(const std::string& order, bool with_barrier = true) {
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

TEST_CASE("parse_barrier_sites reads FILE:LINE items separated by commas", "[sim][barrier]") {
    CHECK(sim::parse_barrier_sites("").empty());
    const std::vector<sim::BarrierSite> sites =
        sim::parse_barrier_sites("gemm.cu:96,gpu/tiled/gemm_v3_shared_tiles.cu:7");
    REQUIRE(sites.size() == 2);
    CHECK(sites[0].file == "gemm.cu");
    CHECK(sites[0].line == 96);
    CHECK(sites[1].str() == "gpu/tiled/gemm_v3_shared_tiles.cu:7");
    for (const char* junk :
         {"gemm.cu", ":96", "gemm.cu:", "gemm.cu:0", "gemm.cu:-3", "gemm.cu:9x", "gemm.cu:96,",
          ",gemm.cu:96", "gemm.cu:1234567890", "a.cu:1, gemm.cu:96", "gemm.cu: 96"}) {
        INFO("'" << junk << "'");
        CHECK_THROWS_AS(sim::parse_barrier_sites(junk), InvalidArgument);
    }
}

TEST_CASE("a __syncthreads() removed by its file:line acts as if deleted from the kernel",
          "[sim][barrier]") {
    const std::string file = "tests/sim/shared_memory.cu";
    REQUIRE_THAT(
        source_line(std::string(TRIPTYCH_SOURCE_DIR) + "/" + file, left_neighbour_barrier_line),
        Catch::Contains("__syncthreads()"));
    const std::string site = "shared_memory.cu:" + std::to_string(left_neighbour_barrier_line);
    {
        ScopedRemovedBarriers removed(site);
        CHECK(wrong_left_neighbours("forward") == 0);  // as without the barrier: hidden here
        CHECK(wrong_left_neighbours("reverse") > 0);
        CHECK(wrong_left_neighbours("random:7") > 0);
        // Every CUDA thread of the 4 blocks of each of the three launches passed it.
        CHECK(sim::removed_barrier_calls(site) == 3 * 4 * left_neighbour_block);
    }
    CHECK(wrong_left_neighbours("reverse") == 0);  // put back at the end of the scope
    // The whole path names it too; a path cut inside a name, or another line, names nothing.
    for (const std::string& same : {file, std::string("sim/shared_memory.cu")}) {
        ScopedRemovedBarriers removed(same + ":" + std::to_string(left_neighbour_barrier_line));
        CHECK(wrong_left_neighbours("reverse") > 0);
    }
    for (const std::string& other :
         {"ared_memory.cu:" + std::to_string(left_neighbour_barrier_line),
          "shared_memory.cu:" + std::to_string(left_neighbour_barrier_line + 1)}) {
        INFO(other);
        ScopedRemovedBarriers removed(other);
        CHECK(wrong_left_neighbours("reverse") == 0);
        CHECK(sim::removed_barrier_calls(other) == 0);
    }
}

}  // namespace triptych::sim_tests
