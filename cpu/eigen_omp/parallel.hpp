// How cpu_eigen_omp shares work among its OpenMP threads, in three patterns:
//
//   for_each_slice       one contiguous slice of the items per thread (elementwise ops: items are
//                        elements; row-wise ops: items are rows). Eigen vectorises each slice.
//   for_each_batch       the items in small batches, handed to whichever thread is free next
//                        (large independent items: a convolution's images or planes). A thread
//                        slowed by other work on its core then takes fewer batches instead of
//                        holding everyone up, as a fixed half of the work would.
//                        for_each_batch_with gives each thread a state of its own, made once.
//   sum_in_fixed_chunks  a parallel sum whose bits do not depend on the number of threads: the
//                        items are cut into chunks whose size depends only on the problem, each
//                        chunk's partial sum lands in its own slot, and the slots are added in
//                        chunk order. Any thread may compute any chunk; the result is the same.
//
// Both run on the calling thread alone when the work is small (waking the team costs a few
// microseconds, more than a small op) or when they are called from inside a parallel region
// (dense_forward's epilogue runs bias_add and the activations on each thread's own block).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/math.hpp"

namespace triptych::cpu_eigen_omp {

// Below this many floats touched, one thread is faster than waking the others.
constexpr std::int64_t parallel_threshold = 1 << 16;

// The floats summed into one partial sum of sum_in_fixed_chunks: 16 KiB, well inside L1.
constexpr std::int64_t reduction_chunk = 1 << 12;

inline bool worth_threads(std::int64_t floats_touched) {
    return floats_touched >= parallel_threshold && !omp_in_parallel();
}

// Runs body(begin, count) over `items` items of `item_size` floats each, split into one
// contiguous slice of items per OpenMP thread.
template <typename Body>
void for_each_slice(std::int64_t items, std::int64_t item_size, Body body) {
#pragma omp parallel if (worth_threads(items * item_size))
    {
        const std::int64_t threads = omp_get_num_threads();
        const std::int64_t t = omp_get_thread_num();
        const std::int64_t begin = items * t / threads;
        const std::int64_t end = items * (t + 1) / threads;
        if (end > begin) body(begin, end - begin);
    }
}

// Runs body(state, begin, count) over `items` items of `item_size` floats each, in batches of
// about a quarter of an even share per thread, taken by the threads as they become free
// (schedule(dynamic)). Each thread that takes part first makes its own state with make() (its
// scratch, its FFT plans: whatever costs too much to set up per batch) and keeps it for every
// batch it takes. Each item must be computed the same whichever thread takes it.
template <typename Make, typename Body>
void for_each_batch_with(std::int64_t items, std::int64_t item_size, Make make, Body body) {
#pragma omp parallel if (worth_threads(items * item_size))
    {
        auto state = make();
        const std::int64_t batch =
            std::max<std::int64_t>(1, items / (4 * std::int64_t{omp_get_num_threads()}));
#pragma omp for schedule(dynamic)
        for (std::int64_t begin = 0; begin < items; begin += batch)
            body(state, begin, std::min(batch, items - begin));
    }
}

// for_each_batch_with without a state: body(begin, count); body may set up per-call scratch,
// reused across its batch.
template <typename Body>
void for_each_batch(std::int64_t items, std::int64_t item_size, Body body) {
    for_each_batch_with(
        items, item_size, [] { return 0; },
        [&](int, std::int64_t begin, std::int64_t count) { body(begin, count); });
}

// Returns the sum over chunks of partial_sum(begin, count), a double, for `items` items of
// `item_size` floats each. A chunk holds max(1, reduction_chunk / item_size) items: fixed by the
// problem, never by the thread count, so the result has the same bits on every run.
template <typename PartialSum>
double sum_in_fixed_chunks(std::int64_t items, std::int64_t item_size, PartialSum partial_sum) {
    const std::int64_t chunk = std::max<std::int64_t>(1, reduction_chunk / item_size);
    const std::int64_t chunks = ceil_div(items, chunk);
    std::vector<double> partials(static_cast<std::size_t>(chunks));
#pragma omp parallel for schedule(static) if (worth_threads(items * item_size))
    for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t begin = c * chunk;
        partials[static_cast<std::size_t>(c)] = partial_sum(begin, std::min(chunk, items - begin));
    }
    double total = 0.0;
    for (double partial : partials) total += partial;  // chunk order, whoever computed them
    return total;
}

}  // namespace triptych::cpu_eigen_omp
