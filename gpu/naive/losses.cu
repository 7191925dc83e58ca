// gpu_naive losses: the mean loss and its gradient (mse_loss returns the loss to the host;
// softmax_cross_entropy leaves it in device memory, so that a training step need not wait).
//   mse_loss:              loss = mean_i (p_i - t_i)^2 over n elements; grad_i = 2 (p_i - t_i) / n.
//   softmax_cross_entropy: logits is (rows, classes), labels is (rows) (class indices as floats);
//     loss = mean_i (logsumexp(logits[i]) - logits[i, label_i]),
//     grad = (softmax(logits) - one_hot(labels)) / rows.
//
// version 1 (gpu/tiled/losses.cu is version 2):
//   mse_kernel: one thread per element writes the gradient and the squared error, into a scratch
//     tensor that sum() then reduces.
//   softmax_cross_entropy_kernel: one thread per row, as gpu_naive softmax: max, sum of
//     exponentials, then the gradient, and the row's loss computed from the logits with
//     log-sum-exp, (m - x_label) + log(s), never as log(softmax), which would be log(0) = -inf for
//     a probability that underflows. sum() then reduces the per-row losses.
// Both losses reduce with Reduction::deterministic (reduce.cu): the same inputs give the same loss
// bits on every run.
//
// A label that is not an integer in [0, classes) is never used as an index: the row is recorded
// instead (atomicMin of the row number, so the smallest bad row wins whatever the thread order) in
// the result's first_bad_row; the Backend turns it into InvalidArgument when it reads the loss.
#include "gpu/runtime/cuda.hpp"

#include <cstdint>

#include "common/kernels.hpp"
#include "gpu/naive/elementwise.hpp"
#include "gpu/naive/ops.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/runtime/stream.hpp"

namespace triptych::gpu_naive {
namespace {

__global__ void mse_kernel(std::int64_t n, const float* prediction, const float* target,
                           float scale, float* grad, float* squared_error) {
    const std::int64_t i = element_index();
    if (i >= n) return;
    const float d = prediction[i] - target[i];
    grad[i] = scale * d;
    squared_error[i] = d * d;
}

// row_loss[row] = logsumexp(logits[row]) - logits[row, label], or 0 for a bad label, whose row is
// then recorded in *first_bad_row.
__global__ void softmax_cross_entropy_kernel(std::int64_t rows, std::int64_t classes,
                                             const float* logits, const float* labels,
                                             float row_count, float* grad, float* row_loss,
                                             unsigned long long* first_bad_row) {
    const std::int64_t row = element_index();
    if (row >= rows) return;
    const float* in = logits + row * classes;
    float max = in[0];
    for (std::int64_t j = 1; j < classes; ++j) max = fmaxf(max, in[j]);
    float sum = 0.0f;
    for (std::int64_t j = 0; j < classes; ++j) sum += expf(in[j] - max);

    // The rule of is_class_index (common/ops.hpp), which device code cannot call: an integer in
    // [0, classes). NaN fails every comparison, so it is caught too.
    const float label = labels[row];
    const bool valid = label >= 0.0f && label < float(classes) && label == floorf(label);
    const std::int64_t target = valid ? std::int64_t(label) : -1;
    for (std::int64_t j = 0; j < classes; ++j) {
        const float softmax = expf(in[j] - max) / sum;
        grad[row * classes + j] = (softmax - (j == target ? 1.0f : 0.0f)) / row_count;
    }
    if (valid) {
        row_loss[row] = (max - in[target]) + logf(sum);
    } else {
        row_loss[row] = 0.0f;
        atomicMin(first_bad_row, static_cast<unsigned long long>(row));
    }
}

float mse_loss(std::int64_t n, const float* prediction, const float* target, float* grad) {
    // The workspace: each element's squared error, then their sum's scratch, then the mean.
    float* squared_error = gpu::workspace(n + sum_scratch_floats(n) + 1);
    float* scratch = squared_error + n;
    float* mean = scratch + sum_scratch_floats(n);
    gpu::launch(mse_kernel, elementwise_grid(n), dim3(elementwise_threads), 0, n, prediction,
                target, 2.0f / float(n), grad, squared_error);
    sum_into(n, squared_error, float(n), mean, scratch);
    float result = 0.0f;
    gpu::copy_to_host(&result, mean, 1);
    return result;
}

// Launches only, on the current stream: nothing waits and nothing is allocated, so a graph can
// capture it.
void softmax_cross_entropy(std::int64_t rows, std::int64_t classes, const float* logits,
                           const float* labels, float* grad, CrossEntropyResult* result) {
    // The workspace holds the per-row losses, then the sum's scratch.
    float* row_loss = gpu::workspace(rows + sum_scratch_floats(rows));
    // All ones (no_bad_row) is above every row: "no bad label" until an atomicMin lowers it.
    auto* first_bad_row = reinterpret_cast<unsigned long long*>(&result->first_bad_row);
    gpu::fill_bytes_async(first_bad_row, 0xFF, sizeof *first_bad_row);
    gpu::launch(softmax_cross_entropy_kernel, elementwise_grid(rows), dim3(elementwise_threads), 0,
                rows, classes, logits, labels, float(rows), grad, row_loss, first_bad_row);
    sum_into(rows, row_loss, float(rows), &result->loss, row_loss + rows);
}

}  // namespace

[[maybe_unused]] const bool registered =
    register_kernel("gpu_naive", ops::mse_loss,
                    {1, "thread_per_element", "one thread per element, then sum()", mse_loss}) &&
    register_kernel("gpu_naive", ops::softmax_cross_entropy,
                    {1, "thread_per_row", "one thread per row, then sum() of the row losses",
                     softmax_cross_entropy});

}  // namespace triptych::gpu_naive
