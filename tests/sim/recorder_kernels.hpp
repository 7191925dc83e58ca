// The host side of the access recorder's test kernels (tests/sim/recorder.cu): small kernels whose
// counters and races are known by hand. Each function launches one kernel and returns nothing;
// recorder_test.cpp turns the recorder on, calls one, and reads what was counted or found.
#pragma once

namespace triptych::sim_tests {

// One warp (32 threads, one block) reading 32 values in one of these patterns, then storing one
// float per lane, coalesced. Counted by hand in recorder_test.cpp.
enum class Pattern {
    global_coalesced,      // in[lane]
    global_strided,        // in[32 * lane]: every lane its own sector
    global_gather,         // in[index[lane]]
    global_float2,         // float2 in[lane]
    global_float4,         // float4 in[lane]
    global_divergent,      // in[lane] on even lanes only
    global_ldg,            // __ldg(in + lane), through the read-only cache
    global_loop_skip,      // in[32 * t + lane] for t < 4, odd lanes skipping t = 0
    shared_conflict_free,  // s[lane]
    shared_two_way,        // s[2 * lane]
    shared_32_way,         // s[32 * lane]
    shared_broadcast,      // s[0]
    shared_float2,         // float2 s[lane]
    shared_float4,         // float4 s[lane]
    global_atomic,         // atomicAdd(&out[0], 1)
};
// `index` (32 ints) is read only by global_gather.
void run_pattern(Pattern pattern, const int* host_index);

// Two warps (64 threads): two __syncthreads() and one __shfl_xor_sync by every lane.
void run_barriers_and_shuffle();

// On `buffer` (32 floats, from gpu::device_allocate, kept by the caller between launches): one
// warp writes buffer[lane + 1], the last lane one float past the end; or buffer[lane], inside.
void write_past_end_of(float* buffer);
void write_inside(float* buffer);

// Classic bugs, each planted in a small kernel of its own. The line the race checker must name
// for each is marked in recorder.cu with a comment "// planted: <name> <first|second>".
enum class Planted {
    missing_barrier,               // a neighbour's shared slot read with no __syncthreads()
    lost_update,                   // s += x on one shared float by every thread
    two_blocks_one_element,        // out[0] written by thread 0 of each of two blocks
    two_blocks_one_byte,           // blocks 0 and 2 write byte 0 of a word, block 1 byte 1
    warp_step_without_syncwarp,    // a warp-synchronous tree reduction without __syncwarp()
    warp_step_with_syncwarp,       // the same, correct: __syncwarp() between its steps
    warps_across_syncwarp,         // warp 1 reads what warp 0 wrote, ordered only by __syncwarp()
    unwritten_static_shared,       // reads a row of static __shared__ no thread wrote
    shared_left_by_earlier_block,  // block 1 reads static __shared__ only block 0 wrote
    write_past_end,                // writes one float past the end of a device buffer
    missing_bounds_check,          // ReLU without `if (i < n)`: 17 blocks of 256 for n = 4099
    shuffle_outside_own_mask,      // lanes 16..31 call __shfl_xor_sync with mask 0x0000ffff
    shuffle_naming_exited_lane,    // lanes 16..31 have returned; 0..15 shuffle with the full mask
    // Partial masks: a __syncwarp orders the lanes of its mask only, and chains of them order
    // lanes that never sync together.
    partial_syncwarp_leaves_lane_out,   // lanes 0..15 pass two __syncwarp(0x0000ffff), then lane
                                        // 0 writes what lane 16, in none, reads
    syncwarp_of_other_half,             // lane 0 writes before its half's __syncwarp, lane 16
                                        // reads after the other half's
    partial_syncwarp_orders_its_lanes,  // each half exchanges across its own __syncwarp: no race
    syncwarp_chain,                     // lanes 0-1 sync, then 1-2: lane 0's write before the
                                        // first, lane 2's read after the second: no race
    syncwarp_chain_broken,              // the same, lane 0 writing after its __syncwarp
    syncwarp_chain_at_equal_epochs,     // lane 0 syncs with lane 3, writes, syncs with lane 2,
                                        // which reads: no race, both after one warp operation
};
void run_planted(Planted bug);

}  // namespace triptych::sim_tests
