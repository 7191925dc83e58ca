// The host side of the simulator's test kernels (tests/sim/*.cu). Each function runs one small
// kernel on the inputs it is given and returns what the kernel wrote, so that the Catch2 tests
// (tests/sim/*_test.cpp) stay plain C++ and the .cu files stay valid CUDA.
//
// A rejected launch, a kernel's exception, a divergent barrier or a deadlock comes out of these
// functions as the exception launch() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace triptych::sim_tests {

// A grid or block shape (dim3 without CUDA's headers).
struct Extent {
    unsigned x = 1, y = 1, z = 1;
};

// ---- builtins.cu -------------------------------------------------------------------------------

// What one CUDA thread saw, stored at its global linear id
// ((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * threads per block
//  + (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x.
struct ThreadRecord {
    int thread[3];   // threadIdx.x, .y, .z
    int block[3];    // blockIdx.x, .y, .z
    int dims_match;  // 1 if blockDim and gridDim equal the launch's shape
    int writes;      // how many threads wrote this record (atomicAdd)
};
std::vector<ThreadRecord> record_thread_indices(Extent grid, Extent block);

// ---- shared_memory.cu --------------------------------------------------------------------------

// Thread 0 of block b stores block_values[b] in a __shared__ variable; after __syncthreads()
// every thread of the block outputs it. Returns blocks * threads_per_block values.
std::vector<float> broadcast_through_shared(const std::vector<float>& block_values,
                                            int threads_per_block);

// Per-block sums by a tree reduction in shared memory (256 threads, static __shared__ array).
std::vector<float> block_sums_static_shared(const std::vector<float>& values);
inline constexpr int static_reduction_block = 256;
// The same with dynamic shared memory sized for any block size.
std::vector<float> block_sums_dynamic_shared(const std::vector<float>& values,
                                             int threads_per_block);

// `blocks` blocks of 128 threads each write their block id to a __shared__ array, then check
// it `rounds` times across barriers. Returns the number of mismatches seen and, per block, the
// address of its shared array (distinct addresses: blocks ran on distinct OS threads).
struct SharedOwnership {
    int mismatches = 0;
    std::vector<unsigned long long> shared_addresses;
};
SharedOwnership check_shared_ownership(int blocks, int rounds);

// Each of `rounds` rounds: thread t stores t * rounds + round in its shared slot, barrier, adds
// the slot (t + round) % blockDim.x to its total, barrier. Returns every thread's total.
std::vector<int> rotating_exchange(int blocks, int threads_per_block, int rounds);

// Thread t stores in[i] in its shared slot and outputs slot t - 1 (thread 0: its own), with or
// without a __syncthreads() between the store and the load. Blocks of 256 threads.
std::vector<float> left_neighbour(const std::vector<float>& in, bool with_barrier);
inline constexpr int left_neighbour_block = 256;
extern const int left_neighbour_barrier_line;  // the with-barrier kernel's __syncthreads()

// ---- warp.cu -----------------------------------------------------------------------------------

enum class Shuffle {
    broadcast,  // __shfl_sync(full, v, parameter, width)
    rotate,     // __shfl_sync(full, v, lane + parameter, width): lane index wraps within width
    up,         // __shfl_up_sync(full, v, parameter, width)
    down,       // __shfl_down_sync(full, v, parameter, width)
    xor_lanes,  // __shfl_xor_sync(full, v, parameter, width)
};
struct ShuffleCase {
    Shuffle kind;
    int parameter;
    int width;
};
// Block b, of 64 threads (two warps), performs cases[b] on in[64 b .. 64 b + 63]; one launch for
// all cases. in.size() is 64 * cases.size().
std::vector<int> shuffle(const std::vector<ShuffleCase>& cases, const std::vector<int>& in);
std::vector<float> shuffle(const std::vector<ShuffleCase>& cases, const std::vector<float>& in);
std::vector<double> shuffle(const std::vector<ShuffleCase>& cases, const std::vector<double>& in);
inline constexpr int warp_test_block = 64;  // two warps: the block size of the warp tests

// Only the even lanes exchange with __shfl_xor_sync(0x55555555, v, 2); odd lanes keep their value.
std::vector<int> shuffle_even_lanes_only(const std::vector<int>& in);

// Per thread of blocks of 64: ballot(lane % 3 == warp % 3), any(lane == 17), any(false),
// all(lane < 32), all(lane != 5), where `warp` counts warps across the grid.
struct Votes {
    unsigned ballot;
    int any_lane_17, any_false, all_true, all_but_lane_5;
};
std::vector<Votes> vote(int blocks);

// Lane l of each warp stores in[i] to shared memory, then outputs lane (l + 1) % 32's value,
// with or without __syncwarp() between. Blocks of 64 threads.
std::vector<int> warp_neighbour(const std::vector<int>& in, bool with_syncwarp);

// The same, but even lanes call __syncwarp() on one line and odd lanes on another.
std::vector<int> syncwarp_in_both_branches(const std::vector<int>& in);

// Even lanes output lane l + 1's in[i] and odd lanes lane 0's, each side through its own
// __shfl_sync() line. Blocks of 64 threads.
std::vector<int> shuffle_in_both_branches(const std::vector<int>& in);

// One warp; lanes 0 and 1 store in[lane], then lane 1 calls __syncwarp(0b10) and both call
// __syncwarp(0b11) on one line; lane l outputs in[1 - l].
std::vector<int> syncwarp_after_a_solo_one(const std::vector<int>& in);

// One warp: v = in[lane]; lanes 0..15 run `v += __shfl_xor_sync(mask, v, 1)` twice, first with
// mask 0x0000ffff and then with the full mask, lanes 16..31 once with the full mask; out = v.
std::vector<int> shuffle_across_iterations(const std::vector<int>& in);

// Block sums (256 threads): __shfl_down_sync within each warp, then across the warps' results.
std::vector<float> block_sums_by_warp_shuffles(const std::vector<float>& values);
// Every lane receives its warp's sum through a __shfl_xor_sync butterfly.
std::vector<double> warp_all_reduce(const std::vector<double>& values);

// Blocks of 40 threads: warp 1 has only 8 lanes and uses the mask 0xff. Per warp (lane 0):
// the sum of its inputs (guarded __shfl_down_sync), ballot(input is odd), all(true), any(lane is
// the warp's last).
struct PartialWarp {
    int sum;
    unsigned odd_ballot;
    int all_true, any_last_lane;
};
std::vector<PartialWarp> partial_warp_votes_and_sum(const std::vector<int>& in);
inline constexpr int partial_warp_block = 40;

// ---- atomics.cu --------------------------------------------------------------------------------

// atomicAdd(int) into `bins` bins from a grid-stride loop over 64 blocks.
std::vector<int> histogram(const std::vector<int>& values, int bins);
// atomicAdd(float) of every value into one total, one thread per value.
float atomic_float_sum(const std::vector<float>& values);
// atomicMax(int) of every value.
int atomic_int_max(const std::vector<int>& values);
// A float maximum by an atomicCAS loop on the float's bits, as CUDA code must write it.
float atomic_float_max_by_cas(const std::vector<float>& values);
// Thread i takes a ticket with atomicAdd(counter, 1) and writes i at that ticket.
std::vector<int> atomic_tickets(int threads);
// Thread i swaps i into one slot (initially -1) with atomicExch and writes the old value to
// previous[i]. Returns previous, followed by the slot's final value.
std::vector<int> atomic_exchange_chain(int threads);

// ---- failures.cu -------------------------------------------------------------------------------

// Thread `thrower` (a global index, < blocks * 128) throws InvalidArgument("thread <thrower> ...")
// from a helper, before any barrier.
void throw_from_thread(int blocks, int thrower);
// The same, but between two barriers that the other threads of the block wait at.
void throw_between_barriers(int blocks, int thrower);
// Thread 0 of every block throws.
void throw_from_every_block(int blocks);
// Thread 0 of blocks `slow` and `fast` throws "thread <its global index> was told to throw", the
// slow one after a pause.
void throw_from_two_blocks(int blocks, int slow, int fast);

// Even threads wait at one __syncthreads() line, odd threads at another.
void divergent_barrier();
extern const char* const divergent_barrier_file;
extern const int divergent_barrier_even_line, divergent_barrier_odd_line;

// Lane 0 waits at __syncthreads() while lanes 1..31 wait at a __syncwarp() (or a shuffle) that
// needs lane 0: nobody can go on.
void barrier_against_syncwarp();
void barrier_against_shuffle();
extern const char* const deadlock_file;
extern const int deadlock_syncthreads_line, deadlock_syncwarp_line;
extern const int deadlock_shuffle_syncthreads_line, deadlock_shuffle_line;

// Warp operations that never meet: lane 0 calls __syncwarp(0x3) while lanes 1..31 call
// __syncwarp() (masks differ), or lanes 0..15 shuffle while lanes 16..31 call __syncwarp().
void syncwarp_masks_disagree();
void shuffle_against_syncwarp();
extern const int disagreeing_masks_first_line, disagreeing_masks_second_line;
extern const int shuffle_against_syncwarp_first_line, shuffle_against_syncwarp_second_line;

// Threads n..63 of a 64-thread block return before the __syncthreads(); threads 0..n-1 then
// output their right neighbour's shared slot (t + 1) % n, which held 3 * ((t + 1) % n).
std::vector<int> early_exit_then_barrier(int n);

// ---- launch_checks.cu --------------------------------------------------------------------------

// Launches a kernel in which every thread does atomicAdd(counter, 1); returns the count.
long long count_threads(Extent grid, Extent block, std::size_t dynamic_shared_bytes = 0);
// Fills `bytes` of dynamic shared memory (a multiple of 4) word by word, reads every word back
// after a barrier; returns whether every word held what was written.
bool fill_dynamic_shared(std::size_t bytes);
// Launches a kernel with a host (std::vector) pointer as its argument.
void launch_with_host_pointer();
// out[i] = in ? in[i] : -1 for 64 threads, launched with in = a device array of i, or nullptr.
std::vector<float> copy_or_default(bool pass_null);
// out[i] = 2 * in[i] + 1, where `in` is a fresh device allocation nothing wrote.
std::vector<float> compute_on_unwritten_memory(int n);

// ---- tensor_cores.cu ---------------------------------------------------------------------------

// D = A * B + C by one warp's TF32 wmma::mma_sync (m16n16k8): A 16 x 8 stored row-major, B 8 x 16
// stored column-major, C 16 x 16 row-major. `rows` is D stored row-major, `columns` D stored
// column-major. `threads` is the block's size: 32, or fewer to leave lanes out.
struct MmaResult {
    std::vector<float> rows, columns;
};
MmaResult tensor_core_tf32(const std::vector<float>& a, const std::vector<float>& b,
                           const std::vector<float>& c, unsigned threads = 32);
// D = A * B by one warp's BF16 mma_sync (m16n16k16), A and B 16 x 16 row-major floats that the
// kernel rounds to __nv_bfloat16 in shared memory; D row-major.
std::vector<float> tensor_core_bf16(const std::vector<float>& a, const std::vector<float>& b);
// D = A * B + C by one warp's PTX mma.sync.aligned.m16n8k8 on TF32 (gpu/runtime/mma_sync.hpp):
// A 16 x 8, B 8 x 8 and C 16 x 8, all row-major, each lane loading its fragments by the PTX ISA's
// layout; D row-major. `threads` is the block's size: 32, or fewer to leave lanes out.
std::vector<float> mma_sync_tf32(const std::vector<float>& a, const std::vector<float>& b,
                                 const std::vector<float>& c, unsigned threads = 32);
// One warp loads a TF32 A tile (16 x 8, row-major) from a device buffer + `offset` floats with
// leading dimension `load_ldm`, and stores an accumulator to another buffer + `offset` with
// `store_ldm` (each at most 64). CUDA needs each tile 32-byte aligned and each ldm a multiple of
// 16 bytes; the buffers themselves start 256-byte aligned, as cudaMalloc's do.
void wmma_tile_rules(int offset, unsigned load_ldm, unsigned store_ldm);
// What wmma::__float_to_tf32 (first) and a round trip through __nv_bfloat16 (second) make of
// each value.
std::pair<std::vector<float>, std::vector<float>> tensor_core_roundings(
    const std::vector<float>& values);

// ---- oob_write.cu (a separate executable, for AddressSanitizer) --------------------------------

// Thread `count` of a 128-thread block writes one element past a `count`-float device_allocate
// buffer, either at once or after a __syncthreads().
void write_one_past_the_end(int count, bool after_barrier);

// ---- streams.cu --------------------------------------------------------------------------------
// Kernels issued to the calling thread's current stream (gpu/runtime/stream.hpp); they return at
// once on a GPU, and the tests order them with events.

// x[i] += 1 for i < n.
void add_one(float* x, std::int64_t n);
extern const int add_one_launch_line;  // the launch() of add_one
// out[i] = 2 * in[i] for i < n.
void double_into(const float* in, float* out, std::int64_t n);
extern const int double_into_launch_line;
// The same, with in and out handed to the kernel inside a struct argument that declares which of
// its pointers the kernel reads and which it writes (`declared`), or that does not.
void double_through_table(const float* in, float* out, std::int64_t n, bool declared);

}  // namespace triptych::sim_tests
