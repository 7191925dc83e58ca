// Test kernel for the built-in index variables: every thread records threadIdx, blockIdx and
// whether blockDim/gridDim match the launch, at its global linear id (see kernels.hpp).
#include "gpu/runtime/cuda.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

__global__ void record_indices_kernel(ThreadRecord* records, Extent grid, Extent block) {
    const int threads_per_block = blockDim.x * blockDim.y * blockDim.z;
    const int thread_in_block = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const int block_in_grid = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    ThreadRecord& record = records[block_in_grid * threads_per_block + thread_in_block];
    record.thread[0] = threadIdx.x;
    record.thread[1] = threadIdx.y;
    record.thread[2] = threadIdx.z;
    record.block[0] = blockIdx.x;
    record.block[1] = blockIdx.y;
    record.block[2] = blockIdx.z;
    record.dims_match = blockDim.x == block.x && blockDim.y == block.y && blockDim.z == block.z &&
                        gridDim.x == grid.x && gridDim.y == grid.y && gridDim.z == grid.z;
    atomicAdd(&record.writes, 1);
}

}  // namespace

std::vector<ThreadRecord> record_thread_indices(Extent grid, Extent block) {
    const std::int64_t threads =
        std::int64_t(grid.x) * grid.y * grid.z * block.x * block.y * block.z;
    DeviceArray<ThreadRecord> records(std::vector<ThreadRecord>(threads, ThreadRecord{}));
    gpu::launch(record_indices_kernel, dim3(grid.x, grid.y, grid.z),
                dim3(block.x, block.y, block.z), 0, records.get(), grid, block);
    return records.to_host();
}

}  // namespace triptych::sim_tests
