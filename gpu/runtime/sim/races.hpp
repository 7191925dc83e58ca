// The race checker's rules, over the accesses the recorder saw (recorder.cpp calls these).
//
// Two accesses race when they touch one byte, at least one writes, neither is an atomic, they
// come from different threads, and nothing orders them: within one block, a __syncthreads()
// between them orders them (so only one barrier interval is ever compared), and inside one warp
// so can warp operations and __syncwarp (WarpClocks says which). Across blocks nothing orders
// two writes of one launch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace triptych::sim {

// One lane's access, as recorded.
struct Access {
    std::uintptr_t address = 0;
    std::uintptr_t site = 0;   // one per access instruction
    std::uint32_t epoch = 0;   // the thread's epoch: barriers and warp operations it had passed
    std::uint32_t thread = 0;  // linear index in the block
    std::uint32_t size = 0;
    std::uint8_t flags = 0;
};
enum AccessFlag : std::uint8_t { store = 1, shared = 2, atomic = 4 };

enum class Problem {
    read_after_write,
    write_after_read,
    write_after_write,
    blocks_write_same,
    uninitialised_shared_read,
    out_of_bounds
};

// One finding, with the two accesses (the second is empty for a one-sided problem).
struct Finding {
    Problem problem = Problem::read_after_write;
    Access first, second;
    std::uint64_t first_block = 0, second_block = 0;  // linear block numbers
};

// The bytes of 4-byte word `word` (an address / 4) that an access of `size` bytes at `address`
// touches: bit b for byte b of the word.
inline std::uint8_t word_bytes(std::uintptr_t address, std::uint32_t size, std::uintptr_t word) {
    const std::uintptr_t begin = address > word * 4 ? address : word * 4;
    const std::uintptr_t end = address + size < word * 4 + 4 ? address + size : word * 4 + 4;
    return std::uint8_t(((1u << (end - begin)) - 1) << begin % 4);
}

// Which accesses of two lanes of one warp the warp operations of a barrier interval order:
// happens-before, as vector clocks give it. Access a of lane i comes before access b of lane j
// when a chain of warp operations leads from after a in lane i to before b in lane j, each
// operation linking the lanes of its mask (lanes 0-1 sync, then lanes 1-2: lane 0's write before
// the first comes before lane 2's read after the second). Each lane has a clock, the latest epoch
// of every lane of its warp that it has seen; a warp operation gives the lanes of its mask the
// element-wise maximum of their clocks. So a comes before b when lane j's clock at b's epoch has
// seen an epoch of lane i later than a's.
//
// An access does not carry a clock (there are hundreds of millions): a lane's clock changes only
// at its warp operations, so each lane keeps its clocks of the interval by epoch. A warp whose
// operations all took every lane of it (the common case) keeps none: its lanes' clocks are all
// their common epoch, and two accesses are ordered exactly when their epochs differ. The recorder
// gives every thread one epoch after each barrier, so each interval starts in that state.
class WarpClocks {
public:
    // A new barrier interval of a block of `threads` threads, whose epochs are all equal.
    void begin_interval(std::size_t threads);
    // The lanes `lanes` (bit l: lane l) of the warp starting at thread `first` passed one warp
    // operation; `epochs` (by thread) already counts it.
    void released(std::size_t first, unsigned lanes, const std::vector<std::uint32_t>& epochs);
    // Whether warp operations order two accesses by different threads of this interval.
    bool ordered(const Access& a, const Access& b) const;

private:
    using Clock = std::array<std::uint32_t, 32>;  // by lane: the latest epoch seen
    struct Warp {
        bool lockstep = true;       // every warp operation so far took all its lanes
        std::uint32_t split = 0;    // the epoch its lanes were all at when one left them out
        std::vector<Clock> clocks;  // one per warp operation since, the first all `split`
        // By lane: its clock at epoch split + n is clocks[lane_clocks[lane][n]].
        std::vector<std::uint32_t> lane_clocks[32];
    };
    // The epoch of lane `lane` that the lane of `x` had seen when it made x.
    static std::uint32_t seen(const Warp& warp, const Access& x, unsigned lane);
    std::vector<Warp> warps_;
};

// Adds the hazards among `interval` (one block's accesses between two barriers, in the order they
// ran; thread numbers are within `block_number`) to `found`, one per pair of sites and problem.
// `clocks` holds the interval's warp operations.
void find_interval_hazards(const std::vector<Access>& interval, const WarpClocks& clocks,
                           std::uint64_t block_number, std::vector<Finding>& found);

// One block's non-atomic global write, kept until the launch ends.
struct GlobalWrite {
    std::uintptr_t address = 0;
    std::uint32_t size = 0;
    std::uint32_t thread = 0;
    std::uint64_t block = 0;
    std::uintptr_t site = 0;
};
// Writes to one byte by two blocks of a launch.
void find_cross_block_writes(std::vector<GlobalWrite>& writes, std::vector<Finding>& found);

// Whether `found` already holds a finding of this problem at these two sites.
bool already_found(const std::vector<Finding>& found, Problem problem, std::uintptr_t first_site,
                   std::uintptr_t second_site);

}  // namespace triptych::sim
