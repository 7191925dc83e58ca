// How cpu_eigen_omp shares its work among threads (cpu/eigen_omp/parallel.hpp): each pass gives
// thread t the same contiguous part of the items, so a training step's layers read what the same
// thread wrote; and the convolution's bias gradient, which sums over the batch that way, and
// Winograd's weight gradient, which sums over fixed chunks of tiles, have the same bits for any
// number of threads.
#include <omp.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "cpu/eigen_omp/parallel.hpp"
#include "tests/seed.hpp"

using namespace triptych;
using namespace triptych::cpu_eigen_omp;

namespace {

// Runs `body` with `threads` OpenMP threads, then puts the old count back.
template <typename Body>
void with_threads(int threads, Body body) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    body();
    omp_set_num_threads(saved);
}

// The thread that for_each_slice (or for_each_batch) gives each of `items` items, -1 for none.
std::vector<int> owners(bool batches, std::int64_t items) {
    std::vector<int> owner(static_cast<std::size_t>(items), -1);
    const auto mark = [&](std::int64_t begin, std::int64_t count) {
        for (std::int64_t i = begin; i < begin + count; ++i)
            owner[static_cast<std::size_t>(i)] = omp_get_thread_num();
    };
    const std::int64_t big = parallel_threshold;  // every item alone is worth the threads
    if (batches) {
        for_each_batch(items, big, mark);
    } else {
        for_each_slice(items, big, mark);
    }
    return owner;
}

// Which gradient of conv2d_backward_weights a test reads.
enum class Gradient { weights, bias };

// The bits of one gradient that cpu_eigen_omp's conv2d_backward_weights computes from random x and
// dy (from `seed`), once for each of 1, 2, 3, 4 and 7 OpenMP threads.
std::vector<std::vector<std::uint32_t>> bits_per_thread_count(const Conv2dShape& s,
                                                              ConvAlgorithm algorithm,
                                                              Gradient gradient,
                                                              std::uint64_t seed) {
    const Backend& b = backend("cpu_eigen_omp");
    Rng rng(seed);
    std::vector<float> x(s.N * s.C * s.H * s.W), dy(s.N * s.K * s.P() * s.Q());
    rng.uniform(x, -1, 1);
    rng.uniform(dy, -1, 1);
    const Tensor X = b.upload(s.x_shape(), x);
    const Tensor dY = b.upload(s.y_shape(), dy);
    Tensor dW = b.allocate(s.w_shape()), db = b.allocate(Shape{s.K});
    std::vector<std::vector<std::uint32_t>> bits;
    for (int threads : {1, 2, 3, 4, 7}) {
        with_threads(threads, [&] {
            b.conv2d_backward_weights(s, algorithm, X, dY, dW, db);
            std::vector<std::uint32_t> these;
            for (float v : b.download(gradient == Gradient::weights ? dW : db))
                these.push_back(std::bit_cast<std::uint32_t>(v));
            bits.push_back(these);
        });
    }
    return bits;
}

}  // namespace

TEST_CASE(
    "cpu_eigen_omp's slices and batches give thread t the same contiguous run of the items, "
    "items * t / threads up to items * (t + 1) / threads, in every call",
    "[parallel]") {
    for (int threads : {2, 3, 4, 16}) {
        with_threads(threads, [&] {
            for (std::int64_t items : {64, 65, 7, 1000}) {
                INFO(threads << " threads, " << items << " items");
                std::vector<int> expected(static_cast<std::size_t>(items));
                for (int t = 0; t < threads; ++t)
                    for (std::int64_t i = items * t / threads; i < items * (t + 1) / threads; ++i)
                        expected[static_cast<std::size_t>(i)] = t;
                // Handed out as threads became free (schedule(dynamic)), the batches went to
                // whichever thread asked first, and a layer read what the other thread wrote.
                for (int call = 0; call < 3; ++call) {
                    CHECK(owners(false, items) == expected);
                    CHECK(owners(true, items) == expected);
                }
            }
        });
    }
}

TEST_CASE("cpu_eigen_omp's convolution bias gradient gives the same bits for any number of threads",
          "[parallel][conv2d]") {
    // LeNet's conv1 with a batch that is not a multiple of the 8 images of a chunk.
    const Conv2dShape s{61, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2};  // N C H W, K R S, strides, pads
    const auto bits =
        bits_per_thread_count(s, ConvAlgorithm::direct, Gradient::bias, testing::seed());
    for (std::size_t i = 1; i < bits.size(); ++i) CHECK(bits[i] == bits.front());
}

TEST_CASE(
    "cpu_eigen_omp's Winograd weight gradient gives the same bits for any number of threads, and "
    "is the gradient",
    "[parallel][conv2d]") {
    const std::uint64_t seed = testing::seed();
    // 3x3 at stride 1: 16 x 16 tiles per image, in blocks of 512 tiles (the most, with 8 channels
    // in and 19 out), so 8 chunks of one block each; the 19 output channels are gathered in a
    // group of 16 and one of 3.
    const Conv2dShape s{16, 8, 32, 32, 19, 3, 3, 1, 1, 1, 1};
    const auto bits = bits_per_thread_count(s, ConvAlgorithm::winograd, Gradient::weights, seed);
    for (std::size_t i = 1; i < bits.size(); ++i) CHECK(bits[i] == bits.front());
    // The same bits every time could be the same wrong bits: the cross-check against float64.
    CHECK(check::check_conv2d_backward_weights(backend("cpu_eigen_omp"), s, ConvAlgorithm::winograd,
                                               seed)[0]
              .comparison.passed);
}
