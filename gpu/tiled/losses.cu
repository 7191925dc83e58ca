// gpu_tiled losses: the mean loss and its gradient (mse_loss returns the loss to the host;
// softmax_cross_entropy leaves it in device memory, so that a training step need not wait).
//   mse_loss:              loss = mean_i (p_i - t_i)^2 over n elements; grad_i = 2 (p_i - t_i) / n.
//   softmax_cross_entropy: logits is (rows, classes), labels is (rows) (class indices as floats);
//     loss = mean_i (logsumexp(logits[i]) - logits[i, label_i]),
//     grad = (softmax(logits) - one_hot(labels)) / rows.
//
// version 2 (version 1 is gpu/naive/losses.cu):
//   mse_kernel: one grid-stride float4 pass (elementwise.hpp) writes the gradient and adds the
//     squared errors in registers, then per block (block_sum); the per-block totals are summed by
//     sum() in deterministic mode.
//   softmax_cross_entropy_kernel<Group>: a warp or a block per row, as softmax.cu: one pass for the
//     row's max and sum of exponentials (MaxSum), one pass writing the gradient. The loss comes
//     from the logits, log-sum-exp minus the label's logit, (m - x_label) + log(s), never from
//     log(softmax), which would be log(0) = -inf for a probability that underflows.
// version 3, the default for softmax_cross_entropy (mse_loss loads each input once already):
//   softmax_cross_entropy_registers_kernel<Group>: as softmax.cu's version 3, each thread copies
//     its columns of the row into a local array of row_values_per_thread = 32 floats
//     (block_reduce.hpp) while it accumulates (max, sum), and computes the gradient from that
//     array instead of loading the logits again: each logit is loaded from global memory once
//     where version 2 loads it twice. The thread holding the label's column forms the loss from
//     that register, where version 2's lane 0 loads logits[i, label_i] a third time. A fixed size
//     and unrolled loops keep the array in registers, which bounds the row: up to 1024 classes for
//     a warp, 16 384 for a block of 512; more classes run version 2. The arithmetic and its order
//     are version 2's.
// Both losses reduce with Reduction::deterministic (reduce.cu): the same inputs give the same loss
// bits on every run, so a training run can be replayed exactly.
//
// A label that is not an integer in [0, classes) is never used as an index: the row is recorded
// instead (atomicMin of the row number, so the smallest bad row wins whatever the thread order) in
// the result's first_bad_row; the Backend turns it into InvalidArgument when it reads the loss.
#include "gpu/runtime/cuda.hpp"

#include <cstdint>

#include "common/kernels.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/runtime/stream.hpp"
#include "gpu/tiled/block_reduce.hpp"
#include "gpu/tiled/elementwise.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

// grad = scale * (p - t) with scale = 2 / n; partials[blockIdx.x] = the block's sum of (p - t)^2.
__global__ void mse_kernel(std::int64_t n, std::int64_t head, const float* prediction,
                           const float* target, float scale, float* grad, float* partials) {
    float partial = 0.0f;
    for_each_float4(
        n, head,
        [&](std::int64_t i) {
            const float d = prediction[i] - target[i];
            grad[i] = scale * d;
            partial += d * d;
        },
        [&](std::int64_t i) {
            const float4 p = load_float4(prediction + i);
            const float4 t = load_float4(target + i);
            const float4 d = make_float4(p.x - t.x, p.y - t.y, p.z - t.z, p.w - t.w);
            store_float4(grad + i, make_float4(scale * d.x, scale * d.y, scale * d.z, scale * d.w));
            partial += (d.x * d.x + d.y * d.y) + (d.z * d.z + d.w * d.w);
        });
    const float block_total = block_sum(partial);
    if (threadIdx.x == 0) partials[blockIdx.x] = block_total;
}

// row_loss[row] = logsumexp(logits[row]) - logits[row, label], or 0 for a bad label, whose row is
// then recorded in *first_bad_row.
template <typename Group>
__global__ void softmax_cross_entropy_kernel(std::int64_t rows, std::int64_t classes,
                                             const float* logits, const float* labels,
                                             float row_count, float* grad, float* row_loss,
                                             unsigned long long* first_bad_row) {
    for (std::int64_t row = Group::first_row(); row < rows; row += Group::row_stride()) {
        const float* in = logits + row * classes;
        MaxSum partial = MaxSum::empty();
        for (std::int64_t j = Group::lane(); j < classes; j += Group::size()) partial.add(in[j]);
        const MaxSum total = Group::max_sum(partial);

        // The rule of is_class_index (common/ops.hpp), which device code cannot call: an integer
        // in [0, classes). NaN fails every comparison, so it is caught too.
        const float label = labels[row];
        const bool valid = label >= 0.0f && label < float(classes) && label == floorf(label);
        const std::int64_t target = valid ? std::int64_t(label) : -1;

        const float inverse_sum = 1.0f / total.sum;  // s >= 1: the max contributes e^0
        for (std::int64_t j = Group::lane(); j < classes; j += Group::size()) {
            const float softmax = expf(in[j] - total.max) * inverse_sum;
            grad[row * classes + j] = (softmax - (j == target ? 1.0f : 0.0f)) / row_count;
        }
        if (Group::lane() != 0) continue;
        if (valid) {
            row_loss[row] = (total.max - in[target]) + logf(total.sum);
        } else {
            row_loss[row] = 0.0f;
            atomicMin(first_bad_row, static_cast<unsigned long long>(row));
        }
    }
}

// Version 3: values[k] holds column lane + k * threads of the row, as in softmax.cu's version 3.
// The loss is written by the thread whose slot holds the label, or, for a bad label, by lane 0.
template <typename Group>
__global__ void __launch_bounds__(row_block_threads)
    softmax_cross_entropy_registers_kernel(std::int64_t rows, std::int64_t classes,
                                           const float* logits, const float* labels,
                                           float row_count, float* grad, float* row_loss,
                                           unsigned long long* first_bad_row) {
    for (std::int64_t row = Group::first_row(); row < rows; row += Group::row_stride()) {
        const std::int64_t first = row * classes + Group::lane();  // this thread's first column
        const std::int64_t columns = classes - Group::lane();      // the row's columns from there
        float values[row_values_per_thread];
        const MaxSum total = load_row_max_sum<Group>(logits + first, columns, values);

        // Version 2's rule of is_class_index: an integer in [0, classes), NaN caught.
        const float label = labels[row];
        const bool valid = label >= 0.0f && label < float(classes) && label == floorf(label);
        const std::int64_t target = valid ? std::int64_t(label) : -1;
        // The label's column counted from this thread's first; a bad label (-1) matches no offset.
        const std::int64_t target_offset = target - Group::lane();

        const float inverse_sum = 1.0f / total.sum;  // s >= 1: the max contributes e^0
#pragma unroll
        for (int k = 0; k < row_values_per_thread; ++k) {
            const int offset = k * Group::threads;
            if (offset >= columns) continue;
            const bool is_target = offset == target_offset;
            const float softmax = expf(values[k] - total.max) * inverse_sum;
            grad[first + offset] = (softmax - (is_target ? 1.0f : 0.0f)) / row_count;
            if (is_target) row_loss[row] = (total.max - values[k]) + logf(total.sum);
        }
        if (!valid && Group::lane() == 0) {
            row_loss[row] = 0.0f;
            atomicMin(first_bad_row, static_cast<unsigned long long>(row));
        }
    }
}

float mse_loss(std::int64_t n, const float* prediction, const float* target, float* grad) {
    const dim3 grid = elementwise_grid(n);
    const std::int64_t blocks = grid.x;
    // The workspace: each block's sum of squares, then their sum's scratch, then the mean.
    float* partials = gpu::workspace(blocks + sum_scratch_floats(blocks) + 1);
    float* scratch = partials + blocks;
    float* mean = scratch + sum_scratch_floats(blocks);
    gpu::launch(mse_kernel, grid, dim3(elementwise_threads), 0, n,
                scalar_head(n, {prediction, target, grad}), prediction, target, 2.0f / float(n),
                grad, partials);
    sum_into(blocks, partials, float(n), mean, scratch);
    float result = 0.0f;
    gpu::copy_to_host(&result, mean, 1);
    return result;
}

// Both versions' host side: launches only, on the current stream (nothing waits and nothing is
// allocated, so a graph can capture it): the bad row reset, one launch over the rows, and the
// deterministic mean of the row losses. in_registers picks version 3's kernel, for rows that fit
// in registers.
void cross_entropy_rows(bool in_registers, std::int64_t rows, std::int64_t classes,
                        const float* logits, const float* labels, float* grad,
                        CrossEntropyResult* result) {
    // The workspace holds the per-row losses, then the sum's scratch.
    float* row_loss = gpu::workspace(rows + sum_scratch_floats(rows));
    // All ones (no_bad_row) is above every row: "no bad label" until an atomicMin lowers it.
    auto* first_bad_row = reinterpret_cast<unsigned long long*>(&result->first_bad_row);
    gpu::fill_bytes_async(first_bad_row, 0xFF, sizeof *first_bad_row);

    launch_per_row(rows, classes, [&](auto group, dim3 grid, dim3 block) {
        if (in_registers)
            gpu::launch(softmax_cross_entropy_registers_kernel<decltype(group)>, grid, block, 0,
                        rows, classes, logits, labels, float(rows), grad, row_loss, first_bad_row);
        else
            gpu::launch(softmax_cross_entropy_kernel<decltype(group)>, grid, block, 0, rows,
                        classes, logits, labels, float(rows), grad, row_loss, first_bad_row);
    });
    sum_into(rows, row_loss, float(rows), &result->loss, row_loss + rows);
}

void softmax_cross_entropy(std::int64_t rows, std::int64_t classes, const float* logits,
                           const float* labels, float* grad, CrossEntropyResult* result) {
    cross_entropy_rows(false, rows, classes, logits, labels, grad, result);
}

// Rows longer than register_row_max_cols do not fit in the group's registers: version 2.
void softmax_cross_entropy_registers(std::int64_t rows, std::int64_t classes, const float* logits,
                                     const float* labels, float* grad, CrossEntropyResult* result) {
    cross_entropy_rows(classes <= register_row_max_cols, rows, classes, logits, labels, grad,
                       result);
}

}  // namespace

[[maybe_unused]] const bool mse_registered =
    register_kernel("gpu_tiled", ops::mse_loss,
                    {2, "fused_block_sums",
                     "the gradient and each block's squared-error sum in one pass", mse_loss});
[[maybe_unused]] const bool cross_entropy_registered =
    register_kernels("gpu_tiled", ops::softmax_cross_entropy,
                     {{2, "warp_or_block_per_row", "a warp or a block per row, online max and sum",
                       softmax_cross_entropy},
                      {3, "row_in_registers",
                       "the logits read once into registers (up to 16 384 classes), the gradient "
                       "and the loss from them",
                       softmax_cross_entropy_registers}},
                     /*default_version=*/3);

}  // namespace triptych::gpu_tiled
