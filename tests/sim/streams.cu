// Kernels for the stream tests (streams_test.cpp): small elementwise steps whose order matters,
// launched on the current stream.
#include "gpu/runtime/cuda.hpp"

#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

constexpr int threads = 64;

__global__ void add_one_kernel(float* x, std::int64_t n) {
    const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

__global__ void double_kernel(const float* in, float* out, std::int64_t n) {
    const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}

// out[i] = 2 * in[i], the buffers handed over in a struct. DeclaredTable says which it reads and
// which it writes; PlainTable says nothing, so the stream check counts both as written.
struct DeclaredTable {
    const float* in;
    float* out;
    template <typename Note>
    void accesses(Note note) const {
        note(in, false);
        note(out, true);
    }
};
struct PlainTable {
    const float* in;
    float* out;
};

template <typename Table>
__global__ void double_table_kernel(Table table, std::int64_t n) {
    const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) table.out[i] = 2.0f * table.in[i];
}

dim3 grid_for(std::int64_t n) { return dim3(unsigned((n + threads - 1) / threads)); }

}  // namespace

const int add_one_launch_line = __LINE__ + 2;
void add_one(float* x, std::int64_t n) {
    gpu::launch(add_one_kernel, grid_for(n), dim3(threads), 0, x, n);
}

const int double_into_launch_line = __LINE__ + 2;
void double_into(const float* in, float* out, std::int64_t n) {
    gpu::launch(double_kernel, grid_for(n), dim3(threads), 0, in, out, n);
}

void double_through_table(const float* in, float* out, std::int64_t n, bool declared) {
    if (declared)
        gpu::launch(double_table_kernel<DeclaredTable>, grid_for(n), dim3(threads), 0,
                    DeclaredTable{in, out}, n);
    else
        gpu::launch(double_table_kernel<PlainTable>, grid_for(n), dim3(threads), 0,
                    PlainTable{in, out}, n);
}

}  // namespace triptych::sim_tests
