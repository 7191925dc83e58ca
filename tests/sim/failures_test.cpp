// Failures the simulator must report from launch(): an exception thrown by a CUDA thread (rethrown
// with its type and message), threads at different __syncthreads() lines and deadlocks between a
// barrier and a warp operation (CudaError naming the file:line of each side). After each one the
// simulator must still run kernels correctly.
#include <catch2/catch.hpp>

#include "common/errors.hpp"
#include "tests/sim/kernels.hpp"
#include "tests/sim/test_support.hpp"

namespace triptych::sim_tests {
namespace {

using Catch::Matchers::Contains;

// A kernel with 128 barriers gives the right answer: the simulator recovered from a failure.
void check_simulator_still_works() {
    const int threads = 64, rounds = 64;
    const std::vector<int> totals = rotating_exchange(3, threads, rounds);
    int wrong = 0;
    for (std::size_t i = 0; i < totals.size(); ++i) {
        const int t = int(i % threads);
        int expected = 0;
        for (int round = 0; round < rounds; ++round)
            expected += ((t + round) % threads) * rounds + round;
        wrong += totals[i] != expected;
    }
    CHECK(wrong == 0);
}

// The exported line must hold the barrier the test looks for, or the test would check nothing.
void check_exported_line(const char* file, int line, const std::string& barrier) {
    INFO(file << ":" << line);
    CHECK_THAT(source_line(file, line), Contains(barrier));
}

}  // namespace

TEST_CASE("an exception thrown by a CUDA thread is rethrown from launch() with its message",
          "[sim][failures]") {
    CHECK_THAT(message_of<InvalidArgument>([] { throw_from_thread(4, 300); }),
               Contains("thread 300 was told to throw"));
    check_simulator_still_works();
}

TEST_CASE("an exception thrown while the block's other threads wait at a barrier is rethrown",
          "[sim][failures]") {
    CHECK_THAT(message_of<InvalidArgument>([] { throw_between_barriers(4, 200); }),
               Contains("thread 200 was told to throw"));
    check_simulator_still_works();
    CHECK_THAT(message_of<InvalidArgument>([] { throw_between_barriers(2, 0); }),
               Contains("thread 0 was told to throw"));
    check_simulator_still_works();
}

TEST_CASE("exceptions thrown in many blocks at once come out of launch() as one of them",
          "[sim][failures]") {
    CHECK_THAT(message_of<InvalidArgument>([] { throw_from_every_block(16); }),
               Contains("thread 0 was told to throw"));
    check_simulator_still_works();
}

TEST_CASE(
    "a launch whose blocks fail reports its lowest-numbered failing block, even when another block "
    "fails first",
    "[sim][failures]") {
    // Block 1 throws 100 ms late. With two workers, one of them runs blocks 2 to 6 meanwhile, and
    // block 6's error came out of launch() while the failures went by time.
    CHECK_THAT(message_of<InvalidArgument>([] { throw_from_two_blocks(8, 1, 6); }),
               Contains("thread 128 was told to throw"));
    check_simulator_still_works();
}

TEST_CASE("threads at two different __syncthreads() lines are reported with both file:lines",
          "[sim][failures][barrier]") {
    check_exported_line(divergent_barrier_file, divergent_barrier_even_line, "__syncthreads()");
    check_exported_line(divergent_barrier_file, divergent_barrier_odd_line, "__syncthreads()");
    const std::string message = message_of<CudaError>([] { divergent_barrier(); });
    INFO(message);
    CHECK_THAT(message,
               Contains(file_and_line(divergent_barrier_file, divergent_barrier_even_line)));
    CHECK_THAT(message,
               Contains(file_and_line(divergent_barrier_file, divergent_barrier_odd_line)));
    check_simulator_still_works();
}

TEST_CASE("a deadlock between __syncthreads() and __syncwarp() is reported with both file:lines",
          "[sim][failures][barrier]") {
    check_exported_line(deadlock_file, deadlock_syncthreads_line, "__syncthreads()");
    check_exported_line(deadlock_file, deadlock_syncwarp_line, "__syncwarp()");
    const std::string message = message_of<CudaError>([] { barrier_against_syncwarp(); });
    INFO(message);
    CHECK_THAT(message, Contains(file_and_line(deadlock_file, deadlock_syncthreads_line)));
    CHECK_THAT(message, Contains(file_and_line(deadlock_file, deadlock_syncwarp_line)));
    check_simulator_still_works();
}

TEST_CASE("a deadlock between __syncthreads() and a shuffle is reported with both file:lines",
          "[sim][failures][barrier]") {
    check_exported_line(deadlock_file, deadlock_shuffle_syncthreads_line, "__syncthreads()");
    check_exported_line(deadlock_file, deadlock_shuffle_line, "__shfl_sync(");
    const std::string message = message_of<CudaError>([] { barrier_against_shuffle(); });
    INFO(message);
    CHECK_THAT(message, Contains(file_and_line(deadlock_file, deadlock_shuffle_syncthreads_line)));
    CHECK_THAT(message, Contains(file_and_line(deadlock_file, deadlock_shuffle_line)));
    check_simulator_still_works();
}

TEST_CASE("warp operations whose masks differ never meet: a deadlock naming both masks",
          "[sim][failures][warp]") {
    check_exported_line(deadlock_file, disagreeing_masks_first_line, "__syncwarp(0x3u)");
    check_exported_line(deadlock_file, disagreeing_masks_second_line, "__syncwarp()");
    const std::string message = message_of<CudaError>([] { syncwarp_masks_disagree(); });
    INFO(message);
    CHECK_THAT(message, Contains(file_and_line(deadlock_file, disagreeing_masks_first_line)));
    CHECK_THAT(message, Contains(file_and_line(deadlock_file, disagreeing_masks_second_line)));
    CHECK_THAT(message, Contains("mask 0x00000003 ") && Contains("mask 0xffffffff "));
    check_simulator_still_works();
}

TEST_CASE("a shuffle never meets a __syncwarp(): a deadlock naming both", "[sim][failures][warp]") {
    check_exported_line(deadlock_file, shuffle_against_syncwarp_first_line, "__shfl_sync(");
    check_exported_line(deadlock_file, shuffle_against_syncwarp_second_line, "__syncwarp()");
    const std::string message = message_of<CudaError>([] { shuffle_against_syncwarp(); });
    INFO(message);
    CHECK_THAT(message,
               Contains(file_and_line(deadlock_file, shuffle_against_syncwarp_first_line)));
    CHECK_THAT(message,
               Contains(file_and_line(deadlock_file, shuffle_against_syncwarp_second_line)));
    CHECK_THAT(message, Contains("waits at __shfl_sync()") && Contains("waits at __syncwarp()"));
    check_simulator_still_works();
}

TEST_CASE("threads that returned early do not hold up the others' __syncthreads()",
          "[sim][barrier]") {
    const int n = 40;
    const std::vector<int> out = early_exit_then_barrier(n);
    for (int t = 0; t < 64; ++t) {
        INFO("thread " << t);
        CHECK(out[t] == (t < n ? 3 * ((t + 1) % n) : -1));
    }
}

}  // namespace triptych::sim_tests
