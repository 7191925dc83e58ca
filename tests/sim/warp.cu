// Test kernels for warp operations: the four shuffles (with widths below 32 and for int, float
// and double), a shuffle by a subset of lanes, the votes, __syncwarp(), warp-shuffle reductions and
// a partial last warp (see kernels.hpp for each one's contract).
#include "gpu/runtime/cuda.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

constexpr unsigned full_mask = 0xffffffffu;

template <typename T>
__global__ void shuffle_kernel(const ShuffleCase* cases, const T* in, T* out) {
    const ShuffleCase c = cases[blockIdx.x];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    const T value = in[i];
    T result = value;
    switch (c.kind) {
        case Shuffle::broadcast:
            result = __shfl_sync(full_mask, value, c.parameter, c.width);
            break;
        case Shuffle::rotate:
            result = __shfl_sync(full_mask, value, lane + c.parameter, c.width);
            break;
        case Shuffle::up:
            result = __shfl_up_sync(full_mask, value, c.parameter, c.width);
            break;
        case Shuffle::down:
            result = __shfl_down_sync(full_mask, value, c.parameter, c.width);
            break;
        case Shuffle::xor_lanes:
            result = __shfl_xor_sync(full_mask, value, c.parameter, c.width);
            break;
    }
    out[i] = result;
}

__global__ void shuffle_even_lanes_kernel(const int* in, int* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int value = in[i];
    if (threadIdx.x % 2 == 0) value = __shfl_xor_sync(0x55555555u, value, 2);
    out[i] = value;
}

__global__ void vote_kernel(Votes* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    const int warp = i / warpSize;
    Votes votes;
    votes.ballot = __ballot_sync(full_mask, lane % 3 == warp % 3);
    votes.any_lane_17 = __any_sync(full_mask, lane == 17);
    votes.any_false = __any_sync(full_mask, 0);
    votes.all_true = __all_sync(full_mask, lane < warpSize);
    votes.all_but_lane_5 = __all_sync(full_mask, lane != 5);
    out[i] = votes;
}

__global__ void warp_neighbour_without_syncwarp_kernel(const int* in, int* out) {
    __shared__ int slot[warp_test_block];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    const int warp_start = threadIdx.x - lane;
    slot[threadIdx.x] = in[i];
    out[i] = slot[warp_start + (lane + 1) % warpSize];  // a race: lane + 1 may not have stored
}

__global__ void warp_neighbour_with_syncwarp_kernel(const int* in, int* out) {
    __shared__ int slot[warp_test_block];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    const int warp_start = threadIdx.x - lane;
    slot[threadIdx.x] = in[i];
    __syncwarp();
    out[i] = slot[warp_start + (lane + 1) % warpSize];
}

// Even lanes call __syncwarp() on one line, odd lanes on another: since Volta the two calls meet.
__global__ void syncwarp_in_both_branches_kernel(const int* in, int* out) {
    __shared__ int slot[warp_test_block];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    const int warp_start = threadIdx.x - lane;
    slot[threadIdx.x] = in[i];
    if (lane % 2 == 0) {
        __syncwarp();
    } else {
        __syncwarp();
    }
    out[i] = slot[warp_start + (lane + 1) % warpSize];
}

// Even lanes read lane + 1 and odd lanes lane 0, each through its own __shfl_sync() line.
__global__ void shuffle_in_both_branches_kernel(const int* in, int* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    if (lane % 2 == 0) {
        out[i] = __shfl_sync(full_mask, in[i], lane + 1);
    } else {
        out[i] = __shfl_sync(full_mask, in[i], 0);
    }
}

// Lane 1 passes a __syncwarp() of its own, then meets lane 0 at the same line: there lane 0
// calls it for the first time and lane 1 for the second.
__global__ void syncwarp_after_a_solo_one_kernel(const int* in, int* out) {
    __shared__ int slot[2];
    const int lane = threadIdx.x;
    if (lane >= 2) return;
    slot[lane] = in[lane];
    const int calls = lane == 1 ? 2 : 1;
    for (int call = 0; call < calls; ++call) __syncwarp(call + 1 < calls ? 0b10u : 0b11u);
    out[lane] = slot[1 - lane];
}

// Lanes 0..15 pass the shuffle once among themselves (mask 0x0000ffff), then reach it again with
// the full mask, where lanes 16..31 are at their first pass: they meet, as on a GPU since Volta.
__global__ void shuffle_across_iterations_kernel(const int* in, int* out) {
    const int lane = threadIdx.x;
    int v = in[lane];
    const int rounds = lane < 16 ? 2 : 1;
    for (int i = 0; i < rounds; ++i) {
        const unsigned mask = i == 0 && lane < 16 ? 0x0000ffffu : 0xffffffffu;
        v += __shfl_xor_sync(mask, v, 1);
    }
    out[lane] = v;
}

// After the loop lane 0 holds the sum of the warp's 32 values.
template <typename T>
__device__ T warp_sum(T value) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        value += __shfl_down_sync(full_mask, value, offset);
    return value;
}

constexpr int warp_reduction_block = 256;

__global__ void block_sum_by_warps_kernel(const float* values, int n, float* block_sums) {
    __shared__ float warp_sums[warp_reduction_block / 32];
    const int i = blockIdx.x * warp_reduction_block + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const float sum = warp_sum(i < n ? values[i] : 0.0f);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        const float total = warp_sum(lane < warp_reduction_block / 32 ? warp_sums[lane] : 0.0f);
        if (lane == 0) block_sums[blockIdx.x] = total;
    }
}

__global__ void warp_all_reduce_kernel(const double* values, double* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double value = values[i];
    for (int lane_mask = warpSize / 2; lane_mask > 0; lane_mask /= 2)
        value += __shfl_xor_sync(full_mask, value, lane_mask);
    out[i] = value;
}

__global__ void partial_warp_kernel(const int* in, PartialWarp* out) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int lanes_here = min(warpSize, int(blockDim.x) - warp * warpSize);
    const unsigned mask = lanes_here == warpSize ? full_mask : (1u << lanes_here) - 1;
    const int value = in[blockIdx.x * blockDim.x + threadIdx.x];
    int sum = value;
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        const int other = __shfl_down_sync(mask, sum, offset);
        if (lane + offset < lanes_here) sum += other;  // lanes past the block hold nothing
    }
    const unsigned odd_ballot = __ballot_sync(mask, value % 2 != 0);
    const int all_true = __all_sync(mask, 1);
    const int any_last_lane = __any_sync(mask, lane == lanes_here - 1);
    if (lane == 0) {
        const int warps_per_block = (blockDim.x + warpSize - 1) / warpSize;
        out[blockIdx.x * warps_per_block + warp] = {sum, odd_ballot, all_true, any_last_lane};
    }
}

template <typename T>
std::vector<T> run_shuffles(const std::vector<ShuffleCase>& cases, const std::vector<T>& in) {
    DeviceArray<ShuffleCase> device_cases(cases);
    DeviceArray<T> device_in(in);
    DeviceArray<T> out(std::int64_t(in.size()));
    gpu::launch(shuffle_kernel<T>, dim3(unsigned(cases.size())), dim3(warp_test_block), 0,
                device_cases.get(), device_in.get(), out.get());
    return out.to_host();
}

}  // namespace

std::vector<int> shuffle(const std::vector<ShuffleCase>& cases, const std::vector<int>& in) {
    return run_shuffles(cases, in);
}
std::vector<float> shuffle(const std::vector<ShuffleCase>& cases, const std::vector<float>& in) {
    return run_shuffles(cases, in);
}
std::vector<double> shuffle(const std::vector<ShuffleCase>& cases, const std::vector<double>& in) {
    return run_shuffles(cases, in);
}

std::vector<int> shuffle_even_lanes_only(const std::vector<int>& in) {
    DeviceArray<int> device_in(in);
    DeviceArray<int> out(std::int64_t(in.size()));
    gpu::launch(shuffle_even_lanes_kernel, dim3(unsigned(in.size() / warp_test_block)),
                dim3(warp_test_block), 0, device_in.get(), out.get());
    return out.to_host();
}

std::vector<Votes> vote(int blocks) {
    DeviceArray<Votes> out(std::int64_t(blocks) * warp_test_block);
    gpu::launch(vote_kernel, dim3(blocks), dim3(warp_test_block), 0, out.get());
    return out.to_host();
}

std::vector<int> warp_neighbour(const std::vector<int>& in, bool with_syncwarp) {
    DeviceArray<int> device_in(in);
    DeviceArray<int> out(std::int64_t(in.size()));
    const dim3 grid(unsigned(in.size() / warp_test_block));
    if (with_syncwarp)
        gpu::launch(warp_neighbour_with_syncwarp_kernel, grid, dim3(warp_test_block), 0,
                    device_in.get(), out.get());
    else
        gpu::launch(warp_neighbour_without_syncwarp_kernel, grid, dim3(warp_test_block), 0,
                    device_in.get(), out.get());
    return out.to_host();
}

std::vector<int> syncwarp_in_both_branches(const std::vector<int>& in) {
    DeviceArray<int> device_in(in);
    DeviceArray<int> out(std::int64_t(in.size()));
    gpu::launch(syncwarp_in_both_branches_kernel, dim3(unsigned(in.size() / warp_test_block)),
                dim3(warp_test_block), 0, device_in.get(), out.get());
    return out.to_host();
}

std::vector<int> shuffle_in_both_branches(const std::vector<int>& in) {
    DeviceArray<int> device_in(in);
    DeviceArray<int> out(std::int64_t(in.size()));
    gpu::launch(shuffle_in_both_branches_kernel, dim3(unsigned(in.size() / warp_test_block)),
                dim3(warp_test_block), 0, device_in.get(), out.get());
    return out.to_host();
}

std::vector<int> syncwarp_after_a_solo_one(const std::vector<int>& in) {
    DeviceArray<int> device_in(in);
    DeviceArray<int> out(2);
    gpu::launch(syncwarp_after_a_solo_one_kernel, dim3(1), dim3(32), 0, device_in.get(), out.get());
    return out.to_host();
}

std::vector<int> shuffle_across_iterations(const std::vector<int>& in) {
    DeviceArray<int> device_in(in);
    DeviceArray<int> out(32);
    gpu::launch(shuffle_across_iterations_kernel, dim3(1), dim3(32), 0, device_in.get(), out.get());
    return out.to_host();
}

std::vector<float> block_sums_by_warp_shuffles(const std::vector<float>& values) {
    const int blocks = int((values.size() + warp_reduction_block - 1) / warp_reduction_block);
    DeviceArray<float> in(values);
    DeviceArray<float> sums(blocks);
    gpu::launch(block_sum_by_warps_kernel, dim3(blocks), dim3(warp_reduction_block), 0, in.get(),
                int(values.size()), sums.get());
    return sums.to_host();
}

std::vector<double> warp_all_reduce(const std::vector<double>& values) {
    DeviceArray<double> in(values);
    DeviceArray<double> out(std::int64_t(values.size()));
    gpu::launch(warp_all_reduce_kernel, dim3(unsigned(values.size() / warp_test_block)),
                dim3(warp_test_block), 0, in.get(), out.get());
    return out.to_host();
}

std::vector<PartialWarp> partial_warp_votes_and_sum(const std::vector<int>& in) {
    const int blocks = int(in.size() / partial_warp_block);
    const int warps_per_block = (partial_warp_block + 31) / 32;
    DeviceArray<int> device_in(in);
    DeviceArray<PartialWarp> out(std::int64_t(blocks) * warps_per_block);
    gpu::launch(partial_warp_kernel, dim3(blocks), dim3(partial_warp_block), 0, device_in.get(),
                out.get());
    return out.to_host();
}

}  // namespace triptych::sim_tests
