// gpu_tiled losses: the mean loss (returned to the host) and its gradient.
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
// Both losses reduce with Reduction::deterministic (reduce.cu): the same inputs give the same loss
// bits on every run, so a training run can be replayed exactly.
//
// A label that is not an integer in [0, classes) is never used as an index: the row is recorded
// instead (atomicMin of the row number, so the smallest bad row wins whatever the thread order) and
// returned in first_bad_label; the Backend turns it into InvalidArgument.
#include "gpu/runtime/cuda.hpp"

#include <cstdint>
#include <limits>

#include "common/kernels.hpp"
#include "gpu/runtime/device.hpp"
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

float mse_loss(std::int64_t n, const float* prediction, const float* target, float* grad) {
    const dim3 grid = elementwise_grid(n);
    const std::shared_ptr<float> partials = gpu::device_allocate(grid.x);
    gpu::launch(mse_kernel, grid, dim3(elementwise_threads), 0, n,
                scalar_head(n, {prediction, target, grad}), prediction, target, 2.0f / float(n),
                grad, partials.get());
    return sum(grid.x, partials.get(), Reduction::deterministic) / float(n);
}

float softmax_cross_entropy(std::int64_t rows, std::int64_t classes, const float* logits,
                            const float* labels, float* grad, std::int64_t& first_bad_label) {
    // scratch: the first bad row as an unsigned 64-bit integer (8 bytes, 8-aligned at the start),
    // then the per-row losses. device_allocate fills every byte with 0xFF, so the integer starts
    // at 2^64 - 1, above every row: "no bad label" until an atomicMin lowers it.
    const std::shared_ptr<float> scratch = gpu::device_allocate(2 + rows);
    auto* first_bad_row = reinterpret_cast<unsigned long long*>(scratch.get());
    float* row_loss = scratch.get() + 2;

    launch_per_row(rows, classes, [&](auto group, dim3 grid, dim3 block) {
        gpu::launch(softmax_cross_entropy_kernel<decltype(group)>, grid, block, 0, rows, classes,
                    logits, labels, float(rows), grad, row_loss, first_bad_row);
    });

    unsigned long long bad_row = 0;
    gpu::copy_to_host(reinterpret_cast<float*>(&bad_row), scratch.get(), 2);
    first_bad_label = bad_row == std::numeric_limits<unsigned long long>::max()
                          ? -1
                          : static_cast<std::int64_t>(bad_row);
    return sum(rows, row_loss, Reduction::deterministic) / float(rows);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("gpu_tiled", ops::mse_loss,
                    {2, "fused_block_sums",
                     "the gradient and each block's squared-error sum in one pass", mse_loss}) &&
    register_kernel("gpu_tiled", ops::softmax_cross_entropy,
                    {2, "warp_or_block_per_row", "a warp or a block per row, online max and sum",
                     softmax_cross_entropy});

}  // namespace triptych::gpu_tiled
