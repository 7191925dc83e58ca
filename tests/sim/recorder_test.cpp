// The access recorder: each counter on a kernel whose answer is known by hand, and each planted
// race named with the file:line of both accesses (tests/sim/recorder.cu marks those lines).
#include <omp.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <string>

#include "common/registry.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/runtime/sim/occupancy.hpp"
#include "gpu/runtime/sim/recorder.hpp"
#include "gpu/tiled/ops.hpp"
#include "tests/sim/recorder_kernels.hpp"
#include "tests/sim/test_support.hpp"
#include "triptych_config.hpp"

namespace triptych::sim_tests {
namespace {

using sim::AccessCounts;
using sim::Space;

// Records in `mode` until the end of the scope.
class ScopedRecordMode {
public:
    explicit ScopedRecordMode(sim::RecordMode mode) : saved_(sim::record_mode()) {
        sim::set_record_mode(mode);
        sim::take_profiles();
    }
    ~ScopedRecordMode() { sim::set_record_mode(saved_); }
    ScopedRecordMode(const ScopedRecordMode&) = delete;
    ScopedRecordMode& operator=(const ScopedRecordMode&) = delete;

private:
    sim::RecordMode saved_;
};

const int identity_index[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

sim::LaunchProfile profile_of(Pattern pattern, const int* index = identity_index) {
    ScopedRecordMode recording({true, false});
    run_pattern(pattern, index);
    auto profiles = sim::take_profiles();
    REQUIRE(profiles.size() == 1);
    return profiles[0];
}

// requests, units (sectors or wavefronts), ideal units, lanes, all summed over the launch.
void require_counts(const AccessCounts& c, std::uint64_t requests, std::uint64_t units,
                    std::uint64_t ideal, std::uint64_t lanes) {
    CHECK(c.requests == requests);
    CHECK(c.units == units);
    CHECK(c.ideal_units == ideal);
    CHECK(c.lanes == lanes);
}

const std::string kernels_file = std::string(TRIPTYCH_SOURCE_DIR) + "/tests/sim/recorder.cu";

// "recorder.cu:NN" of the line marked "// <mark>".
std::string line_marked(const std::string& mark) {
    std::ifstream file(kernels_file);
    std::string text;
    for (int line = 1; std::getline(file, text); ++line)
        if (text.find("// " + mark) != std::string::npos) return file_and_line(kernels_file, line);
    FAIL("no line of " << kernels_file << " is marked '" << mark << "'");
    return "";
}

// The line marked "// planted: <bug> <which>".
std::string marked_line(const std::string& bug, const std::string& which) {
    return line_marked("planted: " + bug + " " + which);
}

std::string race_report(Planted bug) {
    ScopedRecordMode checking({false, true});
    return message_of<CudaError>([&] { run_planted(bug); });
}

}  // namespace

TEST_CASE("the recorder counts a coalesced, a strided and a gather load in 32-byte sectors",
          "[recorder]") {
    // 32 lanes x 4 bytes, contiguous: 4 sectors, all needed.
    require_counts(total(profile_of(Pattern::global_coalesced), Space::global, false), 1, 4, 4, 32);
    // 128 bytes apart: 32 sectors for 128 bytes that would fit in 4.
    require_counts(total(profile_of(Pattern::global_strided), Space::global, false), 1, 32, 4, 32);
    // The index load (4 sectors), then in[index[lane]]: lanes 0..15 read floats 0, 64, 128, ...
    // (16 sectors), lanes 16..31 read floats 1, 65, ... (the same 16 sectors).
    int spread[32];
    for (int lane = 0; lane < 32; ++lane) spread[lane] = (lane % 16) * 64 + lane / 16;
    const sim::LaunchProfile gather = profile_of(Pattern::global_gather, spread);
    require_counts(total(gather, Space::global, false), 2, 4 + 16, 4 + 4, 64);
    // Every lane's store of out[lane]: 4 sectors.
    require_counts(total(gather, Space::global, true), 1, 4, 4, 32);
}

TEST_CASE("the recorder counts 8- and 16-byte global loads and a divergent one", "[recorder]") {
    require_counts(total(profile_of(Pattern::global_float2), Space::global, false), 1, 8, 8, 32);
    const AccessCounts float4 = total(profile_of(Pattern::global_float4), Space::global, false);
    require_counts(float4, 1, 16, 16, 32);
    CHECK(float4.bytes == 32 * 16);
    CHECK(float4.lane_bytes == 32 * 16);
    // Even lanes only: 16 lanes, whose 64 bytes are spread over all 4 sectors (ideal 2). Every lane
    // that ran the load ran it once: the grouping is exact.
    const AccessCounts divergent =
        total(profile_of(Pattern::global_divergent), Space::global, false);
    require_counts(divergent, 1, 4, 2, 16);
    CHECK(divergent.uneven_requests == 0);
}

TEST_CASE("requests of lanes that skip different loop iterations are counted as uneven",
          "[recorder]") {
    // A GPU issues 4 requests, one per iteration: t = 0 by the 16 even lanes, then all 32 lanes,
    // 4 sectors each, 16 in all. The simulator groups each lane's k-th load: the even lanes' t = k
    // with the odd lanes' t = k + 1, 8 sectors for k < 3, then the even lanes' t = 3 alone, 28 in
    // all. The lanes ran the load 4 and 3 times, so all 4 requests are uneven.
    const AccessCounts skip = total(profile_of(Pattern::global_loop_skip), Space::global, false);
    require_counts(skip, 4, 8 + 8 + 8 + 4, 4 + 4 + 4 + 2, 32 + 32 + 32 + 16);
    CHECK(skip.uneven_requests == 4);
    // A convergent loop is never uneven.
    CHECK(total(profile_of(Pattern::global_coalesced), Space::global, false).uneven_requests == 0);
}

TEST_CASE("the recorder counts shared-memory wavefronts: no conflict, 2-way, 32-way, broadcast",
          "[recorder]") {
    // The fill: 32 rows, each a conflict-free store of 32 lanes.
    const sim::LaunchProfile free = profile_of(Pattern::shared_conflict_free);
    require_counts(total(free, Space::shared, true), 32, 32, 32, 32 * 32);
    require_counts(total(free, Space::shared, false), 1, 1, 1, 32);
    // s[2 * lane]: lanes l and l + 16 share bank 2l mod 32 with different words.
    require_counts(total(profile_of(Pattern::shared_two_way), Space::shared, false), 1, 2, 1, 32);
    // s[32 * lane]: every lane in bank 0.
    require_counts(total(profile_of(Pattern::shared_32_way), Space::shared, false), 1, 32, 1, 32);
    // One word for all: no conflict; 4 distinct bytes, asked for by 32 lanes.
    const AccessCounts broadcast =
        total(profile_of(Pattern::shared_broadcast), Space::shared, false);
    require_counts(broadcast, 1, 1, 1, 32);
    CHECK(broadcast.bytes == 4);
    CHECK(broadcast.lane_bytes == 32 * 4);
}

TEST_CASE("8- and 16-byte shared loads are served a half- and a quarter-warp at a time",
          "[recorder]") {
    require_counts(total(profile_of(Pattern::shared_float2), Space::shared, false), 1, 2, 2, 32);
    require_counts(total(profile_of(Pattern::shared_float4), Space::shared, false), 1, 4, 4, 32);
}

TEST_CASE("the recorder counts atomics apart from loads and stores", "[recorder]") {
    const sim::LaunchProfile p = profile_of(Pattern::global_atomic);
    require_counts(total(p, Space::global, true, true), 1, 1, 1, 32);
    CHECK(total(p, Space::global, true).requests == 0);
}

TEST_CASE("the recorder counts barriers and warp operations per warp, and names the kernel",
          "[recorder]") {
    ScopedRecordMode recording({true, false});
    run_barriers_and_shuffle();
    const auto profiles = sim::take_profiles();
    REQUIRE(profiles.size() == 1);
    CHECK(profiles[0].warps == 2);
    CHECK(profiles[0].barriers == 2 * 2);
    CHECK(profiles[0].warp_operations == 2);
    CHECK_THAT(profiles[0].kernel, Catch::Contains("barriers_and_shuffle_kernel"));
    // s[(t + 1) % 64]: one request per warp, each conflict-free.
    require_counts(total(profiles[0], Space::shared, false), 2, 2, 2, 64);
}

TEST_CASE("every counted site maps to a line of the kernel's file", "[recorder]") {
    const sim::LaunchProfile p = profile_of(Pattern::shared_32_way);
    std::vector<std::uintptr_t> sites;
    for (const sim::SiteCounts& s : p.sites) sites.push_back(s.site);
    for (const sim::SourceLine& line : sim::source_lines(sites))
        CHECK_THAT(line.file_line, Catch::StartsWith("tests/sim/recorder.cu:"));
}

TEST_CASE("a load the simulator's headers make for a kernel is counted at the kernel's line",
          "[recorder]") {
    // __ldg is a function of gpu/runtime/sim/sim.hpp, inlined into the kernel: the site is the
    // kernel's line that calls it, not sim.hpp's line that reads memory.
    const sim::LaunchProfile p = profile_of(Pattern::global_ldg);
    require_counts(total(p, Space::global, false), 1, 4, 4, 32);
    std::vector<std::string> loads;
    for (const sim::SiteCounts& s : p.sites)
        if (s.space == Space::global && !s.store)
            loads.push_back(sim::source_lines({s.site})[0].file_line);
    REQUIRE(loads.size() == 1);
    CHECK(loads[0] == "tests/sim/" + line_marked("counted: global_ldg"));
}

TEST_CASE("the race checker names a missing barrier with both lines and threads", "[racecheck]") {
    const std::string report = race_report(Planted::missing_barrier);
    CHECK_THAT(report, Catch::Contains("shared memory, read after write") ||
                           Catch::Contains("shared memory, write after read"));
    CHECK_THAT(report, Catch::Contains(marked_line("missing_barrier", "first")));
    CHECK_THAT(report, Catch::Contains(marked_line("missing_barrier", "second")));
    CHECK_THAT(report, Catch::Contains("thread (") && Catch::Contains("of block (0,0,0)"));
}

TEST_CASE(
    "a barrier removed by TRIPTYCH_SIM_SKIP_SYNC is not counted, and is a race the checker "
    "names",
    "[racecheck]") {
    {
        ScopedRemovedBarriers removed(line_marked("removable: first barrier"));
        {
            ScopedRecordMode recording({true, false});
            run_barriers_and_shuffle();
            const auto profiles = sim::take_profiles();
            REQUIRE(profiles.size() == 1);
            CHECK(profiles[0].barriers == 1 * 2);  // the second, in each of the two warps
        }
        ScopedRecordMode checking({false, true});
        const std::string report = message_of<CudaError>([] { run_barriers_and_shuffle(); });
        CHECK_THAT(report, Catch::Contains(line_marked("without the first barrier: write")));
        CHECK_THAT(report, Catch::Contains(line_marked("without the first barrier: read")));
    }
    {
        ScopedRemovedBarriers removed(line_marked("removable: syncwarp"));
        const std::string report = race_report(Planted::warp_step_with_syncwarp);
        CHECK_THAT(report, Catch::Contains("in one warp with no __syncwarp()"));
    }
    ScopedRecordMode checking({false, true});  // and with both put back, no race
    CHECK_NOTHROW(run_barriers_and_shuffle());
    CHECK_NOTHROW(run_planted(Planted::warp_step_with_syncwarp));
}

TEST_CASE("the race checker catches a lost update on shared memory, which no thread order shows",
          "[racecheck]") {
    const std::string report = race_report(Planted::lost_update);
    CHECK_THAT(report, Catch::Contains("shared memory"));
    CHECK_THAT(report, Catch::Contains(marked_line("lost_update", "first")));
}

TEST_CASE("the race checker catches two blocks writing one global element", "[racecheck]") {
    const std::string report = race_report(Planted::two_blocks_one_element);
    CHECK_THAT(report, Catch::Contains("global memory, two blocks write one element"));
    CHECK_THAT(report, Catch::Contains("of block (0,0,0)") && Catch::Contains("of block (1,0,0)"));
    CHECK_THAT(report, Catch::Contains(marked_line("two_blocks_one_element", "first")));
}

TEST_CASE("the race checker catches two blocks writing one byte with another block's byte between",
          "[racecheck]") {
    const std::string report = race_report(Planted::two_blocks_one_byte);
    CHECK_THAT(report, Catch::Contains("global memory, two blocks write one element"));
    CHECK_THAT(report, Catch::Contains("of block (0,0,0)") && Catch::Contains("of block (2,0,0)"));
    CHECK_THAT(report, Catch::Contains(marked_line("two_blocks_one_byte", "first")));
}

TEST_CASE("the race checker catches a warp-synchronous step without __syncwarp, and passes it with",
          "[racecheck]") {
    const std::string report = race_report(Planted::warp_step_without_syncwarp);
    CHECK_THAT(report, Catch::Contains("in one warp with no __syncwarp()"));
    CHECK_THAT(report, Catch::Contains(marked_line("warp_step_without_syncwarp", "first")));
    ScopedRecordMode checking({false, true});
    CHECK_NOTHROW(run_planted(Planted::warp_step_with_syncwarp));
}

TEST_CASE("the race checker catches warps ordered only by __syncwarp, which orders one warp",
          "[racecheck]") {
    const std::string report = race_report(Planted::warps_across_syncwarp);
    CHECK_THAT(report, Catch::Contains("with no __syncthreads() between them"));
    CHECK_THAT(report, Catch::Contains(marked_line("warps_across_syncwarp", "first")));
    CHECK_THAT(report, Catch::Contains(marked_line("warps_across_syncwarp", "second")));
}

TEST_CASE(
    "the race checker catches lanes a partial __syncwarp leaves out, however many warp "
    "operations the other lane passed",
    "[racecheck]") {
    // Lane 0's write comes after two warp operations, lane 16's read after none (or after one of
    // its own half): counts that differ, yet nothing links the two lanes.
    for (Planted bug :
         {Planted::partial_syncwarp_leaves_lane_out, Planted::syncwarp_of_other_half}) {
        const std::string name = bug == Planted::syncwarp_of_other_half
                                     ? "syncwarp_of_other_half"
                                     : "partial_syncwarp_leaves_lane_out";
        INFO(name);
        const std::string report = race_report(bug);
        CHECK_THAT(report, Catch::Contains("in one warp with no __syncwarp()"));
        CHECK_THAT(report, Catch::Contains("thread (0,0,0)") && Catch::Contains("thread (16,0,0)"));
        CHECK_THAT(report, Catch::Contains(marked_line(name, "first")));
        CHECK_THAT(report, Catch::Contains(marked_line(name, "second")));
    }
}

TEST_CASE(
    "a partial __syncwarp orders the lanes of its mask, and a chain of them orders lanes that "
    "never sync together",
    "[racecheck]") {
    {
        ScopedRecordMode checking({false, true});
        CHECK_NOTHROW(run_planted(Planted::partial_syncwarp_orders_its_lanes));
        CHECK_NOTHROW(run_planted(Planted::syncwarp_chain));
        CHECK_NOTHROW(run_planted(Planted::syncwarp_chain_at_equal_epochs));
    }
    // A chain that starts before lane 0's write orders nothing after it.
    const std::string report = race_report(Planted::syncwarp_chain_broken);
    CHECK_THAT(report, Catch::Contains("in one warp with no __syncwarp()"));
    CHECK_THAT(report, Catch::Contains(marked_line("syncwarp_chain_broken", "first")));
    CHECK_THAT(report, Catch::Contains(marked_line("syncwarp_chain_broken", "second")));
}

TEST_CASE("the race checker catches a read of static shared memory no thread of the block wrote",
          "[racecheck]") {
    const std::string report = race_report(Planted::unwritten_static_shared);
    CHECK_THAT(report, Catch::Contains("read of shared memory that no thread of this block wrote"));
    CHECK_THAT(report, Catch::Contains(marked_line("unwritten_static_shared", "first")));
}

TEST_CASE("the race checker forgets at each block what the blocks before it wrote in shared memory",
          "[racecheck]") {
    // On one OS thread, block 1 runs after block 0, in the same static shared memory (the
    // simulator's __shared__ is thread_local), and finds block 0's row there: a read of memory
    // that no thread of block 1 wrote all the same.
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const std::string report = race_report(Planted::shared_left_by_earlier_block);
    omp_set_num_threads(threads);
    CHECK_THAT(report, Catch::Contains("read of shared memory that no thread of this block wrote"));
    CHECK_THAT(report, Catch::Contains(marked_line("shared_left_by_earlier_block", "first")));
    CHECK_THAT(report, Catch::Contains("of block (1,0,0)"));
}

TEST_CASE("a write past the end of a device buffer fails the launch, and the checker names it",
          "[racecheck]") {
    // Without the recorder: the guard bytes after the buffer are found changed.
    // Run again block by block with the guard watched, the launch names the thread that wrote.
    const std::string plain = message_of<CudaError>([] { run_planted(Planted::write_past_end); });
    CHECK_THAT(plain, Catch::Contains("wrote past the end of a device buffer of 128 bytes"));
    CHECK_THAT(plain, Catch::Contains("thread (31,0,0) of block (0,0,0) wrote there first"));
    // With it: the thread, its block and the line.
    const std::string report = race_report(Planted::write_past_end);
    CHECK_THAT(report, Catch::Contains("access past the end of a device buffer: thread (31,0,0)"));
    CHECK_THAT(report, Catch::Contains(marked_line("write_past_end", "first")));
}

TEST_CASE("a launch that wrote past a buffer's end leaves its guard intact for the next launch",
          "[racecheck]") {
    const std::shared_ptr<float> buffer = gpu::device_allocate(32);  // as the kernels expect
    // Found by the guard bytes, then by the race checker: either way the next, correct launch on
    // the same buffer passes (it was once blamed for the guard the failed launch left changed).
    CHECK_THAT(message_of<CudaError>([&] { write_past_end_of(buffer.get()); }),
               Catch::Contains("wrote past the end"));
    CHECK_NOTHROW(write_inside(buffer.get()));
    {
        ScopedRecordMode checking({false, true});
        CHECK_THAT(message_of<CudaError>([&] { write_past_end_of(buffer.get()); }),
                   Catch::Contains("access past the end of a device buffer"));
    }
    CHECK_NOTHROW(write_inside(buffer.get()));
}

TEST_CASE("a grid without its bounds check fails its launch instead of corrupting the heap",
          "[racecheck]") {
    // 253 surplus threads write up to 1012 bytes past y's end: inside the guard, found there.
    // Thread 3 of the last block writes y[4099], the first float past the end, in every order.
    for (const char* order : {"forward", "reverse", "random:7"}) {
        ScopedThreadOrder scoped(order);
        INFO("order " << order);
        const std::string plain =
            message_of<CudaError>([] { run_planted(Planted::missing_bounds_check); });
        CHECK_THAT(plain, Catch::Contains("wrote past the end of a device buffer of 16396 bytes"));
        CHECK_THAT(plain, Catch::Contains("thread (3,0,0) of block (16,0,0) wrote there first"));
    }
    const std::string report = race_report(Planted::missing_bounds_check);
    CHECK_THAT(report, Catch::Contains("access past the end of a device buffer"));
    CHECK_THAT(report, Catch::Contains(marked_line("missing_bounds_check", "first")));
}

TEST_CASE("a warp operation whose mask leaves out its own lane, or names an exited lane, fails",
          "[recorder]") {
    CHECK_THAT(message_of<CudaError>([] { run_planted(Planted::shuffle_outside_own_mask); }),
               Catch::Contains("which leaves itself out"));
    CHECK_THAT(message_of<CudaError>([] { run_planted(Planted::shuffle_naming_exited_lane); }),
               Catch::Contains("but that lane has exited"));
}

TEST_CASE(
    "theoretical occupancy is limited by threads, registers or shared memory, as CUDA's "
    "calculator says",
    "[occupancy]") {
    const sim::GpuLimits& h200 = sim::h200();
    // 8 warps per block, 32 registers: 8 blocks fill the SM's 64 warps (threads and registers
    // both allow exactly 8).
    const sim::Occupancy full = theoretical_occupancy(h200, 256, 0, {32, 0, 0});
    CHECK(full.blocks == 8);
    CHECK(full.fraction == 1.0);
    // 194 registers: 194 * 32 = 6208, rounded to 6400 per warp; 65536 / 6400 = 10 warps: 1 block.
    const sim::Occupancy registers = theoretical_occupancy(h200, 256, 0, {194, 0, 0});
    CHECK(registers.blocks == 1);
    CHECK(registers.warps == 8);
    CHECK(registers.limit == "registers");
    // 48 KiB of dynamic shared memory plus the 1 KiB reserved: 228 / 49 = 4 blocks.
    const sim::Occupancy shared = theoretical_occupancy(h200, 128, 48 * 1024, {16, 0, 0});
    CHECK(shared.blocks == 4);
    CHECK(shared.limit == "shared memory");
    // Blocks of 32 threads: the 32-block limit binds at half the warps.
    const sim::Occupancy small = theoretical_occupancy(h200, 32, 0, {16, 0, 0});
    CHECK(small.blocks == 32);
    CHECK(small.fraction == 0.5);
    CHECK(small.limit == "blocks");
}

TEST_CASE("nvcc's resource usage report is read per kernel and architecture", "[occupancy]") {
    const std::string report =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function '_ZN8triptych4testEPfi' for 'sm_90'\n"
        "ptxas info    : Function properties for _ZN8triptych4testEPfi\n"
        "    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 8448 bytes smem, 368 bytes cmem[0]\n"
        "ptxas info    : Compiling entry function '_ZN8triptych4testEPfi' for 'sm_80'\n"
        "ptxas info    : Function properties for _ZN8triptych4testEPfi\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 38 registers, 368 bytes cmem[0]\n";
    const auto lines = sim::parse_resource_usage(report);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].kernel == "triptych::test(float*, int)");
    CHECK(lines[0].arch == "sm_90");
    CHECK(lines[0].resources.registers == 40);
    CHECK(lines[0].resources.static_shared == 8448);
    CHECK(lines[0].resources.stack_bytes == 8);
    CHECK(lines[1].arch == "sm_80");
    CHECK(lines[1].resources.registers == 38);
    CHECK(lines[1].resources.static_shared == 0);
}

TEST_CASE("the divergent and the convergent tree of gpu_tiled's sum differ in requests, not lanes",
          "[recorder]") {
    // n = 1024 is one block of 256 threads (8 warps) in the fast mode, which launches once. The
    // tree has 8 steps; each active thread loads partial[t] and partial[t + s] and stores
    // partial[t]. Both trees do the same 255 additions (511 lanes of loads counting thread 0's
    // final read of partial[0], and 256 + 255 lanes of stores); what differs is how many warp
    // requests carry them.
    std::vector<float> ones(1024, 1.0f);
    auto shared_counts = [&](const std::string& version) {
        Backend& gpu = backend(version);
        const Tensor x = gpu.upload({1024}, ones);
        ScopedRecordMode recording({true, false});
        CHECK(gpu.sum(x, Reduction::fast) == 1024.0f);
        auto profiles = sim::take_profiles();
        REQUIRE(profiles.size() == 1);
        return std::pair{total(profiles[0], Space::shared, false),
                         total(profiles[0], Space::shared, true)};
    };
    // Interleaved: thread t adds when t is a multiple of 2s. For s = 1..16 every warp has
    // 32 / 2s active lanes (5 steps x 8 warps), for s = 32, 64, 128: 4, 2 and 1 warps of one lane.
    // Loads: 2 x 47 + 1; stores: 8 (the fill) + 47.
    const auto [interleaved_loads, interleaved_stores] = shared_counts("gpu_tiled@2");
    require_counts(interleaved_loads, 95, 95, 95, 511);
    require_counts(interleaved_stores, 55, 55, 55, 511);
    // Sequential: threads 0..s-1 add, so whole warps drop out: 4, 2, 1 full warps for s = 128,
    // 64, 32, then one warp of 16, 8, 4, 2, 1 lanes. Loads: 2 x 12 + 1; stores: 8 + 12.
    const auto [sequential_loads, sequential_stores] = shared_counts("gpu_tiled@3");
    require_counts(sequential_loads, 25, 25, 25, 511);
    require_counts(sequential_stores, 20, 20, 20, 511);
}

TEST_CASE("gpu_tiled's bias_add reads the bias as float4s when the columns come in fours",
          "[recorder]") {
    // 8 x 64 and 8 x 66 floats: one block of 256 threads, 128 and 132 float4s, so warps 0-3 take
    // a float4 each (warp 4 has 4 lanes in the second case) and every lane of the first four
    // warps loads 16 bytes of x per request. With 64 columns the four bias values of a float4
    // are one float4 of bias: as many bias requests as x's, each the 256 bytes of the bias (a
    // warp's 128 elements are two rows), 8 sectors. With 66 they are four loads 16 bytes apart
    // across the lanes: 4 requests per x request, each touching four times the sectors it needs.
    auto bias_loads = [](std::int64_t cols) {
        Backend& gpu = backend("gpu_tiled@2");
        const Tensor x = gpu.upload({8, cols}, std::vector<float>(std::size_t(8 * cols), 1.0f));
        const Tensor bias = gpu.upload({cols}, std::vector<float>(std::size_t(cols), 2.0f));
        Tensor y = gpu.allocate({8, cols});
        ScopedRecordMode recording({true, false});
        gpu.bias_add(x, bias, y);
        auto profiles = sim::take_profiles();
        REQUIRE(profiles.size() == 1);
        return total(profiles[0], Space::global, false);  // x's loads and the bias's
    };
    const AccessCounts aligned = bias_loads(64);  // 4 warps: 4 x requests, 4 bias requests
    CHECK(aligned.requests == 4 + 4);
    CHECK(aligned.units == 4 * 16 + 4 * 8);
    CHECK(aligned.ideal_units == aligned.units);
    const AccessCounts unaligned = bias_loads(66);  // 5 warps: 5 x requests, 4 x 5 bias requests
    CHECK(unaligned.requests == 5 + 4 * 5);
    // x's requests take 4 x 16 sectors and 2 for warp 4's 64 bytes, their ideal; the bias's the
    // rest, more than twice theirs.
    const std::uint64_t x_sectors = 4 * 16 + 2;
    CHECK(unaligned.units - x_sectors > 2 * (unaligned.ideal_units - x_sectors));
}

TEST_CASE(
    "gpu_tiled's version 3 of softmax loads each element once: half the global load requests of "
    "version 2, and the same stores",
    "[recorder]") {
    // Two shapes within the register bound (16 384). 8 x 100: a warp per row, one block of 8
    // warps; each warp covers its row in 4 steps of 32 columns (the last with lanes 0-3), one
    // request per step. 2 x 2000: a block of 512 threads (16 warps) per row; thread t takes
    // columns t, t + 512, t + 1024 and, for t < 464, t + 1536, so warps 0-14 make 4 steps (warp
    // 14 with 16 lanes at the fourth) and warp 15 makes 3: 63 requests per row.
    // Forward, per step: version 2 loads x in the (max, sum) pass and again in the write pass,
    // version 3 once; both store y once. 8 x 100: 8 * 4 * 2 = 64 loads against 32, 32 stores;
    // 2 x 2000: 2 * 63 * 2 = 252 against 126, 126 stores.
    // Backward, per step: version 2 loads dy and y for the dot product and both again for dx,
    // version 3 each once: 8 * 4 * 4 = 128 against 64, and 2 * 63 * 4 = 504 against 252.
    auto counted = [](const std::string& version, const Shape& shape, bool forward) {
        Backend& gpu = backend(version);
        std::vector<float> values(static_cast<std::size_t>(shape.elements()));
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i % 19) * 0.125f - 1.0f;
        const Tensor in = gpu.upload(shape, values);
        Tensor y = gpu.allocate(shape);
        gpu.softmax_forward(in, y);  // y: a softmax, the backward's input
        Tensor out = gpu.allocate(shape);
        ScopedRecordMode recording({true, false});
        if (forward)
            gpu.softmax_forward(in, out);
        else
            gpu.softmax_backward(y, in, out);
        auto profiles = sim::take_profiles();
        REQUIRE(profiles.size() == 1);
        return std::pair{total(profiles[0], Space::global, false),
                         total(profiles[0], Space::global, true)};
    };
    struct Case {
        Shape shape;
        bool forward;
        std::uint64_t version_2_loads, version_3_loads, stores;
    };
    for (const Case& c :
         {Case{{8, 100}, true, 64, 32, 32}, Case{{2, 2000}, true, 252, 126, 126},
          Case{{8, 100}, false, 128, 64, 32}, Case{{2, 2000}, false, 504, 252, 126}}) {
        INFO((c.forward ? "forward " : "backward ") << c.shape[0] << " x " << c.shape[1]);
        const auto [two_loads, two_stores] = counted("gpu_tiled@2", c.shape, c.forward);
        const auto [three_loads, three_stores] = counted("gpu_tiled@3", c.shape, c.forward);
        CHECK(two_loads.requests == c.version_2_loads);
        CHECK(three_loads.requests == c.version_3_loads);
        // Each element of each input loaded twice by version 2, once by version 3.
        const std::uint64_t elements = (c.forward ? 1 : 2) * std::uint64_t(c.shape.elements());
        CHECK(two_loads.lanes == 2 * elements);
        CHECK(three_loads.lanes == elements);
        CHECK(two_stores.requests == c.stores);
        CHECK(three_stores.requests == c.stores);
    }
}

TEST_CASE("version 3's padding column takes its transposing stores from 32-way conflicts to none",
          "[recorder]") {
    // gpu_tiled@3 at 64 x 64 x 64 with A transposed (TN): 2 x 2 blocks of 32 warps, 2 steps of k,
    // so 256 warp stores into As and 256 into Bs. Lane tx of a warp stores As[tx][ty]: with a
    // 32-float row that is word 32 tx + ty, bank ty for every lane (32 wavefronts); with the
    // padding column it is word 33 tx + ty, bank (tx + ty) mod 32, all different (1 wavefront).
    // Bs[ty][tx] is one row either way (1 wavefront). Lesson 03 quotes these counts.
    Backend& gpu = backend("gpu_tiled@3");
    std::vector<float> values(64 * 64);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i % 13) * 0.25f - 1.5f;
    const Tensor A = gpu.upload({64, 64}, values), B = gpu.upload({64, 64}, values);
    Tensor C = gpu.upload({64, 64}, values);
    const GemmShape shape{64, 64, 64, true, false, 1.0f, 0.0f};
    auto shared_stores = [&](auto run) {
        ScopedRecordMode recording({true, false});
        run();
        auto profiles = sim::take_profiles();
        REQUIRE(profiles.size() == 1);
        return total(profiles[0], Space::shared, true);
    };
    const AccessCounts padded = shared_stores([&] { gpu.gemm(shape, A, B, C); });
    require_counts(padded, 512, 512, 512, 512 * 32);
    const AccessCounts unpadded = shared_stores(
        [&] { gpu_tiled::gemm_shared_tiles_unpadded(shape, A.data(), B.data(), C.data()); });
    require_counts(unpadded, 512, 256 * 32 + 256, 512, 512 * 32);
    // The padding changes where the tiles lie, not what is computed: the same C, and no race.
    const std::vector<float> padded_c = gpu.download(C);
    ScopedRecordMode checking({false, true});
    gpu_tiled::gemm_shared_tiles_unpadded(shape, A.data(), B.data(), C.data());
    CHECK(gpu.download(C) == padded_c);
}

TEST_CASE("the DRAM model counts each sector a launch touches once, however many requests ask",
          "[recorder]") {
    // gpu_naive's GEMM at 64 x 64 x 64 (NN, beta = 0): 64 x 64 threads, each reading a row of A
    // and a column of B, 2 x 64 x 64 x 64 float loads in 16384 requests. A and B are 64 x 64
    // floats each, 512 sectors of 32 bytes: 1024 sectors from DRAM; C is written once, 512.
    // (Device buffers start 256-byte aligned, so no sector is shared between matrices.)
    Backend& gpu = backend("gpu_naive");
    std::vector<float> values(64 * 64, 0.5f);
    const Tensor A = gpu.upload({64, 64}, values), B = gpu.upload({64, 64}, values);
    Tensor C = gpu.upload({64, 64}, values);
    ScopedRecordMode recording({true, false});
    gpu.gemm(GemmShape{64, 64, 64, false, false, 1.0f, 0.0f}, A, B, C);
    auto profiles = sim::take_profiles();
    REQUIRE(profiles.size() == 1);
    CHECK(total(profiles[0], Space::global, false).requests == 2 * 64 * 64 * 64 / 32);
    CHECK(profiles[0].dram_read_sectors == 1024);
    CHECK(profiles[0].dram_write_sectors == 512);
}

TEST_CASE(
    "implicit GEMM's forward pass is one launch that moves x, w, b and y once; im2col's "
    "three launches write and read its patches and its GEMM's output besides",
    "[recorder]") {
    // N2 C3 H9 W10, 5 filters of 3x3, stride 1, pad 1: y is 2 x 5 x 9 x 10 floats. im2col's
    // patches are C*R*S x N*P*Q = 27 x 180, its GEMM's output Y as many floats as y. Every x is
    // read by some window. Device buffers start 256-byte aligned (as the workspace's matrices
    // do), so each tensor's sectors are its bytes / 32, rounded up. Lesson 09 quotes these counts.
    Backend& gpu = backend("gpu_tiled");
    const Conv2dShape s{2, 3, 9, 10, 5, 3, 3, 1, 1, 1, 1};
    const auto sectors = [](std::int64_t floats) { return std::uint64_t((4 * floats + 31) / 32); };
    const std::int64_t x_floats = s.x_shape().elements(), w_floats = s.w_shape().elements();
    const std::int64_t y_floats = s.y_shape().elements(), patch_floats = 27 * 180;
    std::vector<float> values(static_cast<std::size_t>(x_floats));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i % 11) * 0.25f - 1.0f;
    const Tensor x = gpu.upload(s.x_shape(), values);
    const Tensor w = gpu.upload(s.w_shape(), std::vector<float>(std::size_t(w_floats), 0.5f));
    const Tensor b = gpu.upload(s.b_shape(), std::vector<float>(5, 0.25f));
    Tensor y = gpu.allocate(s.y_shape());
    struct Moved {
        std::size_t launches = 0;
        std::uint64_t stored_floats = 0, dram_read = 0, dram_write = 0;
    };
    const auto moved = [&](ConvAlgorithm algorithm) {
        ScopedRecordMode recording({true, false});
        gpu.conv2d_forward(s, algorithm, x, w, b, y);
        Moved m;
        for (const sim::LaunchProfile& p : sim::take_profiles()) {
            ++m.launches;
            m.stored_floats += total(p, Space::global, true).lane_bytes / 4;
            m.dram_read += p.dram_read_sectors;
            m.dram_write += p.dram_write_sectors;
        }
        return m;
    };
    const Moved implicit = moved(ConvAlgorithm::implicit_gemm);
    CHECK(implicit.launches == 1);
    CHECK(implicit.stored_floats == std::uint64_t(y_floats));
    CHECK(implicit.dram_read == sectors(x_floats) + sectors(w_floats) + sectors(5));
    CHECK(implicit.dram_write == sectors(y_floats));
    // im2col_kernel: x -> patches; the GEMM: w, patches -> Y; swap_leading_axes: Y, b -> y.
    const Moved im2col = moved(ConvAlgorithm::im2col);
    CHECK(im2col.launches == 3);
    CHECK(im2col.stored_floats == std::uint64_t(patch_floats + 2 * y_floats));
    CHECK(im2col.dram_read == sectors(x_floats) + sectors(w_floats) + sectors(patch_floats) +
                                  sectors(y_floats) + sectors(5));
    CHECK(im2col.dram_write == sectors(patch_floats) + 2 * sectors(y_floats));
}

TEST_CASE(
    "implicit GEMM's staged stores write whole sectors in every pass, and its shared-memory "
    "accesses have no bank conflicts",
    "[recorder]") {
    // Lesson 09's exercise shape: N2 C16 12x12, 32 filters of 3x3, pad 1. P*Q = H*W = 144 and
    // C*R*S = 144 are multiples of 16, so every 16-column piece of a warp's patch row starts a
    // sector of y, dx and dw (or of the weights' partial sums) and lies within one row of it:
    // with the stores staged, each store request needs only the sectors its bytes fill. Before,
    // a store wrote 4 floats 16 bytes apart to each of 8 rows of C.
    Backend& gpu = backend("gpu_tiled");
    const Conv2dShape s{2, 16, 12, 12, 32, 3, 3, 1, 1, 1, 1};
    // The counts depend on the addresses only, not on the values.
    const auto filled = [&](const Shape& shape) {
        std::vector<float> values(static_cast<std::size_t>(shape.elements()));
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i % 7) * 0.5f - 1.5f;
        return gpu.upload(shape, values);
    };
    const Tensor x = filled(s.x_shape()), w = filled(s.w_shape()), b = filled(s.b_shape());
    const Tensor dy = filled(s.y_shape());
    Tensor y = gpu.allocate(s.y_shape()), dx = gpu.allocate(s.x_shape());
    Tensor dw = gpu.allocate(s.w_shape()), db = gpu.allocate(s.b_shape());
    const auto check_stores = [&](const char* pass, std::int64_t written_floats, const auto& run) {
        INFO(pass);
        ScopedRecordMode recording({true, false});
        run();
        AccessCounts stored, shared_loads, shared_stores;
        for (const sim::LaunchProfile& p : sim::take_profiles()) {
            if (p.kernel.find("implicit_gemm_kernel") == std::string::npos) continue;
            stored += total(p, Space::global, true);
            shared_loads += total(p, Space::shared, false);
            shared_stores += total(p, Space::shared, true);
        }
        CHECK(stored.lane_bytes == std::uint64_t(4 * written_floats));
        CHECK(stored.requests > 0);
        CHECK(stored.units == stored.ideal_units);
        CHECK(shared_loads.units == shared_loads.ideal_units);
        CHECK(shared_stores.units == shared_stores.ideal_units);
    };
    check_stores("forward", s.y_shape().elements(),
                 [&] { gpu.conv2d_forward(s, ConvAlgorithm::implicit_gemm, x, w, b, y); });
    check_stores("backward data", s.x_shape().elements(),
                 [&] { gpu.conv2d_backward_data(s, ConvAlgorithm::implicit_gemm, dy, w, dx); });
    // The reduction (2 x 144 outputs) is short enough for one split: the GEMM writes dw itself.
    check_stores("backward weights", s.w_shape().elements(), [&] {
        gpu.conv2d_backward_weights(s, ConvAlgorithm::implicit_gemm, x, dy, dw, db);
    });
}

}  // namespace triptych::sim_tests
