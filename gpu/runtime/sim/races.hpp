// The race checker's rules, over the accesses the recorder saw (recorder.cpp calls these).
//
// Two accesses race when they touch one byte, at least one writes, neither is an atomic, they
// come from different threads, and nothing orders them: within one block, a __syncthreads()
// between them orders them (so only one barrier interval is ever compared), and inside one warp
// so does a warp operation or __syncwarp (their `epoch`s then differ). Across blocks nothing
// orders two writes of one launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace triptych::sim {

// One lane's access, as recorded.
struct Access {
    std::uintptr_t address = 0;
    std::uintptr_t site = 0;   // one per access instruction
    std::uint32_t epoch = 0;   // barriers and warp operations the thread had passed
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

// Adds the hazards among `interval` (one block's accesses between two barriers, in the order they
// ran; thread numbers are within `block_number`) to `found`, one per pair of sites and problem.
void find_interval_hazards(const std::vector<Access>& interval, std::uint64_t block_number,
                           std::vector<Finding>& found);

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
