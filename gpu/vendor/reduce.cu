// gpu_vendor sum: cub::DeviceReduce::Sum, the device-wide reduction of CUB (the CUDA toolkit's
// header-only library of parallel primitives, in CCCL), returned to the host as our sum is.
//
// CUB asks for its temporary storage in two calls: the first, given no storage, says how many
// bytes the reduction needs; the second reduces. The storage and the total share the workspace
// every GPU op uses (gpu/runtime/device.hpp), so a call allocates nothing.
//
// Order of additions: CUB documents DeviceReduce::Sum as run-to-run deterministic for float
// addition on one GPU (the same input gives the same bits on every run there), so both
// Reduction modes get that order. CCCL 3.1 lets a caller trade it for an atomic single pass
// (cuda::execution::determinism::not_guaranteed); the toolkit this was written for ships CUB 3.0.
#include <cub/device/device_reduce.cuh>

#include <cstddef>
#include <cstdint>
#include <source_location>

#include "common/kernels.hpp"
#include "common/math.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/runtime/launch.hpp"
#include "gpu/runtime/stream.hpp"

namespace triptych::gpu_vendor {
namespace {

// CUB aligns its storage itself; the total's float comes first, 256 bytes ahead of it.
constexpr std::int64_t storage_offset = 256 / sizeof(float);

float sum(std::int64_t n, const float* x, Reduction /*mode: CUB's one order serves both*/) {
    const auto stream = static_cast<cudaStream_t>(gpu::current_stream().handle());
    std::size_t bytes = 0;
    gpu::check_cuda(
        cub::DeviceReduce::Sum(nullptr, bytes, x, static_cast<float*>(nullptr), n, stream),
        "cub::DeviceReduce::Sum (its storage)", std::source_location::current());
    float* total = gpu::workspace(storage_offset + std::int64_t(ceil_div(bytes, sizeof(float))));
    gpu::check_cuda(cub::DeviceReduce::Sum(total + storage_offset, bytes, x, total, n, stream),
                    "cub::DeviceReduce::Sum", std::source_location::current());
    float result = 0.0f;
    gpu::copy_to_host(&result, total, 1);
    return result;
}

[[maybe_unused]] const bool registered = register_kernel(
    "gpu_vendor", ops::sum,
    {1, "cub", "cub::DeviceReduce::Sum: CUB's two-pass reduction, run-to-run deterministic", sum});

}  // namespace
}  // namespace triptych::gpu_vendor
