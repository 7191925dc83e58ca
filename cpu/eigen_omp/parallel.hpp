// How cpu_eigen_omp shares work among its OpenMP threads, in three patterns:
//
//   for_each_slice       one contiguous slice of the items per thread (elementwise ops: items are
//                        elements; row-wise ops: items are rows). Eigen vectorises each slice.
//   for_each_batch       for_each_slice's slices walked in small batches (large independent items:
//                        a convolution's images or planes).
//                        for_each_batch_with gives each thread a state of its own, made once.
//   sum_in_fixed_chunks  a parallel sum whose bits do not depend on the number of threads: the
//                        items are cut into chunks whose size depends only on the problem, each
//                        chunk's partial sum lands in its own slot, and the slots are added in
//                        chunk order. Any thread may compute any chunk; the result is the same.
//                        add_in_chunk_order is that last step for partial sums that are whole
//                        arrays (a gradient summed over each chunk of images).
//
// The same images go to the same thread in every pass. for_each_slice and for_each_batch cut the
// items into the same contiguous runs in thread order, so in a training step thread t works on
// the same part of the batch in every layer, forward and backward (for 64 images and 2 threads:
// images 0-31 and 32-63), and what one layer writes, the next reads on the core that wrote it,
// from its own caches. Where two cores share no cache (two dies or two sockets, or a virtual
// machine whose host moves its two CPUs onto different dies, as ours does at times), a tensor that
// one thread writes and the other reads crosses between the caches, one line at a time: LeNet's
// training step took far longer so while the batches went to whichever thread was free
// (schedule(dynamic)) and the bias gradients were summed channel by channel. So a reduction over
// the batch sums each thread's images into partial sums, added in a fixed order
// (add_in_chunk_order, as bias_gradient in conv2d.cpp calls it), rather than giving each thread
// some channels of every image; and a weight gradient's GEMM is cut into rows, as the optimizer's
// update takes it (Panels in gemm.cpp).
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
#include "cpu/eigen_omp/eigen.hpp"

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

// Runs body(state, begin, count) over `items` items of `item_size` floats each: thread t takes
// the same contiguous run of items as for_each_slice gives it, the same in every call, and walks
// it in batches of about a quarter of an even share. Each thread that takes part first makes its
// own state with make() (its scratch, its FFT plans: whatever costs too much to set up per batch)
// and keeps it for every batch it takes. Each item must be computed the same whichever thread and
// batch take it.
template <typename Make, typename Body>
void for_each_batch_with(std::int64_t items, std::int64_t item_size, Make make, Body body) {
    for_each_slice(items, item_size, [&](std::int64_t first, std::int64_t count) {
        const std::int64_t batch = std::max<std::int64_t>(1, items / (4 * omp_get_num_threads()));
        auto state = make();
        for (std::int64_t begin = first; begin < first + count; begin += batch)
            body(state, begin, std::min(batch, first + count - begin));
    });
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

// total = the sum of `chunks` partial sums of `size` floats each, laid one after another from
// `partials`, added in chunk order: the bits do not depend on which thread computed which chunk.
// total may be partials itself (the first chunk's sum is then overwritten by the total).
inline void add_in_chunk_order(const float* partials, std::int64_t chunks, std::int64_t size,
                               float* total) {
    Eigen::Map<Array> sum(total, size);
    sum = Eigen::Map<const Array>(partials, size);
    for (std::int64_t chunk = 1; chunk < chunks; ++chunk)
        sum += Eigen::Map<const Array>(partials + chunk * size, size);
}

}  // namespace triptych::cpu_eigen_omp
