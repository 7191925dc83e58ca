// Test kernels that fail: a CUDA thread that throws, threads at two different __syncthreads()
// lines, and deadlocks between __syncthreads() and a warp operation. The simulator must report each
// one from launch(); the tests look for the file:line of every barrier involved, which this file
// exports next to the barriers (a test also checks that each exported line holds that barrier).
#include <chrono>
#include <string>
#include <thread>

#include "gpu/runtime/cuda.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

constexpr int failures_block = 128;

// A check shared with host code would throw; CUDA device code cannot throw, so on a GPU it traps.
__device__ void require_not_thrower(int i, int thrower) {
    if (i != thrower) return;
#if defined(__CUDACC__)
    __trap();
#else
    throw InvalidArgument("thread " + std::to_string(i) + " was told to throw");
#endif
}

__global__ void throw_kernel(int thrower, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    require_not_thrower(i, thrower);
    out[i] = 1.0f;
}

__global__ void throw_between_barriers_kernel(int thrower, float* out) {
    __shared__ float slot[failures_block];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    slot[threadIdx.x] = float(i);
    __syncthreads();
    require_not_thrower(i, thrower);
    __syncthreads();
    out[i] = slot[(threadIdx.x + 1) % failures_block];
}

// Thread 0 of blocks `slow` and `fast` throws, the slow one only after a pause (in the simulator:
// it runs on the CPU, and may sleep): with two workers, the fast block's error comes first.
__global__ void throw_in_two_blocks_kernel(int slow, int fast, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
#if !defined(__CUDACC__)
    if (int(blockIdx.x) == slow && threadIdx.x == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
#endif
    if (int(blockIdx.x) == slow || int(blockIdx.x) == fast)
        require_not_thrower(i, int(blockIdx.x * blockDim.x));
    out[i] = 1.0f;
}

__global__ void throw_in_every_block_kernel(float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    require_not_thrower(threadIdx.x, 0);
    out[i] = 1.0f;
}

}  // namespace

const char* const divergent_barrier_file = __FILE__;
const int divergent_barrier_even_line = __LINE__ + 7;  // the two __syncthreads() below
const int divergent_barrier_odd_line = __LINE__ + 8;

namespace {

__global__ void divergent_barrier_kernel(float* out) {
    if (threadIdx.x % 2 == 0) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1.0f;
}

}  // namespace

const char* const deadlock_file = __FILE__;
const int deadlock_syncthreads_line = __LINE__ + 7;  // the __syncthreads() below
const int deadlock_syncwarp_line = __LINE__ + 8;     // the __syncwarp() below

namespace {

__global__ void barrier_against_syncwarp_kernel(float* out) {
    if (threadIdx.x == 0) {
        __syncthreads();  // waits for lanes 1..31, which wait for lane 0:
    } else {
        __syncwarp();  // a deadlock
    }
    out[threadIdx.x] = 1.0f;
}

}  // namespace

const int deadlock_shuffle_syncthreads_line = __LINE__ + 8;  // the __syncthreads() below
const int deadlock_shuffle_line = __LINE__ + 9;              // the __shfl_sync() below

namespace {

__global__ void barrier_against_shuffle_kernel(float* out) {
    float value = float(threadIdx.x);
    if (threadIdx.x == 0) {
        __syncthreads();
    } else {
        value = __shfl_sync(0xffffffffu, value, 0);
    }
    out[threadIdx.x] = value;
}

}  // namespace

const int disagreeing_masks_first_line = __LINE__ + 7;   // lane 0's __syncwarp(0x3) below
const int disagreeing_masks_second_line = __LINE__ + 8;  // the other lanes' __syncwarp() below

namespace {

__global__ void syncwarp_masks_disagree_kernel(float* out) {
    if (threadIdx.x == 0) {
        __syncwarp(0x3u);  // waits for lane 1 to call __syncwarp(0x3)...
    } else {
        __syncwarp();  // ...which waits for lane 0 to call __syncwarp(0xffffffff)
    }
    out[threadIdx.x] = 1.0f;
}

}  // namespace

const int shuffle_against_syncwarp_first_line = __LINE__ + 8;   // the __shfl_sync() below
const int shuffle_against_syncwarp_second_line = __LINE__ + 9;  // the __syncwarp() below

namespace {

__global__ void shuffle_against_syncwarp_kernel(float* out) {
    float value = float(threadIdx.x);
    if (threadIdx.x < 16) {
        value = __shfl_sync(0xffffffffu, value, 0);  // a shuffle cannot meet a __syncwarp()
    } else {
        __syncwarp();
    }
    out[threadIdx.x] = value;
}

__global__ void early_exit_kernel(int n, int* out) {
    __shared__ int slot[64];
    const int tid = threadIdx.x;
    if (tid >= n) return;
    slot[tid] = 3 * tid;
    __syncthreads();
    out[tid] = slot[(tid + 1) % n];
}

}  // namespace

void throw_from_thread(int blocks, int thrower) {
    DeviceArray<float> out(std::int64_t(blocks) * failures_block);
    gpu::launch(throw_kernel, dim3(blocks), dim3(failures_block), 0, thrower, out.get());
}

void throw_between_barriers(int blocks, int thrower) {
    DeviceArray<float> out(std::int64_t(blocks) * failures_block);
    gpu::launch(throw_between_barriers_kernel, dim3(blocks), dim3(failures_block), 0, thrower,
                out.get());
}

void throw_from_every_block(int blocks) {
    DeviceArray<float> out(std::int64_t(blocks) * failures_block);
    gpu::launch(throw_in_every_block_kernel, dim3(blocks), dim3(failures_block), 0, out.get());
}

void throw_from_two_blocks(int blocks, int slow, int fast) {
    DeviceArray<float> out(std::int64_t(blocks) * failures_block);
    gpu::launch(throw_in_two_blocks_kernel, dim3(blocks), dim3(failures_block), 0, slow, fast,
                out.get());
}

void divergent_barrier() {
    DeviceArray<float> out(64);
    gpu::launch(divergent_barrier_kernel, dim3(1), dim3(64), 0, out.get());
}

void barrier_against_syncwarp() {
    DeviceArray<float> out(32);
    gpu::launch(barrier_against_syncwarp_kernel, dim3(1), dim3(32), 0, out.get());
}

void syncwarp_masks_disagree() {
    DeviceArray<float> out(32);
    gpu::launch(syncwarp_masks_disagree_kernel, dim3(1), dim3(32), 0, out.get());
}

void shuffle_against_syncwarp() {
    DeviceArray<float> out(32);
    gpu::launch(shuffle_against_syncwarp_kernel, dim3(1), dim3(32), 0, out.get());
}

void barrier_against_shuffle() {
    DeviceArray<float> out(32);
    gpu::launch(barrier_against_shuffle_kernel, dim3(1), dim3(32), 0, out.get());
}

std::vector<int> early_exit_then_barrier(int n) {
    DeviceArray<int> out(std::vector<int>(64, -1));
    gpu::launch(early_exit_kernel, dim3(1), dim3(64), 0, n, out.get());
    return out.to_host();
}

}  // namespace triptych::sim_tests
