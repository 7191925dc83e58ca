// Test kernels for what launch() checks before running anything (shapes the GPU would reject,
// dynamic shared memory limits, host pointers) and for what device memory holds before it is
// written (see kernels.hpp for each one's contract).
#include "gpu/runtime/cuda.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

__global__ void count_threads_kernel(unsigned long long* count) { atomicAdd(count, 1ull); }

// Each thread writes words tid, tid + blockDim.x, ... and, after the barrier, checks the words
// written by the next thread, so every word is written by one thread and read by another.
__global__ void fill_dynamic_shared_kernel(int words, int* wrong_words) {
    TRIPTYCH_DYNAMIC_SHARED(int, memory);
    const int tid = threadIdx.x;
    for (int w = tid; w < words; w += blockDim.x) memory[w] = w ^ 0x5a5a;
    __syncthreads();
    const int reader = (tid + 1) % blockDim.x;
    for (int w = reader; w < words; w += blockDim.x)
        if (memory[w] != (w ^ 0x5a5a)) atomicAdd(wrong_words, 1);
}

__global__ void scale_kernel(const float* in, float* out) {
    out[threadIdx.x] = 2.0f * in[threadIdx.x] + 1.0f;
}

__global__ void copy_or_default_kernel(const float* in, float* out) {
    out[threadIdx.x] = in != nullptr ? in[threadIdx.x] : -1.0f;
}

}  // namespace

long long count_threads(Extent grid, Extent block, std::size_t dynamic_shared_bytes) {
    DeviceArray<unsigned long long> count(std::vector<unsigned long long>{0});
    gpu::launch(count_threads_kernel, dim3(grid.x, grid.y, grid.z), dim3(block.x, block.y, block.z),
                dynamic_shared_bytes, count.get());
    return (long long)(count.to_host()[0]);
}

bool fill_dynamic_shared(std::size_t bytes) {
    DeviceArray<int> wrong_words(std::vector<int>{0});
    gpu::launch(fill_dynamic_shared_kernel, dim3(2), dim3(256), bytes, int(bytes / sizeof(int)),
                wrong_words.get());
    return wrong_words.to_host()[0] == 0;
}

void launch_with_host_pointer() {
    std::vector<float> host_in(32, 1.0f);
    DeviceArray<float> out(32);
    gpu::launch(scale_kernel, dim3(1), dim3(32), 0, static_cast<const float*>(host_in.data()),
                out.get());
}

std::vector<float> copy_or_default(bool pass_null) {
    std::vector<float> values(64);
    for (int i = 0; i < 64; ++i) values[i] = float(i);
    DeviceArray<float> in(values);
    DeviceArray<float> out(64);
    const float* source = pass_null ? nullptr : in.get();
    gpu::launch(copy_or_default_kernel, dim3(1), dim3(64), 0, source, out.get());
    return out.to_host();
}

std::vector<float> compute_on_unwritten_memory(int n) {
    DeviceArray<float> unwritten(n);
    DeviceArray<float> out(n);
    gpu::launch(scale_kernel, dim3(1), dim3(n), 0, static_cast<const float*>(unwritten.get()),
                out.get());
    return out.to_host();
}

}  // namespace triptych::sim_tests
