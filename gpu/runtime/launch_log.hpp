// The launch log of a cuda build: while it is on, every launch() records its kernel, its shape
// and the occupancy the CUDA runtime computes for it
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor, from the kernel's registers and shared memory as
// compiled for this GPU). `triptych profile` prints it. A sim build computes the same theoretical
// occupancy from nvcc's resource report instead (gpu/runtime/sim/occupancy.hpp).
#pragma once

#include <cstddef>
#include <source_location>
#include <string>
#include <vector>

namespace triptych::gpu {

struct LaunchOccupancy {
    std::string kernel;  // its name, as the CUDA runtime gives it (cudaFuncGetName)
    std::string site;    // file:line of the launch
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    std::size_t dynamic_shared = 0;
    int registers = 0;              // per thread (cudaFuncGetAttributes)
    std::size_t static_shared = 0;  // bytes of __shared__ arrays
    int blocks_per_sm = 0;          // resident at once, by the occupancy API
    int warps_per_sm = 0;
    int max_warps_per_sm = 0;  // the device's
    int launches = 0;          // with this kernel, site and shape
};

void start_launch_log();
// The launches since start_launch_log(), one entry per kernel, site and shape; turns the log off.
std::vector<LaunchOccupancy> stop_launch_log();

// For launch(): whether the log is on, and one launch to record.
bool launch_log_on();
void log_launch(const void* kernel, const unsigned grid[3], const unsigned block[3],
                std::size_t dynamic_shared, std::source_location where);

}  // namespace triptych::gpu
