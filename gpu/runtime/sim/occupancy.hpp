// Theoretical occupancy: how many blocks of a kernel one SM of a given GPU holds at once, and which
// limit binds (threads, blocks, registers or shared memory), as CUDA's occupancy calculator and
// Nsight Compute's "Theoretical Occupancy" compute it from the launch and the kernel's resources.
//
// The registers a kernel needs are what nvcc's ptxas reports for it: the nvcc compile check of a
// sim build compiles every kernel with --resource-usage and keeps the report in
// <build>/kernel_resources/ (tools/nvcc_resources.sh). Without nvcc they are unknown.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace triptych::sim {

// One GPU's per-SM limits (CUDA Programming Guide, "Compute Capabilities").
struct GpuLimits {
    std::string name;  // "H200 (sm_90)"
    std::string arch;  // "sm_90": whose ptxas report to use
    int threads_per_sm = 0;
    int blocks_per_sm = 0;
    int registers_per_sm = 0;
    int register_unit = 0;  // registers are given to a warp in units of this many
    std::size_t shared_per_sm = 0;
    std::size_t shared_reserved_per_block = 0;  // the system's 1 KiB per block
    int warps_per_sm() const { return threads_per_sm / 32; }
};
const GpuLimits& h200();
const GpuLimits& a100();
// "h200" or "a100"; InvalidArgument naming those otherwise.
const GpuLimits& gpu_limits(const std::string& name);

struct KernelResources {
    int registers = 0;              // per thread
    std::size_t static_shared = 0;  // bytes of __shared__ arrays
    std::size_t stack_bytes = 0;    // local memory per thread (spills, arrays)
};

struct Occupancy {
    int blocks = 0;       // blocks per SM
    int warps = 0;        // active warps per SM
    double fraction = 0;  // warps / the SM's maximum
    std::string limit;    // "registers", "shared memory", "threads", "blocks"
};
Occupancy theoretical_occupancy(const GpuLimits& gpu, int threads_per_block,
                                std::size_t dynamic_shared, const KernelResources& kernel);

// What ptxas reported for the kernel whose demangled name is `kernel` (as addr2line names it),
// compiled for `arch`, read from the build's kernel_resources/; empty if no report names it.
std::optional<KernelResources> kernel_resources(const std::string& kernel, const std::string& arch);

// Parses ptxas --resource-usage output (exposed for the tests): kernel name (demangled), arch,
// resources, in the order the report lists them.
struct ResourceLine {
    std::string kernel;
    std::string arch;
    KernelResources resources;
};
std::vector<ResourceLine> parse_resource_usage(const std::string& text);

}  // namespace triptych::sim
