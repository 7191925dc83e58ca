// Removing a barrier without editing a kernel: TRIPTYCH_SIM_SKIP_SYNC=FILE:LINE[,FILE:LINE...]
// makes every __syncthreads() and __syncwarp() called at those lines return at once, as if it had
// been deleted from the source. A learner drops a barrier, reruns `triptych check` in each thread
// order and under the race checker, and sees what each of them makes of the race (lesson 03's
// table of removed barriers is made this way), then unsets the variable: nothing to rebuild,
// nothing to forget to put back.
//
// FILE is the end of the path, whole names only: "gemm.cu:96" names line 96 of every file whose
// path ends in /gemm.cu (gpu/tiled/gemm.cu, and gpu/naive/gemm.cu if it had a barrier there),
// "gpu/tiled/gemm.cu:96" that one file's, "emm.cu:96" none. The first skip at each site is
// announced on stderr; at exit, a site where no barrier ran is named there too, so that a wrong
// line number cannot pass for a barrier whose removal is harmless.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

namespace triptych::sim {

// One FILE:LINE of TRIPTYCH_SIM_SKIP_SYNC.
struct BarrierSite {
    std::string file;  // as given: the end of the path
    unsigned line = 0;
    std::string str() const { return file + ":" + std::to_string(line); }
};

// Parses "FILE:LINE[,FILE:LINE...]" ("" is none); InvalidArgument, naming the item, for an item
// without a file or whose line is not a number from 1.
std::vector<BarrierSite> parse_barrier_sites(const std::string& text);

// The sites removed now: TRIPTYCH_SIM_SKIP_SYNC's, read at the first barrier (or at
// check_environment), until set_removed_barriers replaces them.
std::vector<BarrierSite> removed_barriers();
// Replaces the removed sites (the tests' knob; "" restores every barrier). Call it between
// launches, not during one.
void set_removed_barriers(const std::string& text);

// Whether the barrier called at `where` is removed; counts the call, and announces the site's
// first one on stderr. Cheap when no site is removed: the simulator asks at every barrier.
bool barrier_removed(const std::source_location& where);

// How many calls (one per CUDA thread that reached it) have been skipped at `site`, one of
// removed_barriers()'s, since it was set; 0 for a site not removed.
std::uint64_t removed_barrier_calls(const std::string& site);

}  // namespace triptych::sim
