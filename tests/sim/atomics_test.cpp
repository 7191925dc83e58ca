// Atomics from many blocks, which the simulator runs in parallel on several OS threads: integer
// and float atomicAdd, atomicMax, a float maximum built from atomicCAS, tickets and atomicExch.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <random>

#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

std::vector<int> random_ints(int n, int low, int high, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> value(low, high);
    std::vector<int> values(n);
    for (int& v : values) v = value(rng);
    return values;
}

std::vector<float> random_floats(int n, float low, float high, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> value(low, high);
    std::vector<float> values(n);
    for (float& v : values) v = value(rng);
    return values;
}

}  // namespace

TEST_CASE("atomicAdd on int from many blocks builds an exact histogram", "[sim][atomics]") {
    const int bins = 37;
    const std::vector<int> values = random_ints(200000, 0, bins - 1, 8);
    std::vector<int> expected(bins, 0);
    for (int v : values) ++expected[v];
    CHECK(histogram(values, bins) == expected);
}

TEST_CASE("atomicAdd on float from many blocks loses no update", "[sim][atomics]") {
    // Multiples of 1/8 below 4, 100000 of them: every partial sum is a multiple of 1/8 below
    // 2^19, exact in float's 24 bits, so any order of additions gives exactly the true sum.
    std::vector<float> values = random_floats(100000, 0.0f, 4.0f, 9);
    double sum = 0;
    for (float& v : values) {
        v = std::floor(v * 8.0f) / 8.0f;
        sum += v;
    }
    CHECK(atomic_float_sum(values) == float(sum));
}

TEST_CASE("atomicAdd on float of arbitrary values is within the rounding bound n*u*sum|x|",
          "[sim][atomics]") {
    // Adding n floats in any order errs by at most (n - 1) * u * sum |x| (u = 2^-24, the unit
    // roundoff); the float64 reference is exact enough to compare against.
    const std::vector<float> values = random_floats(50000, -1.0f, 1.0f, 10);
    double sum = 0, sum_abs = 0;
    for (float v : values) {
        sum += v;
        sum_abs += std::fabs(v);
    }
    const double bound = double(values.size() - 1) * (FLT_EPSILON / 2) * sum_abs;
    const float total = atomic_float_sum(values);
    INFO("atomic sum " << total << ", float64 sum " << sum << ", bound " << bound);
    CHECK(std::isfinite(total));
    CHECK(std::fabs(double(total) - sum) <= bound);
}

TEST_CASE("atomicMax on int from many blocks finds the maximum", "[sim][atomics]") {
    std::vector<int> values = random_ints(100000, -1000000, 1000000, 11);
    values[71234] = 1234567;
    CHECK(atomic_int_max(values) == 1234567);
}

TEST_CASE("a float atomic maximum written with an atomicCAS loop finds the maximum",
          "[sim][atomics]") {
    std::vector<float> values = random_floats(100000, -100.0f, -1.0f, 12);
    CHECK(atomic_float_max_by_cas(values) == *std::max_element(values.begin(), values.end()));
    values[4321] = 17.5f;
    CHECK(atomic_float_max_by_cas(values) == 17.5f);
}

TEST_CASE("atomicAdd returns the old value: tickets taken by many threads are all different",
          "[sim][atomics]") {
    const int threads = 50000;
    std::vector<int> owners = atomic_tickets(threads);
    std::sort(owners.begin(), owners.end());
    int wrong = 0;
    for (int i = 0; i < threads; ++i) wrong += owners[i] != i;  // every thread owns one ticket
    CHECK(wrong == 0);
}

TEST_CASE("atomicExch hands every value on exactly once", "[sim][atomics]") {
    const int threads = 50000;
    // Each thread got the value the previous exchanger left; with the final value these are the
    // initial -1 and every thread's id, each once.
    std::vector<int> chain = atomic_exchange_chain(threads);
    std::sort(chain.begin(), chain.end());
    int wrong = 0;
    for (int i = 0; i <= threads; ++i) wrong += chain[i] != i - 1;
    CHECK(wrong == 0);
}

}  // namespace triptych::sim_tests
