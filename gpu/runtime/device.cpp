#include "gpu/runtime/device.hpp"

#include <omp.h>

#include <cstring>
#include <source_location>

#include "common/errors.hpp"
#include "triptych_config.hpp"

#if TRIPTYCH_GPU_CUDA
#include <cuda_runtime.h>
#else
#include "gpu/runtime/sim/sim.hpp"
#endif

namespace triptych::gpu {

#if TRIPTYCH_GPU_CUDA

namespace {
void check(cudaError_t status, const char* what,
           std::source_location where = std::source_location::current()) {
    if (status != cudaSuccess)
        throw CudaError(std::string(what) + " at " + where.file_name() + ":" +
                        std::to_string(where.line()) + ": " + cudaGetErrorString(status));
}
}  // namespace

std::shared_ptr<float> device_allocate(std::int64_t count) {
    void* pointer = nullptr;
    check(cudaMalloc(&pointer, sizeof(float) * count),
          ("cudaMalloc of " + std::to_string(sizeof(float) * count) + " bytes").c_str());
    check(cudaMemset(pointer, 0xFF, sizeof(float) * count), "cudaMemset");
    return std::shared_ptr<float>(static_cast<float*>(pointer), [](float* p) { cudaFree(p); });
}

std::shared_ptr<float> pinned_allocate(std::int64_t count) {
    void* pointer = nullptr;
    check(cudaMallocHost(&pointer, sizeof(float) * count), "cudaMallocHost");
    return std::shared_ptr<float>(static_cast<float*>(pointer), [](float* p) { cudaFreeHost(p); });
}

void copy_to_device(float* dst, const float* src, std::int64_t count) {
    check(cudaMemcpy(dst, src, sizeof(float) * count, cudaMemcpyHostToDevice), "copy to device");
}

void copy_to_host(float* dst, const float* src, std::int64_t count) {
    check(cudaMemcpy(dst, src, sizeof(float) * count, cudaMemcpyDeviceToHost), "copy to host");
}

void synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

bool available() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

DeviceInfo info() {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    DeviceInfo d;
    d.name = prop.name;
    d.multiprocessors = prop.multiProcessorCount;
    d.memory_bytes = prop.totalGlobalMem;
    d.major = prop.major;
    d.minor = prop.minor;
    int clock_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0) == cudaSuccess)
        d.memory_bandwidth_gbs =
            2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;  // DDR: 2 per clock
    return d;
}

#else  // the simulator

std::shared_ptr<float> device_allocate(std::int64_t count) {
    return std::shared_ptr<float>(static_cast<float*>(sim::device_malloc(sizeof(float) * count)),
                                  [](float* p) { sim::device_free(p); });
}

std::shared_ptr<float> pinned_allocate(std::int64_t count) {
    return std::shared_ptr<float>(new float[count], std::default_delete<float[]>());
}

void copy_to_device(float* dst, const float* src, std::int64_t count) {
    if (!sim::is_device_pointer(dst))
        throw CudaError("copy to device: destination is not device memory");
    std::memcpy(dst, src, sizeof(float) * count);
}

void copy_to_host(float* dst, const float* src, std::int64_t count) {
    if (!sim::is_device_pointer(src)) throw CudaError("copy to host: source is not device memory");
    std::memcpy(dst, src, sizeof(float) * count);
}

void synchronize() {}  // simulator launches are synchronous

bool available() { return true; }

DeviceInfo info() {
    DeviceInfo d;
    d.simulated = true;
    const int threads = omp_get_max_threads();
    d.name =
        "simulator (CPU, " + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
    d.multiprocessors = threads;
    return d;
}

#endif

float* workspace(std::int64_t count) {
    struct Scratch {
        std::shared_ptr<float> memory;
        std::int64_t capacity = 0;
    };
    thread_local Scratch scratch;
    if (count > scratch.capacity) {
        scratch.memory.reset();  // free the old buffer before taking a larger one
        scratch.memory = device_allocate(count);
        scratch.capacity = count;
    }
#if !TRIPTYCH_GPU_CUDA
    std::memset(scratch.memory.get(), 0xFF, sizeof(float) * std::size_t(count));
#endif
    return scratch.memory.get();
}

}  // namespace triptych::gpu
