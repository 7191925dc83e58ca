// Warp operations: the four shuffles (widths below 32 included) for int, float and double, a
// shuffle among a subset of lanes, the votes, __syncwarp(), warp-shuffle reductions, and a partial
// last warp with the mask of its existing lanes.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>

#include "tests/sim/kernels.hpp"
#include "tests/sim/test_support.hpp"

namespace triptych::sim_tests {
namespace {

constexpr int threads = 4 * warp_test_block;  // four blocks of two warps

// The lane (0..31) whose value lane `lane` receives, as the CUDA Programming Guide defines each
// shuffle: lanes form groups of `width`; a source outside the caller's group gives its own value,
// except that __shfl_xor_sync may read from an earlier group.
int source_lane(Shuffle kind, int lane, int parameter, int width) {
    const int group_start = lane / width * width;
    const int in_group = lane % width;
    switch (kind) {
        case Shuffle::broadcast:
            return group_start + parameter % width;
        case Shuffle::rotate:
            return group_start + (lane + parameter) % width;
        case Shuffle::up:
            return in_group >= parameter ? lane - parameter : lane;
        case Shuffle::down:
            return in_group + parameter < width ? lane + parameter : lane;
        case Shuffle::xor_lanes: {
            const int source = lane ^ parameter;
            return source / width <= lane / width ? source : lane;
        }
    }
    return lane;
}

const char* name(Shuffle kind) {
    switch (kind) {
        case Shuffle::broadcast:
            return "__shfl_sync (one source lane)";
        case Shuffle::rotate:
            return "__shfl_sync (source lane + parameter)";
        case Shuffle::up:
            return "__shfl_up_sync";
        case Shuffle::down:
            return "__shfl_down_sync";
        case Shuffle::xor_lanes:
            return "__shfl_xor_sync";
    }
    return "?";
}

// Compares bit patterns: a shuffle moves a value, it computes nothing.
template <typename T>
bool same_bits(T a, T b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Every kind of shuffle with every width from 32 down to 4 and parameters from 0 to 31, one
// case per block, all in one launch.
std::vector<ShuffleCase> all_shuffle_cases() {
    std::vector<ShuffleCase> cases;
    for (Shuffle kind :
         {Shuffle::broadcast, Shuffle::rotate, Shuffle::up, Shuffle::down, Shuffle::xor_lanes})
        for (int width : {32, 16, 8, 4})
            for (int parameter : {0, 1, 3, 5, 16, 31}) cases.push_back({kind, parameter, width});
    return cases;
}

template <typename T>
void check_all_shuffles(std::vector<T> (*make_values)(std::size_t count)) {
    const std::vector<ShuffleCase> cases = all_shuffle_cases();
    const std::vector<T> in = make_values(cases.size() * warp_test_block);
    const std::vector<T> out = shuffle(cases, in);
    for (std::size_t b = 0; b < cases.size(); ++b) {
        const ShuffleCase& c = cases[b];
        int wrong = 0;
        for (std::size_t i = b * warp_test_block; i < (b + 1) * warp_test_block; ++i) {
            const int lane = int(i % 32);
            const T expected = in[i - lane + source_lane(c.kind, lane, c.parameter, c.width)];
            wrong += !same_bits(out[i], expected);
        }
        INFO(name(c.kind) << ", parameter " << c.parameter << ", width " << c.width);
        CHECK(wrong == 0);
    }
}

std::vector<int> random_ints(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> value(-1000000, 1000000);
    std::vector<int> values(count);
    for (int& v : values) v = value(rng);
    return values;
}

std::vector<int> shuffle_ints(std::size_t count) { return random_ints(count, 3); }

std::vector<float> shuffle_floats(std::size_t count) {
    std::vector<float> values(count);
    for (std::size_t i = 0; i < count; ++i) values[i] = 0.37f * float(i) - 41.0f;
    return values;
}

// Values whose low 4 bytes differ too, so a shuffle that moved only 4 bytes would show.
std::vector<double> shuffle_doubles(std::size_t count) {
    std::vector<double> values(count);
    for (std::size_t i = 0; i < count; ++i) values[i] = double(i) + 1.0 / 3.0;
    return values;
}

}  // namespace

TEST_CASE("shuffles move int values between the lanes CUDA specifies, for widths 32 down to 4",
          "[sim][warp]") {
    check_all_shuffles(shuffle_ints);
}

TEST_CASE("shuffles move float values bit for bit", "[sim][warp]") {
    check_all_shuffles(shuffle_floats);
}

TEST_CASE("shuffles move all 8 bytes of a double", "[sim][warp]") {
    check_all_shuffles(shuffle_doubles);
}

TEST_CASE("a shuffle among the lanes of a mask leaves the other lanes out", "[sim][warp]") {
    const std::vector<int> in = random_ints(threads, 4);
    const std::vector<int> out = shuffle_even_lanes_only(in);
    for (int i = 0; i < threads; ++i) {
        const int expected = i % 2 == 0 ? in[i ^ 2] : in[i];
        if (out[i] != expected)
            FAIL_CHECK("thread " << i << ": " << out[i] << ", expected " << expected);
    }
}

TEST_CASE("__ballot_sync, __any_sync and __all_sync vote within each warp", "[sim][warp]") {
    const int blocks = 3;
    const std::vector<Votes> votes = vote(blocks);
    for (int i = 0; i < blocks * 64; ++i) {
        const int warp = i / 32;
        unsigned expected_ballot = 0;
        for (int lane = 0; lane < 32; ++lane)
            if (lane % 3 == warp % 3) expected_ballot |= 1u << lane;
        INFO("thread " << i);
        CHECK(votes[i].ballot == expected_ballot);
        CHECK(votes[i].any_lane_17 != 0);
        CHECK(votes[i].any_false == 0);
        CHECK(votes[i].all_true != 0);
        CHECK(votes[i].all_but_lane_5 == 0);
    }
}

TEST_CASE("lanes see each other's shared memory writes after __syncwarp(), in every order",
          "[sim][warp][order]") {
    const std::vector<int> in = random_ints(threads, 5);
    auto wrong_results = [&](bool with_syncwarp) {
        const std::vector<int> out = warp_neighbour(in, with_syncwarp);
        int wrong = 0;
        for (int i = 0; i < threads; ++i) wrong += out[i] != in[i - i % 32 + (i % 32 + 1) % 32];
        return wrong;
    };
    for (const char* order : {"forward", "reverse", "random:12345", "random:99"}) {
        ScopedThreadOrder scoped(order);
        INFO("order " << order);
        CHECK(wrong_results(true) == 0);
    }
    // Without __syncwarp() each lane reads lane + 1 before lane + 1 has run in forward order.
    ScopedThreadOrder forward("forward");
    CHECK(wrong_results(false) > 0);
}

// Since Volta a *_sync function meets the lanes of its mask at any call of the same operation
// with the same mask, not only at the same line (PTX ISA, bar.warp.sync and shfl.sync).
TEST_CASE("__syncwarp() called on two lines of an if still meets, in every order",
          "[sim][warp][order]") {
    const std::vector<int> in = random_ints(threads, 6);
    for (const char* order : {"forward", "reverse", "random:12345", "random:99"}) {
        ScopedThreadOrder scoped(order);
        INFO("order " << order);
        const std::vector<int> out = syncwarp_in_both_branches(in);
        int wrong = 0;
        for (int i = 0; i < threads; ++i) wrong += out[i] != in[i - i % 32 + (i % 32 + 1) % 32];
        CHECK(wrong == 0);
    }
}

TEST_CASE("__shfl_sync() called on two lines of an if exchanges the lanes' values", "[sim][warp]") {
    const std::vector<int> in = random_ints(threads, 7);
    const std::vector<int> out = shuffle_in_both_branches(in);
    for (int i = 0; i < threads; ++i) {
        const int lane = i % 32;
        INFO("thread " << i);
        CHECK(out[i] == in[lane % 2 == 0 ? i + 1 : i - lane]);
    }
}

TEST_CASE("lanes meet at one __syncwarp() line however often each has called it before",
          "[sim][warp]") {
    const std::vector<int> in = random_ints(2, 8);
    const std::vector<int> out = syncwarp_after_a_solo_one(in);
    CHECK(out == std::vector<int>{in[1], in[0]});
}

TEST_CASE("lanes at different iterations of one shuffle line meet when their masks agree",
          "[sim][warp]") {
    const std::vector<int> in = random_ints(32, 9);
    const std::vector<int> out = shuffle_across_iterations(in);
    for (int lane = 0; lane < 32; ++lane) {
        const int pair = in[lane] + in[lane ^ 1];  // each side's value after one pass
        INFO("lane " << lane);
        CHECK(out[lane] == (lane < 16 ? 2 * pair : pair));
    }
}

TEST_CASE("a warp-shuffle reduction gives every block's sum", "[sim][warp]") {
    std::mt19937 rng(6);
    std::uniform_int_distribution<int> value(-8, 8);
    std::vector<float> values(7 * 256 + 100);
    for (float& v : values) v = float(value(rng));  // exact sums in any order
    std::vector<float> expected((values.size() + 255) / 256, 0.0f);
    for (std::size_t i = 0; i < values.size(); ++i) expected[i / 256] += values[i];
    CHECK(block_sums_by_warp_shuffles(values) == expected);
}

TEST_CASE("a __shfl_xor_sync butterfly gives every lane its warp's sum", "[sim][warp]") {
    std::vector<double> values(threads);
    for (int i = 0; i < threads; ++i) values[i] = double((i * 7919) % 1000) - 500.0;
    const std::vector<double> out = warp_all_reduce(values);
    for (int warp = 0; warp < threads / 32; ++warp) {
        double sum = 0;
        for (int lane = 0; lane < 32; ++lane) sum += values[warp * 32 + lane];
        for (int lane = 0; lane < 32; ++lane) {
            INFO("warp " << warp << ", lane " << lane);
            CHECK(out[warp * 32 + lane] == sum);
        }
    }
}

TEST_CASE("a partial last warp (a 40-thread block) shuffles and votes with the mask of its lanes",
          "[sim][warp]") {
    const int blocks = 3;
    const std::vector<int> in = random_ints(blocks * partial_warp_block, 7);
    const std::vector<PartialWarp> out = partial_warp_votes_and_sum(in);
    REQUIRE(out.size() == std::size_t(blocks * 2));
    for (int block = 0; block < blocks; ++block)
        for (int warp = 0; warp < 2; ++warp) {
            const int first = block * partial_warp_block + warp * 32;
            const int lanes = warp == 0 ? 32 : partial_warp_block - 32;
            int sum = 0;
            unsigned odd = 0;
            for (int lane = 0; lane < lanes; ++lane) {
                sum += in[first + lane];
                if (in[first + lane] % 2 != 0) odd |= 1u << lane;
            }
            const PartialWarp& result = out[block * 2 + warp];
            INFO("block " << block << ", warp " << warp << " (" << lanes << " lanes)");
            CHECK(result.sum == sum);
            CHECK(result.odd_ballot == odd);
            CHECK(result.all_true != 0);
            CHECK(result.any_last_lane != 0);
        }
}

}  // namespace triptych::sim_tests
