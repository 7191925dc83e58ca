// Test kernels for the simulator's access recorder (see recorder_kernels.hpp): memory patterns
// with counts known by hand, and planted bugs the race checker must name. Valid CUDA: nvcc
// compiles this file too.
#include "gpu/runtime/cuda.hpp"
#include "tests/sim/device_array.hpp"
#include "tests/sim/recorder_kernels.hpp"

namespace triptych::sim_tests {
namespace {

constexpr int lanes = 32;

// in holds 32 * 32 floats, index 32 ints, out 32 floats.
__global__ void pattern_kernel(Pattern pattern, const float* in, const int* index, float* out) {
    __shared__ float s[lanes * lanes];
    const int lane = threadIdx.x;
    if (pattern >= Pattern::shared_conflict_free && pattern <= Pattern::shared_float4) {
        for (int row = 0; row < lanes; ++row) s[row * lanes + lane] = float(row * lanes + lane);
        __syncthreads();
    }
    float value = 0.0f;
    switch (pattern) {
        case Pattern::global_coalesced:
            value = in[lane];
            break;
        case Pattern::global_strided:
            value = in[lanes * lane];
            break;
        case Pattern::global_gather:
            value = in[index[lane]];
            break;
        case Pattern::global_float2: {
            const float2 v = reinterpret_cast<const float2*>(in)[lane];
            value = v.x + v.y;
            break;
        }
        case Pattern::global_float4: {
            const float4 v = reinterpret_cast<const float4*>(in)[lane];
            value = v.x + v.y + v.z + v.w;
            break;
        }
        case Pattern::global_divergent:
            if (lane % 2 == 0) value = in[lane];
            break;
        case Pattern::global_loop_skip:
            for (int t = 0; t < 4; ++t) {
                if (t < lane % 2) continue;
                value += in[lanes * t + lane];
            }
            break;
        case Pattern::global_ldg:
            value = __ldg(in + lane);  // counted: global_ldg
            break;
        case Pattern::shared_conflict_free:
            value = s[lane];
            break;
        case Pattern::shared_two_way:
            value = s[2 * lane];
            break;
        case Pattern::shared_32_way:
            value = s[lanes * lane];
            break;
        case Pattern::shared_broadcast:
            value = s[0];
            break;
        case Pattern::shared_float2: {
            const float2 v = reinterpret_cast<const float2*>(s)[lane];
            value = v.x + v.y;
            break;
        }
        case Pattern::shared_float4: {
            const float4 v = reinterpret_cast<const float4*>(s)[lane];
            value = v.x + v.y + v.z + v.w;
            break;
        }
        case Pattern::global_atomic:
            atomicAdd(&out[0], 1.0f);
            return;
    }
    out[lane] = value;
}

__global__ void barriers_and_shuffle_kernel(float* out) {
    __shared__ float s[2 * lanes];
    const int t = threadIdx.x;
    s[t] = float(t);                         // without the first barrier: write
    __syncthreads();                         // removable: first barrier
    float value = s[(t + 1) % (2 * lanes)];  // without the first barrier: read
    __syncthreads();
    value += __shfl_xor_sync(0xffffffffu, value, 1);
    out[t] = value;
}

// ---- planted bugs ------------------------------------------------------------------------------

__global__ void missing_barrier_kernel(const float* in, float* out) {
    __shared__ float s[2 * lanes];
    const int t = threadIdx.x;
    s[t] = in[t];                       // planted: missing_barrier first
    out[t] = s[(t + 1) % (2 * lanes)];  // planted: missing_barrier second
}

__global__ void lost_update_kernel(const float* in, float* out) {
    __shared__ float sum;
    if (threadIdx.x == 0) sum = 0.0f;
    __syncthreads();
    sum += in[threadIdx.x];  // planted: lost_update first
    __syncthreads();
    if (threadIdx.x == 0) out[0] = sum;
}

__global__ void two_blocks_one_element_kernel(float* out) {
    if (threadIdx.x == 0) out[0] = float(blockIdx.x);  // planted: two_blocks_one_element first
}

// Blocks 0 and 2 write byte 0 of one word, block 1 its byte 1: in block order, a write of another
// byte lies between the two that race.
__global__ void two_blocks_one_byte_kernel(unsigned char* out) {
    if (threadIdx.x == 0) out[blockIdx.x == 1 ? 1 : 0] = 1;  // planted: two_blocks_one_byte first
}

// A tree reduction of 32 values inside one warp. Its steps read what other lanes wrote the step
// before: only __syncwarp() orders them (lanes of a warp are not in lock-step since Volta).
__global__ void warp_reduction_kernel(const float* in, float* out, bool with_syncwarp) {
    __shared__ float s[lanes];
    const int lane = threadIdx.x;
    s[lane] = in[lane];
    __syncwarp();
    for (int stride = lanes / 2; stride > 0; stride /= 2) {
        if (lane < stride) {
            const float other = s[lane + stride];  // planted: warp_step_without_syncwarp second
            s[lane] += other;                      // planted: warp_step_without_syncwarp first
        }
        if (with_syncwarp) __syncwarp();  // removable: syncwarp
    }
    if (lane == 0) out[0] = s[0];
}

// __syncwarp() orders the lanes of one warp only: warp 1 reading warp 0's slots races with them.
__global__ void warps_across_syncwarp_kernel(const float* in, float* out) {
    __shared__ float s[2 * lanes];
    const int t = threadIdx.x;
    s[t] = in[t];  // planted: warps_across_syncwarp first
    __syncwarp();
    out[t] = s[(t + lanes) % (2 * lanes)];  // planted: warps_across_syncwarp second
}

__global__ void unwritten_static_shared_kernel(float* out) {
    __shared__ float s[2][lanes];
    s[0][threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] =
        s[0][threadIdx.x] + s[1][threadIdx.x];  // planted: unwritten_static_shared first
}

// Block 0 writes a row of static __shared__; block 1 reads it without writing it. On a GPU, block
// 1 finds whatever the last block on its multiprocessor left there: block 0's values, or none.
__global__ void shared_left_by_earlier_block_kernel(float* out) {
    __shared__ float s[lanes];
    if (blockIdx.x == 0) {
        s[threadIdx.x] = 1.0f;
        return;
    }
    out[threadIdx.x] = s[threadIdx.x];  // planted: shared_left_by_earlier_block first
}

__global__ void write_past_end_kernel(float* out, int n) {
    out[threadIdx.x + 1] = 1.0f;  // planted: write_past_end first
    (void)n;
}

__global__ void write_inside_kernel(float* out) { out[threadIdx.x] = 1.0f; }

__global__ void missing_bounds_check_kernel(const float* in, float* out, int n) {
    const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
    out[i] = fmaxf(in[i], 0.0f);  // planted: missing_bounds_check first
    (void)n;
}

__global__ void shuffle_outside_own_mask_kernel(float* out) {
    const float value = __shfl_xor_sync(0x0000ffffu, float(threadIdx.x), 1);
    out[threadIdx.x] = value;
}

__global__ void shuffle_naming_exited_lane_kernel(float* out) {
    if (threadIdx.x >= 16) return;
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, float(threadIdx.x), 1);
}

// ---- partial masks: each kernel first writes its shared row, so no read finds it unwritten --

// Lanes 0..15 pass two __syncwarp(0x0000ffff) and lane 16 none: lane 0's write after them and
// lane 16's read are not ordered, however many warp operations lie behind lane 0 alone.
__global__ void partial_syncwarp_leaves_lane_out_kernel(float* out) {
    __shared__ float s[lanes];
    const int lane = threadIdx.x;
    s[lane] = 0.0f;
    __syncthreads();
    if (lane < 16) {
        __syncwarp(0x0000ffffu);
        __syncwarp(0x0000ffffu);
        if (lane == 0) s[0] = 1.0f;  // planted: partial_syncwarp_leaves_lane_out first
    } else if (lane == 16) {
        out[0] = s[0];  // planted: partial_syncwarp_leaves_lane_out second
    }
}

// Each half of the warp passes a __syncwarp of its own, which orders nothing across the halves.
__global__ void syncwarp_of_other_half_kernel(float* out) {
    __shared__ float s[lanes];
    const int lane = threadIdx.x;
    s[lane] = 0.0f;
    __syncthreads();
    if (lane == 0) s[0] = 1.0f;  // planted: syncwarp_of_other_half first
    __syncwarp(lane < 16 ? 0x0000ffffu : 0xffff0000u);
    if (lane == 16) out[0] = s[0];  // planted: syncwarp_of_other_half second
}

// Each half reads its neighbour's slot, written before the half's own __syncwarp.
__global__ void partial_syncwarp_orders_its_lanes_kernel(float* out) {
    __shared__ float s[lanes];
    const int lane = threadIdx.x;
    const int half = lane & 16;  // the first lane of its half
    s[lane] = float(lane);
    __syncwarp(lane < 16 ? 0x0000ffffu : 0xffff0000u);
    out[lane] = s[half + (lane + 1) % 16];
}

// Lanes 0 and 1 sync, then lanes 1 and 2: lane 1 carries what lane 0 did before the first to
// lane 2 after the second. Lane 0 writing after its __syncwarp breaks the chain.
__global__ void syncwarp_chain_kernel(float* out, bool write_after_first) {
    __shared__ float s[lanes];
    const int lane = threadIdx.x;
    s[lane] = 0.0f;
    __syncthreads();
    if (lane == 0 && !write_after_first) s[0] = 1.0f;
    if (lane <= 1) __syncwarp(0b011u);
    if (lane == 0 && write_after_first) s[0] = 1.0f;  // planted: syncwarp_chain_broken first
    if (lane == 1 || lane == 2) __syncwarp(0b110u);
    if (lane == 2) out[0] = s[0];  // planted: syncwarp_chain_broken second
}

// Lane 0 syncs with lane 3, writes, then syncs with lane 2, which reads: ordered, though each
// access comes after one warp operation of its lane.
__global__ void syncwarp_chain_at_equal_epochs_kernel(float* out) {
    __shared__ float s[lanes];
    const int lane = threadIdx.x;
    s[lane] = 0.0f;
    __syncthreads();
    if (lane == 0 || lane == 3) __syncwarp(0b1001u);
    if (lane == 0) s[0] = 1.0f;
    if (lane == 0 || lane == 2) __syncwarp(0b0101u);
    if (lane == 2) out[0] = s[0];
}

}  // namespace

void run_pattern(Pattern pattern, const int* host_index) {
    DeviceArray<float> in(std::vector<float>(lanes * lanes, 1.0f));
    DeviceArray<int> index(std::vector<int>(host_index, host_index + lanes));
    DeviceArray<float> out(std::vector<float>(lanes, 0.0f));
    gpu::launch(pattern_kernel, dim3(1), dim3(lanes), 0, pattern, in.get(), index.get(), out.get());
}

void run_barriers_and_shuffle() {
    DeviceArray<float> out(2 * lanes);
    gpu::launch(barriers_and_shuffle_kernel, dim3(1), dim3(2 * lanes), 0, out.get());
}

void write_past_end_of(float* buffer) {
    gpu::launch(write_past_end_kernel, dim3(1), dim3(lanes), 0, buffer, lanes);
}

void write_inside(float* buffer) {
    gpu::launch(write_inside_kernel, dim3(1), dim3(lanes), 0, buffer);
}

void run_planted(Planted bug) {
    DeviceArray<float> in(std::vector<float>(2 * lanes, 1.0f));
    DeviceArray<float> out(2 * lanes);
    switch (bug) {
        case Planted::missing_barrier:
            gpu::launch(missing_barrier_kernel, dim3(1), dim3(2 * lanes), 0, in.get(), out.get());
            break;
        case Planted::lost_update:
            gpu::launch(lost_update_kernel, dim3(1), dim3(2 * lanes), 0, in.get(), out.get());
            break;
        case Planted::two_blocks_one_element:
            gpu::launch(two_blocks_one_element_kernel, dim3(2), dim3(lanes), 0, out.get());
            break;
        case Planted::two_blocks_one_byte:  // the bytes of out[0]
            gpu::launch(two_blocks_one_byte_kernel, dim3(3), dim3(lanes), 0,
                        reinterpret_cast<unsigned char*>(out.get()));
            break;
        case Planted::warp_step_without_syncwarp:
        case Planted::warp_step_with_syncwarp:
            gpu::launch(warp_reduction_kernel, dim3(1), dim3(lanes), 0, in.get(), out.get(),
                        bug == Planted::warp_step_with_syncwarp);
            break;
        case Planted::warps_across_syncwarp:
            gpu::launch(warps_across_syncwarp_kernel, dim3(1), dim3(2 * lanes), 0, in.get(),
                        out.get());
            break;
        case Planted::unwritten_static_shared:
            gpu::launch(unwritten_static_shared_kernel, dim3(1), dim3(lanes), 0, out.get());
            break;
        case Planted::shared_left_by_earlier_block:
            gpu::launch(shared_left_by_earlier_block_kernel, dim3(2), dim3(lanes), 0, out.get());
            break;
        case Planted::write_past_end: {
            DeviceArray<float> exact(lanes);
            gpu::launch(write_past_end_kernel, dim3(1), dim3(lanes), 0, exact.get(), lanes);
            break;
        }
        case Planted::missing_bounds_check: {
            // Lesson 01's exercise 2: 253 threads read and write past the end, 1012 bytes.
            constexpr int n = 4099, threads = 256, blocks = (n + threads - 1) / threads;
            DeviceArray<float> x(n), y(n);
            gpu::launch(missing_bounds_check_kernel, dim3(blocks), dim3(threads), 0, x.get(),
                        y.get(), n);
            break;
        }
        case Planted::shuffle_outside_own_mask:
            gpu::launch(shuffle_outside_own_mask_kernel, dim3(1), dim3(lanes), 0, out.get());
            break;
        case Planted::shuffle_naming_exited_lane:
            gpu::launch(shuffle_naming_exited_lane_kernel, dim3(1), dim3(lanes), 0, out.get());
            break;
        case Planted::partial_syncwarp_leaves_lane_out:
            gpu::launch(partial_syncwarp_leaves_lane_out_kernel, dim3(1), dim3(lanes), 0,
                        out.get());
            break;
        case Planted::syncwarp_of_other_half:
            gpu::launch(syncwarp_of_other_half_kernel, dim3(1), dim3(lanes), 0, out.get());
            break;
        case Planted::partial_syncwarp_orders_its_lanes:
            gpu::launch(partial_syncwarp_orders_its_lanes_kernel, dim3(1), dim3(lanes), 0,
                        out.get());
            break;
        case Planted::syncwarp_chain:
        case Planted::syncwarp_chain_broken:
            gpu::launch(syncwarp_chain_kernel, dim3(1), dim3(lanes), 0, out.get(),
                        bug == Planted::syncwarp_chain_broken);
            break;
        case Planted::syncwarp_chain_at_equal_epochs:
            gpu::launch(syncwarp_chain_at_equal_epochs_kernel, dim3(1), dim3(lanes), 0, out.get());
            break;
    }
}

}  // namespace triptych::sim_tests
