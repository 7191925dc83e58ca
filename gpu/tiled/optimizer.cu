// gpu_tiled optimizer step: SGD, Adam or RMSprop (common/optimizer_rule.hpp has the rules) on all
// the parameter tensors of a model at once, each updated in place from its gradient, with its
// state tensors kept on the device next to it.
//
// version 2: optimizer_step_kernel, ONE launch over every parameter tensor (a "multi-tensor
// apply", as PyTorch's torch._foreach_* optimizers and NVIDIA apex's multi_tensor_apply do).
// Version 1 (gpu/naive/optimizer.cu) launches one kernel per tensor.
//
// What it saves. An optimizer step is elementwise and tiny: LeNet has 10 parameter tensors, 61 706
// floats in all, four of them biases of 6 to 120 floats. Each launch costs a few microseconds
// (the CPU queueing it, the GPU starting the grid and draining it) however little it does, so
// version 1 spends most of its step starting kernels that each fill a fraction of the GPU, one
// after the other. Here every tensor is updated by the same grid: one launch instead of one per
// tensor, and the small tensors' blocks run beside the large ones' instead of after them.
// The math is unchanged: every element still runs optimizer_update once, as in cpu_naive.
//
// How a block finds its work. The host fills a TensorTable, passed to the kernel by value (kernel
// arguments travel with the launch, no copy to device memory needed): for each tensor its
// pointers, its size and its first block. Tensor t gets ceil(n_t / chunk) blocks, numbered on
// from the previous tensor's:
//
//   tensors   w0 (2500 floats)          w1 (6)   w2 (1200)
//   blocks    0     1     2             3        4     5        first_block = {0, 3, 4}
//
// Block b belongs to the last tensor whose first_block is <= b (a binary search over the table,
// tensor_of_block), and takes elements (b - first_block[t]) * chunk onwards of it, at most chunk.
// The table has room for max_tensors tensors (it must stay well under the 4 KB a kernel's
// arguments may take); a model with more is updated in several launches of max_tensors each.
//
// No float4 loads here, unlike the other elementwise kernels of gpu_tiled: a chunk is 1024
// consecutive floats read by consecutive threads, so every warp access is already one coalesced
// 128-byte line; float4 would save instructions, not bytes, and a tensor of 7 floats would need
// the scalar edge handling anyway.
#include "gpu/runtime/cuda.hpp"

#include <limits>
#include <span>
#include <type_traits>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "common/optimizer_rule.hpp"
#include "gpu/tiled/ops.hpp"

namespace triptych::gpu_tiled {
namespace {

constexpr int threads = 256;
constexpr int elements_per_thread = 4;
// The floats one block updates: 1024, so the 10-float bias of an output layer takes one block and
// a 784 x 256 weight matrix 196.
constexpr std::int64_t chunk = threads * elements_per_thread;
// Tensors per launch: 64 entries of 44 bytes keep the table under 3 KB.
constexpr int max_tensors = 64;

// The kernel's argument: up to max_tensors parameter tensors, entry t holding tensor t's size n,
// its pointers (state0 / state1 null where the rule has no such state) and the number of its
// first block. Plain arrays of plain values: trivially copyable, as a kernel argument must be.
struct TensorTable {
    int count;
    int first_block[max_tensors];
    std::int64_t n[max_tensors];
    float* value[max_tensors];
    const float* grad[max_tensors];
    float* state0[max_tensors];
    float* state1[max_tensors];

    // For the simulator's stream-order check (note_argument in gpu/runtime/sim/sim.hpp): the
    // kernel writes the values and the states, and only reads the gradients.
    template <typename Note>
    void accesses(Note note) const {
        for (int t = 0; t < count; ++t) {
            note(value[t], true);
            note(grad[t], false);
            note(state0[t], true);
            note(state1[t], true);
        }
    }
};
static_assert(std::is_trivially_copyable_v<TensorTable>);
static_assert(sizeof(TensorTable) + sizeof(OptimizerRule<float>) <= 3 * 1024,
              "kernel arguments must stay well under the 4 KB limit");

// The tensor block `block` works on: the last t with first_block[t] <= block (first_block is
// ascending). A binary search: 6 steps for a full table, all threads of the block in step.
__device__ int tensor_of_block(const TensorTable& table, int block) {
    int low = 0, high = table.count - 1;
    while (low < high) {
        const int middle = (low + high + 1) / 2;
        if (table.first_block[middle] <= block)
            low = middle;
        else
            high = middle - 1;
    }
    return low;
}

// One block per chunk of one tensor (see the top of this file); its 256 threads take the chunk's
// elements in turn, 4 each, consecutive threads on consecutive floats.
__global__ void optimizer_step_kernel(OptimizerRule<float> rule, TensorTable table) {
    const int t = tensor_of_block(table, int(blockIdx.x));
    const std::int64_t begin = std::int64_t(int(blockIdx.x) - table.first_block[t]) * chunk;
    const std::int64_t end = begin + chunk < table.n[t] ? begin + chunk : table.n[t];
    float* w = table.value[t];
    const float* g = table.grad[t];
    float* s0 = table.state0[t];
    float* s1 = table.state1[t];
    float unused = 0.0f;  // stands in for a state tensor the rule never touches
    const OptimizerRule<float> loaded = with_corrections(rule);
    for (std::int64_t i = begin + threadIdx.x; i < end; i += threads)
        optimizer_update(loaded, w[i], g[i], s0 != nullptr ? s0[i] : unused,
                         s1 != nullptr ? s1[i] : unused);
}

void launch_table(const OptimizerRule<float>& rule, const TensorTable& table, int blocks) {
    gpu::launch(optimizer_step_kernel, dim3(unsigned(blocks)), dim3(threads), 0, rule, table);
}

void optimizer_step(const OptimizerRule<float>& rule, std::span<const OptimizerSlot> tensors) {
    // gridDim.x's limit: a launch also ends before it, at 2^31 chunks of 1024 floats (8 TiB of
    // tensors, more than any GPU holds).
    constexpr std::int64_t max_blocks = std::numeric_limits<int>::max();
    TensorTable table{};
    std::int64_t blocks = 0;
    for (const OptimizerSlot& tensor : tensors) {
        const std::int64_t tensor_blocks = ceil_div(tensor.n, chunk);
        if (table.count == max_tensors ||
            (table.count > 0 && blocks + tensor_blocks > max_blocks)) {
            launch_table(rule, table, int(blocks));
            table = TensorTable{};
            blocks = 0;
        }
        const int t = table.count++;
        table.first_block[t] = int(blocks);
        table.n[t] = tensor.n;
        table.value[t] = tensor.value;
        table.grad[t] = tensor.grad;
        table.state0[t] = tensor.state0;
        table.state1[t] = tensor.state1;
        blocks += tensor_blocks;
    }
    if (table.count > 0) launch_table(rule, table, int(blocks));
}

}  // namespace

[[maybe_unused]] const bool registered = register_kernel(
    "gpu_tiled", ops::optimizer_step,
    {2, "multi_tensor", "every tensor in one launch (a multi-tensor apply)", optimizer_step});

}  // namespace triptych::gpu_tiled
