// The launch log (launch_log.hpp): cuda builds only.
#include "gpu/runtime/launch_log.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

#include "common/errors.hpp"

namespace triptych::gpu {
namespace {

std::atomic<bool> on{false};
std::mutex mutex;
std::vector<LaunchOccupancy> entries;

// `site` is the launch's file:line: the error belongs to that launch.
void check(cudaError_t status, const char* what, const std::string& site) {
    if (status != cudaSuccess)
        throw CudaError(std::string(what) + " for the launch at " + site + ": " +
                        cudaGetErrorString(status));
}

bool same_launch(const LaunchOccupancy& a, const LaunchOccupancy& b) {
    for (int d = 0; d < 3; ++d)
        if (a.grid[d] != b.grid[d] || a.block[d] != b.block[d]) return false;
    return a.kernel == b.kernel && a.site == b.site && a.dynamic_shared == b.dynamic_shared;
}

}  // namespace

void start_launch_log() {
    std::lock_guard lock(mutex);
    entries.clear();
    on = true;
}

std::vector<LaunchOccupancy> stop_launch_log() {
    std::lock_guard lock(mutex);
    on = false;
    return std::move(entries);
}

bool launch_log_on() { return on.load(std::memory_order_relaxed); }

void log_launch(const void* kernel, const unsigned grid[3], const unsigned block[3],
                std::size_t dynamic_shared, std::source_location where) {
    LaunchOccupancy launch;
    const char* name = nullptr;
    launch.kernel = cudaFuncGetName(&name, kernel) == cudaSuccess && name ? name : "?";
    launch.site = std::string(where.file_name()) + ":" + std::to_string(where.line());
    for (int d = 0; d < 3; ++d) {
        launch.grid[d] = grid[d];
        launch.block[d] = block[d];
    }
    launch.dynamic_shared = dynamic_shared;
    cudaFuncAttributes attributes{};
    check(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes", launch.site);
    launch.registers = attributes.numRegs;
    launch.static_shared = attributes.sharedSizeBytes;
    const int threads = int(block[0] * block[1] * block[2]);
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&launch.blocks_per_sm, kernel, threads,
                                                        dynamic_shared),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor", launch.site);
    launch.warps_per_sm = launch.blocks_per_sm * ((threads + 31) / 32);
    int device = 0, threads_per_sm = 0;
    check(cudaGetDevice(&device), "cudaGetDevice", launch.site);
    check(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device),
          "cudaDeviceGetAttribute", launch.site);
    launch.max_warps_per_sm = threads_per_sm / 32;
    std::lock_guard lock(mutex);
    for (LaunchOccupancy& seen : entries)
        if (same_launch(seen, launch)) {
            ++seen.launches;
            return;
        }
    launch.launches = 1;
    entries.push_back(launch);
}

}  // namespace triptych::gpu
