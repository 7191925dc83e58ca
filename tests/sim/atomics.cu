// Test kernels for atomics, which must be real atomics in the simulator because blocks run in
// parallel on several OS threads: a histogram, a float sum, integer and float maxima, tickets and
// an exchange chain (see kernels.hpp for each one's contract).
#include "gpu/runtime/cuda.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

constexpr int atomics_block = 128;

__global__ void histogram_kernel(const int* values, int n, int* bins) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[values[i]], 1);
}

__global__ void float_sum_kernel(const float* values, int n, float* total) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, values[i]);
}

__global__ void int_max_kernel(const int* values, int n, int* maximum) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicMax(maximum, values[i]);
}

// CUDA has no atomicMax for float: swap the float's bits in while the stored value is smaller.
__device__ float atomic_max_float(float* address, float value) {
    int* address_as_int = reinterpret_cast<int*>(address);
    int old = *address_as_int;
    while (__int_as_float(old) < value) {
        const int assumed = old;
        old = atomicCAS(address_as_int, assumed, __float_as_int(value));
        if (old == assumed) break;  // the swap happened
    }
    return __int_as_float(old);
}

__global__ void float_max_kernel(const float* values, int n, float* maximum) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomic_max_float(maximum, values[i]);
}

__global__ void ticket_kernel(int n, int* counter, int* owner_of_ticket) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) owner_of_ticket[atomicAdd(counter, 1)] = i;
}

__global__ void exchange_chain_kernel(int n, int* slot, int* previous) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) previous[i] = atomicExch(slot, i);
}

dim3 grid_for(std::size_t n) { return dim3(unsigned((n + atomics_block - 1) / atomics_block)); }

}  // namespace

std::vector<int> histogram(const std::vector<int>& values, int bins) {
    DeviceArray<int> in(values);
    DeviceArray<int> counts(std::vector<int>(bins, 0));
    gpu::launch(histogram_kernel, dim3(64), dim3(atomics_block), 0, in.get(), int(values.size()),
                counts.get());
    return counts.to_host();
}

float atomic_float_sum(const std::vector<float>& values) {
    DeviceArray<float> in(values);
    DeviceArray<float> total(std::vector<float>{0.0f});
    gpu::launch(float_sum_kernel, grid_for(values.size()), dim3(atomics_block), 0, in.get(),
                int(values.size()), total.get());
    return total.to_host()[0];
}

int atomic_int_max(const std::vector<int>& values) {
    DeviceArray<int> in(values);
    DeviceArray<int> maximum(std::vector<int>{values.front()});
    gpu::launch(int_max_kernel, grid_for(values.size()), dim3(atomics_block), 0, in.get(),
                int(values.size()), maximum.get());
    return maximum.to_host()[0];
}

float atomic_float_max_by_cas(const std::vector<float>& values) {
    DeviceArray<float> in(values);
    DeviceArray<float> maximum(std::vector<float>{values.front()});
    gpu::launch(float_max_kernel, grid_for(values.size()), dim3(atomics_block), 0, in.get(),
                int(values.size()), maximum.get());
    return maximum.to_host()[0];
}

std::vector<int> atomic_tickets(int threads) {
    DeviceArray<int> counter(std::vector<int>{0});
    DeviceArray<int> owners(threads);
    gpu::launch(ticket_kernel, grid_for(threads), dim3(atomics_block), 0, threads, counter.get(),
                owners.get());
    return owners.to_host();
}

std::vector<int> atomic_exchange_chain(int threads) {
    DeviceArray<int> slot(std::vector<int>{-1});
    DeviceArray<int> previous(threads);
    gpu::launch(exchange_chain_kernel, grid_for(threads), dim3(atomics_block), 0, threads,
                slot.get(), previous.get());
    std::vector<int> chain = previous.to_host();
    chain.push_back(slot.to_host()[0]);
    return chain;
}

}  // namespace triptych::sim_tests
