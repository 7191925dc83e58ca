// The simulator's access recorder: what a kernel's warps ask of memory, counted as Nsight Compute
// counts it, and the races between its threads. Off unless asked for; a program records only in
// its instrumented copy (see "How accesses are seen" below).
//
//   TRIPTYCH_SIM_PROFILE=1    count every launch: global sectors per request, shared-memory
//                             wavefronts and bank conflicts, active lanes, barriers, warp
//                             operations, atomics; per kernel launch and per source line
//                             (`triptych profile` prints them); and, modelled, the launch's
//                             DRAM traffic (its distinct global sectors).
//   TRIPTYCH_SIM_RACECHECK=1  check every launch: shared-memory hazards between threads of a block
//                             within one barrier interval (read after write, write after read,
//                             write after write), the same for global memory within a block,
//                             global writes by two blocks to one element, reads of shared memory
//                             that no thread of the block wrote, and accesses past the end of a
//                             device buffer. A launch with any of these throws CudaError naming
//                             both accesses (file:line) and both threads.
//
// How accesses are seen. Every kernel file is compiled a second time (cmake/gpu.cmake,
// TRIPTYCH_SIM_RECORDER_FLAGS) with GCC's ThreadSanitizer instrumentation, which calls a function
// before each load and store with its address (gpu/runtime/sim/instrumented.cpp supplies them).
// The recorder keeps the accesses of a running kernel to device buffers and to shared memory (the
// block's dynamic shared buffer, and the OS thread's thread-local storage, where static __shared__
// lives) and drops the rest (local variables, kernel arguments). Kernels are written as before:
// nothing in them changes.
//
// How accesses become warp requests. Lanes of a warp do not run in lock-step here, so the k-th
// execution of one access instruction by each lane of a warp, since the warp's last barrier or
// warp operation, is one request: the grouping a GPU makes for convergent code. In a loop that
// some lanes skip iterations of (`if (outside) continue;`), a lane's k-th execution may belong to
// a later iteration than its neighbours', and the simulator groups what a GPU issues apart: more
// sectors per request and fewer requests than ncu counts. The accesses alone cannot tell that
// from lanes that only stop early, as in the last round of a grid-stride loop (exact), so the
// requests of lanes that ran an instruction different numbers of times are counted as uneven
// (AccessCounts) and `triptych profile --lines` marks their lines; lanes that skip the same
// number of different iterations look convergent.
//
// Programs and their instrumented copies. Every program is built twice in a sim build with GCC
// (not under the sanitizers): as itself, and with the instrumented kernels as instrumented/<name>
// next to it. Started with TRIPTYCH_SIM_PROFILE or TRIPTYCH_SIM_RACECHECK set, the plain program
// runs its instrumented copy in its own place (same arguments, same environment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace triptych::sim {

// Whether this program's kernels were compiled with the recorder's instrumentation.
bool recorder_available();

struct RecordMode {
    bool profile = false;
    bool racecheck = false;
    bool any() const { return profile || racecheck; }
};
// Read from TRIPTYCH_SIM_PROFILE and TRIPTYCH_SIM_RACECHECK ("1" turns each on) at start-up.
RecordMode record_mode();
// Throws CudaError when recording is asked for and the kernels are not instrumented.
void set_record_mode(RecordMode mode);
// For a command that records: sets `mode` here, or, in a plain program, sets the environment for
// it and runs the instrumented copy with the same arguments (this call then never returns).
// Throws CudaError when there is no instrumented copy.
void ensure_recorder(RecordMode mode);

// ---- what the profile counts -------------------------------------------------------------------

enum class Space : std::uint8_t { global, shared };

// One access instruction's requests, summed over a launch. For global memory `units` are 32-byte
// sectors and `ideal_units` the sectors the requested bytes would need if they were contiguous;
// for shared memory `units` are wavefronts (one per pass through the 32 banks) and `ideal_units`
// the wavefronts without bank conflicts. `lanes` sums the lanes taking part in each request.
struct AccessCounts {
    std::uint64_t requests = 0;
    std::uint64_t units = 0;
    std::uint64_t ideal_units = 0;
    std::uint64_t lanes = 0;
    std::uint64_t bytes = 0;       // requested by the lanes, each distinct byte once
    std::uint64_t lane_bytes = 0;  // requested by each lane, summed (a broadcast counts 32 times)
    // Requests grouped from lanes that ran the instruction different numbers of times in one
    // epoch: exact where some lanes only stopped early (a grid-stride loop's last round),
    // approximate where some skipped iterations in between (see "How accesses become warp
    // requests" above).
    std::uint64_t uneven_requests = 0;
    AccessCounts& operator+=(const AccessCounts& other);
};

struct SiteCounts {
    std::uintptr_t site = 0;  // an address in the kernel's code: one per access instruction
    Space space = Space::global;
    bool store = false;
    bool atomic = false;
    AccessCounts counts;
};

struct LaunchProfile {
    std::string kernel;       // the kernel function's name
    std::string launch_site;  // file:line of the launch(...) call
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    std::size_t dynamic_shared_bytes = 0;
    std::uint64_t warps = 0;            // warps launched
    std::uint64_t barriers = 0;         // __syncthreads() executed, counted per warp
    std::uint64_t warp_operations = 0;  // shuffles, votes and __syncwarp, counted per warp
    std::vector<SiteCounts> sites;      // ordered by site
    // Modelled, not counted: the distinct 32-byte sectors of global memory the launch loads and
    // stores (an atomic does both). That is its DRAM traffic if the L2 cache starts empty at the
    // launch and holds everything the launch touches: each sector comes from DRAM once, however
    // many requests ask for it (a launch that touches more than the L2 holds reads more).
    std::uint64_t dram_read_sectors = 0;
    std::uint64_t dram_write_sectors = 0;
};

// Totals of a launch's sites in one space and direction (atomics apart).
AccessCounts total(const LaunchProfile& launch, Space space, bool store, bool atomic = false);

// The launches recorded since the last call, in launch order (profile mode).
std::vector<LaunchProfile> take_profiles();

// "gpu/tiled/gemm_v3_shared_tiles.cu:57" for a site, and the name of the function around it.
struct SourceLine {
    std::string file_line;
    std::string function;
};
// One call resolves many sites (it runs addr2line once); a site without line information gets
// its hexadecimal address.
std::vector<SourceLine> source_lines(const std::vector<std::uintptr_t>& sites);

// ---- the counting rules, for one warp-level request (requests.cpp) -----------------------------

struct LaneAccess {
    int lane = 0;  // 0..31
    std::uintptr_t address = 0;
    unsigned size = 0;  // bytes
};
struct RequestCost {
    std::uint64_t units = 0;  // sectors (global) or wavefronts (shared)
    std::uint64_t ideal_units = 0;
    std::uint64_t bytes = 0;
};
// Global memory: the distinct 32-byte sectors the lanes touch, and the sectors their distinct
// bytes would fill if packed (ceil(bytes / 32)).
RequestCost global_request_cost(const std::vector<LaneAccess>& lanes);
// Shared memory: 32 banks of 4 bytes. Accesses of 8 bytes are served a half-warp at a time and of
// 16 bytes a quarter-warp at a time; each such phase takes as many wavefronts as its busiest bank
// has distinct 4-byte words (lanes reading one word share it). Ideal: one wavefront per phase
// that has a lane in it. Bank conflicts = units - ideal_units.
RequestCost shared_request_cost(const std::vector<LaneAccess>& lanes);

// ---- hooks the scheduler (sim.cpp) and the built-ins (sim.hpp) call -----------------------------

namespace recorder {

// Set while any recording mode is on: the atomics of sim.hpp then report themselves (a plain
// global: a kernel reading it is not an access to shared memory).
inline bool recording = false;

struct Launch;  // one launch being recorded (recorder.cpp)

Launch* launch_begin(const void* kernel, const unsigned grid[3], const unsigned block[3],
                     std::size_t dynamic_shared_bytes, const std::string& launch_site);
// On each OS thread that runs blocks of `launch`, around its blocks.
void worker_begin(Launch* launch, void* dynamic_shared, std::size_t dynamic_shared_bytes);
void worker_end(Launch* launch);
void block_begin(Launch* launch, std::uint64_t block_number, const unsigned block_index[3],
                 std::size_t threads);
// The scheduler resumes thread `slot` of the running block.
void thread_resumed(std::size_t slot);
// Every live thread of the block passed a __syncthreads().
void barrier_released(std::size_t warps_waiting);
// Lanes `mask` of the warp starting at slot `first` passed one warp operation.
void warp_released(std::size_t first, unsigned mask);
void block_end();
// After every block ran: merges, checks the grid as a whole, and throws CudaError for the races
// found (racecheck mode).
void launch_end(Launch* launch);
// After a launch that failed on its own (a kernel threw, a deadlock): forgets it.
void launch_abandoned(Launch* launch);

// One access by the running CUDA thread, from the instrumentation (instrumented.cpp); `site` is the
// access instruction's address.
void record(std::uintptr_t address, unsigned size, bool is_store, std::uintptr_t site);
// Called by the atomics in sim.hpp while `recording` is set.
void note_atomic(const void* address, unsigned size);

}  // namespace recorder
}  // namespace triptych::sim
