// Test kernels for the simulator's tensor cores (gpu/runtime/sim/wmma.hpp,
// gpu/runtime/mma_sync.hpp): one warp's TF32 and BF16 multiply-accumulates, PTX's mma.sync with its
// documented layout, and the two roundings (see kernels.hpp for each one's contract).
#include "gpu/runtime/cuda.hpp"
#include "gpu/runtime/mma_sync.hpp"
#include "gpu/runtime/tensor_cores.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

namespace wmma = nvcuda::wmma;

__global__ void mma_tf32_kernel(const float* a, const float* b, const float* c, float* rows,
                                float* columns) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::load_matrix_sync(fa, a, 8);  // row-major 16 x 8: 8 floats per row
    wmma::load_matrix_sync(fb, b, 8);  // column-major 8 x 16: 8 floats per column
    wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(rows, acc, 16, wmma::mem_row_major);
    wmma::store_matrix_sync(columns, acc, 16, wmma::mem_col_major);
}

__global__ void mma_bf16_kernel(const float* a, const float* b, float* d) {
    alignas(32) __shared__ __nv_bfloat16 as[16 * 16];
    alignas(32) __shared__ __nv_bfloat16 bs[16 * 16];
    for (int i = threadIdx.x; i < 16 * 16; i += 32) {
        as[i] = __float2bfloat16(a[i]);
        bs[i] = __float2bfloat16(b[i]);
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, as, 16);
    wmma::load_matrix_sync(fb, bs, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}

// Each lane loads its elements where the PTX ISA puts them for m16n8k8 .tf32 (written out here
// from its tables, independently of the simulator's MmaLayout), multiplies, and stores its D.
__global__ void mma_sync_kernel(const float* a, const float* b, const float* c, float* d) {
    const int lane = int(threadIdx.x % 32), g = lane / 4, t = lane % 4;
    std::uint32_t fa[4], fb[2];
    float fd[4];
    for (int e = 0; e < 4; ++e) fa[e] = gpu::to_tf32(a[(g + 8 * (e % 2)) * 8 + t + 4 * (e / 2)]);
    for (int e = 0; e < 2; ++e) fb[e] = gpu::to_tf32(b[(t + 4 * e) * 8 + g]);
    for (int e = 0; e < 4; ++e) fd[e] = c[(g + 8 * (e / 2)) * 8 + 2 * t + e % 2];
    gpu::mma_m16n8k8_tf32(fd, fa, fb);
    for (int e = 0; e < 4; ++e) d[(g + 8 * (e / 2)) * 8 + 2 * t + e % 2] = fd[e];
}

__global__ void tile_rules_kernel(const float* a, unsigned load_ldm, float* d, unsigned store_ldm) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::load_matrix_sync(fa, a, load_ldm);
    wmma::fill_fragment(acc, 0.0f);
    wmma::store_matrix_sync(d, acc, store_ldm, wmma::mem_row_major);
}

__global__ void roundings_kernel(const float* in, int n, float* tf32, float* bf16) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    tf32[i] = wmma::__float_to_tf32(in[i]);
    bf16[i] = __bfloat162float(__float2bfloat16(in[i]));
}

}  // namespace

MmaResult tensor_core_tf32(const std::vector<float>& a, const std::vector<float>& b,
                           const std::vector<float>& c, unsigned threads) {
    DeviceArray<float> da(a), db(b), dc(c), rows(256), columns(256);
    gpu::launch(mma_tf32_kernel, dim3(1), dim3(threads), 0, da.get(), db.get(), dc.get(),
                rows.get(), columns.get());
    return {rows.to_host(), columns.to_host()};
}

std::vector<float> tensor_core_bf16(const std::vector<float>& a, const std::vector<float>& b) {
    DeviceArray<float> da(a), db(b), d(256);
    gpu::launch(mma_bf16_kernel, dim3(1), dim3(32), 0, da.get(), db.get(), d.get());
    return d.to_host();
}

std::vector<float> mma_sync_tf32(const std::vector<float>& a, const std::vector<float>& b,
                                 const std::vector<float>& c, unsigned threads) {
    DeviceArray<float> da(a), db(b), dc(c), d(16 * 8);
    gpu::launch(mma_sync_kernel, dim3(1), dim3(threads), 0, da.get(), db.get(), dc.get(), d.get());
    return d.to_host();
}

void wmma_tile_rules(int offset, unsigned load_ldm, unsigned store_ldm) {
    DeviceArray<float> a(std::vector<float>(16 * 64 + 64, 1.0f)), d(16 * 64 + 64);
    gpu::launch(tile_rules_kernel, dim3(1), dim3(32), 0, a.get() + offset, load_ldm,
                d.get() + offset, store_ldm);
}

std::pair<std::vector<float>, std::vector<float>> tensor_core_roundings(
    const std::vector<float>& values) {
    const int n = int(values.size());
    DeviceArray<float> in(values), tf32(n), bf16(n);
    gpu::launch(roundings_kernel, dim3(unsigned((n + 127) / 128)), dim3(128), 0, in.get(), n,
                tf32.get(), bf16.get());
    return {tf32.to_host(), bf16.to_host()};
}

}  // namespace triptych::sim_tests
