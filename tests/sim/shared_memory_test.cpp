// Shared memory and __syncthreads(): static and dynamic __shared__ memory, block reductions, one
// copy of shared memory per block even when blocks run in parallel, and many barriers in a loop.
#include <omp.h>

#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

// Small integers: every partial sum is exact in float, so any summation order gives the same sum.
std::vector<float> small_integers(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> value(-8, 8);
    std::vector<float> values(n);
    for (float& v : values) v = float(value(rng));
    return values;
}

std::vector<float> reference_block_sums(const std::vector<float>& values, int per_block) {
    std::vector<float> sums((values.size() + per_block - 1) / per_block, 0.0f);
    for (std::size_t i = 0; i < values.size(); ++i) sums[i / per_block] += values[i];
    return sums;
}

}  // namespace

TEST_CASE("a block's threads all see a value written to shared memory before __syncthreads()",
          "[sim][shared]") {
    const std::vector<float> block_values = {3.5f, -1.0f, 42.0f, 7.25f, 0.0f, 1e6f};
    for (int threads : {1, 31, 96}) {
        INFO(threads << " threads per block");
        const std::vector<float> out = broadcast_through_shared(block_values, threads);
        for (std::size_t i = 0; i < out.size(); ++i)
            if (out[i] != block_values[i / threads])
                FAIL_CHECK("thread " << i << " saw " << out[i]);
    }
}

TEST_CASE("a tree reduction in static __shared__ memory gives every block's sum", "[sim][shared]") {
    const std::vector<float> values = small_integers(10 * static_reduction_block + 77, 1);
    CHECK(block_sums_static_shared(values) == reference_block_sums(values, static_reduction_block));
}

TEST_CASE("a tree reduction in dynamic shared memory gives every block's sum for any block size",
          "[sim][shared]") {
    const std::vector<float> values = small_integers(5000, 2);
    for (int threads : {1, 31, 33, 100, 256, 1024}) {
        INFO(threads << " threads per block");
        CHECK(block_sums_dynamic_shared(values, threads) == reference_block_sums(values, threads));
    }
}

TEST_CASE("each block has its own shared memory, even when blocks run in parallel on 2 OS threads",
          "[sim][shared]") {
    const int saved_threads = omp_get_max_threads();
    omp_set_num_threads(2);
    const SharedOwnership result = check_shared_ownership(64, 100);
    omp_set_num_threads(saved_threads);

    CHECK(result.mismatches == 0);
    // In the simulator a block's __shared__ array lives in its OS thread's storage: two
    // addresses show that the blocks really were spread over two OS threads.
    const std::set<unsigned long long> addresses(result.shared_addresses.begin(),
                                                 result.shared_addresses.end());
    CHECK(addresses.size() >= 2);
}

TEST_CASE("__syncthreads() in a loop orders every round's shared writes before its reads",
          "[sim][shared][barrier]") {
    const int rounds = 64;  // 128 barriers
    for (int threads : {1, 31, 33, 256, 1024}) {
        INFO(threads << " threads per block");
        const std::vector<int> totals = rotating_exchange(2, threads, rounds);
        long long wrong = 0;
        for (std::size_t i = 0; i < totals.size(); ++i) {
            const int t = int(i % threads);
            int expected = 0;
            for (int round = 0; round < rounds; ++round)
                expected += ((t + round) % threads) * rounds + round;
            wrong += totals[i] != expected;
        }
        CHECK(wrong == 0);
    }
}

}  // namespace triptych::sim_tests
