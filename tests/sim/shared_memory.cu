// Test kernels for shared memory and __syncthreads(): a broadcast, block reductions in static and
// dynamic shared memory, blocks that must not see each other's shared memory, many barriers in a
// loop, and a kernel that forgets its barrier (see kernels.hpp for each one's contract).
#include "gpu/runtime/cuda.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

__global__ void broadcast_kernel(const float* block_values, float* out) {
    __shared__ float value;
    if (threadIdx.x == 0) value = block_values[blockIdx.x];
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = value;
}

// values is (n), block_sums is (gridDim.x); blocks of static_reduction_block threads.
__global__ void block_sum_static_kernel(const float* values, int n, float* block_sums) {
    __shared__ float partial[static_reduction_block];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * static_reduction_block + tid;
    partial[tid] = i < n ? values[i] : 0.0f;
    __syncthreads();
    for (int stride = static_reduction_block / 2; stride > 0; stride /= 2) {
        if (tid < stride) partial[tid] += partial[tid + stride];
        __syncthreads();
    }
    if (tid == 0) block_sums[blockIdx.x] = partial[0];
}

// The same for any blockDim.x: each step folds the upper ceil(active / 2) slots onto the lower.
__global__ void block_sum_dynamic_kernel(const float* values, int n, float* block_sums) {
    TRIPTYCH_DYNAMIC_SHARED(float, partial);
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    partial[tid] = i < n ? values[i] : 0.0f;
    __syncthreads();
    for (int active = blockDim.x; active > 1;) {
        const int half = (active + 1) / 2;
        if (tid + half < active) partial[tid] += partial[tid + half];
        __syncthreads();
        active = half;
    }
    if (tid == 0) block_sums[blockIdx.x] = partial[0];
}

constexpr int ownership_slots = 64;

__global__ void shared_ownership_kernel(int rounds, int* mismatches,
                                        unsigned long long* shared_addresses) {
    __shared__ int owner[ownership_slots];
    for (int round = 0; round < rounds; ++round) {
        const int mine = blockIdx.x * 1000 + round;
        if (threadIdx.x < ownership_slots) owner[threadIdx.x] = mine;
        __syncthreads();
        if (owner[threadIdx.x % ownership_slots] != mine) atomicAdd(mismatches, 1);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        shared_addresses[blockIdx.x] = reinterpret_cast<unsigned long long>(&owner[0]);
}

__global__ void rotating_exchange_kernel(int rounds, int* totals) {
    TRIPTYCH_DYNAMIC_SHARED(int, slot);
    const int tid = threadIdx.x;
    const int n = blockDim.x;
    int total = 0;
    for (int round = 0; round < rounds; ++round) {
        slot[tid] = tid * rounds + round;
        __syncthreads();
        total += slot[(tid + round) % n];
        __syncthreads();  // nobody overwrites a slot before its reader has read it
    }
    totals[blockIdx.x * n + tid] = total;
}

__global__ void left_neighbour_without_barrier_kernel(const float* in, float* out) {
    __shared__ float slot[left_neighbour_block];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * left_neighbour_block + tid;
    slot[tid] = in[i];
    out[i] = slot[tid > 0 ? tid - 1 : 0];  // a race: the neighbour may not have stored yet
}

}  // namespace

const int left_neighbour_barrier_line = __LINE__ + 9;  // the __syncthreads() below

namespace {

__global__ void left_neighbour_with_barrier_kernel(const float* in, float* out) {
    __shared__ float slot[left_neighbour_block];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * left_neighbour_block + tid;
    slot[tid] = in[i];
    __syncthreads();
    out[i] = slot[tid > 0 ? tid - 1 : 0];
}

int blocks_for(std::size_t n, int threads_per_block) {
    return int((n + threads_per_block - 1) / threads_per_block);
}

}  // namespace

std::vector<float> broadcast_through_shared(const std::vector<float>& block_values,
                                            int threads_per_block) {
    const int blocks = int(block_values.size());
    DeviceArray<float> values(block_values);
    DeviceArray<float> out(std::int64_t(blocks) * threads_per_block);
    gpu::launch(broadcast_kernel, dim3(blocks), dim3(threads_per_block), 0, values.get(),
                out.get());
    return out.to_host();
}

std::vector<float> block_sums_static_shared(const std::vector<float>& values) {
    const int blocks = blocks_for(values.size(), static_reduction_block);
    DeviceArray<float> in(values);
    DeviceArray<float> sums(blocks);
    gpu::launch(block_sum_static_kernel, dim3(blocks), dim3(static_reduction_block), 0, in.get(),
                int(values.size()), sums.get());
    return sums.to_host();
}

std::vector<float> block_sums_dynamic_shared(const std::vector<float>& values,
                                             int threads_per_block) {
    const int blocks = blocks_for(values.size(), threads_per_block);
    DeviceArray<float> in(values);
    DeviceArray<float> sums(blocks);
    gpu::launch(block_sum_dynamic_kernel, dim3(blocks), dim3(threads_per_block),
                sizeof(float) * threads_per_block, in.get(), int(values.size()), sums.get());
    return sums.to_host();
}

SharedOwnership check_shared_ownership(int blocks, int rounds) {
    DeviceArray<int> mismatches(std::vector<int>{0});
    DeviceArray<unsigned long long> addresses(blocks);
    gpu::launch(shared_ownership_kernel, dim3(blocks), dim3(128), 0, rounds, mismatches.get(),
                addresses.get());
    return {mismatches.to_host()[0], addresses.to_host()};
}

std::vector<int> rotating_exchange(int blocks, int threads_per_block, int rounds) {
    DeviceArray<int> totals(std::int64_t(blocks) * threads_per_block);
    gpu::launch(rotating_exchange_kernel, dim3(blocks), dim3(threads_per_block),
                sizeof(int) * threads_per_block, rounds, totals.get());
    return totals.to_host();
}

std::vector<float> left_neighbour(const std::vector<float>& in, bool with_barrier) {
    const int blocks = int(in.size() / left_neighbour_block);
    DeviceArray<float> device_in(in);
    DeviceArray<float> out(std::int64_t(in.size()));
    if (with_barrier)
        gpu::launch(left_neighbour_with_barrier_kernel, dim3(blocks), dim3(left_neighbour_block), 0,
                    device_in.get(), out.get());
    else
        gpu::launch(left_neighbour_without_barrier_kernel, dim3(blocks), dim3(left_neighbour_block),
                    0, device_in.get(), out.get());
    return out.to_host();
}

}  // namespace triptych::sim_tests
