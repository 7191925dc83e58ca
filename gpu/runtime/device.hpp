// Device memory and device facts, for host code (the backends, benchmarks, `triptych info`).
// The same calls work in both GPU builds: on a GPU they are cudaMalloc/cudaMemcpy; in the
// simulator, host memory that the simulator registers as device memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace triptych::gpu {

// `count` floats of device memory, every byte 0xFF (NaN) until written; freed with the last owner.
std::shared_ptr<float> device_allocate(std::int64_t count);
// Scratch device memory for an op's workspace (im2col's patch matrix, FFT spectra): at least
// `count` floats, owned by the calling host thread and kept for its next call, so that a call
// does not pay a cudaMalloc and cudaFree (both wait for the whole device) and a fill of its
// workspace every time. Valid until this thread's next workspace() call, so an op takes one
// workspace and carves it up. Contents are left over from earlier calls: in the simulator they
// are set to NaN on every call, so that reading scratch nobody wrote still fails the checks.
float* workspace(std::int64_t count);
// `count` floats of page-locked ("pinned") host memory, for fast transfers that overlap with the
// host's work (stream.hpp's asynchronous copies); plain host memory in the simulator, whose stream
// check tracks it as it tracks device memory.
std::shared_ptr<float> pinned_allocate(std::int64_t count);

// Blocking copies: issued to the current stream (stream.hpp), after its earlier work, and waited
// for.
void copy_to_device(float* device_dst, const float* host_src, std::int64_t count);
void copy_to_host(float* host_dst, const float* device_src, std::int64_t count);
// Waits for every kernel and copy issued so far, on every stream.
void synchronize();

struct DeviceInfo {
    bool simulated = false;
    std::string name;                 // "NVIDIA H200" or "simulator (CPU, 2 threads)"
    int multiprocessors = 0;          // SMs; OpenMP threads in the simulator
    std::size_t memory_bytes = 0;     // global memory
    int major = 0, minor = 0;         // compute capability (0.0 in the simulator)
    double memory_bandwidth_gbs = 0;  // theoretical peak, from clock and bus width (0 if unknown)
};

// Whether a GPU (or, in a sim build, the simulator) can run kernels here.
bool available();
// Facts about device 0. Throws CudaError if no device is available.
DeviceInfo info();

}  // namespace triptych::gpu
