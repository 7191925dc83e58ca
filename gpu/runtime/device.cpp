#include "gpu/runtime/device.hpp"

#include <omp.h>

#include <cstring>
#include <source_location>

#include "common/errors.hpp"
#include "gpu/runtime/stream.hpp"
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
    // The fill runs on the current stream and is waited for: a kernel on any stream issued after
    // this call then finds the buffer filled, never half of it overwritten by a late fill.
    const auto stream = static_cast<cudaStream_t>(current_stream().handle());
    check(cudaMemsetAsync(pointer, 0xFF, sizeof(float) * count, stream), "cudaMemsetAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return std::shared_ptr<float>(static_cast<float*>(pointer), [](float* p) { cudaFree(p); });
}

std::shared_ptr<float> pinned_allocate(std::int64_t count) {
    void* pointer = nullptr;
    check(cudaMallocHost(&pointer, sizeof(float) * count), "cudaMallocHost");
    return std::shared_ptr<float>(static_cast<float*>(pointer), [](float* p) { cudaFreeHost(p); });
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

// Ordinary host memory, registered with the simulator's stream check (which tracks pinned buffers
// as it tracks device buffers).
std::shared_ptr<float> pinned_allocate(std::int64_t count) {
    float* pointer = new float[std::size_t(count)];
    sim::streams::register_pinned(pointer, sizeof(float) * std::size_t(count));
    return std::shared_ptr<float>(pointer, [](float* p) {
        sim::streams::unregister_pinned(p);
        delete[] p;
    });
}

void synchronize() { sim::streams::synchronize_device(std::source_location::current()); }

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

// The blocking copies go to the current stream, after its earlier work, and wait for it: a
// download after a kernel on a stream of its own sees what the kernel wrote (cudaMemcpy would
// use the legacy default stream, which does not wait for non-blocking streams).
void copy_to_device(float* dst, const float* src, std::int64_t count) {
    const Stream& stream = current_stream();
    copy_to_device_async(dst, src, count, stream);
    stream.synchronize();
}

void copy_to_host(float* dst, const float* src, std::int64_t count) {
    const Stream& stream = current_stream();
    copy_to_host_async(dst, src, count, stream);
    stream.synchronize();
}

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
