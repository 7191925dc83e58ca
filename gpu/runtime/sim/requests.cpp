// The counting rules for one warp-level memory request, as Nsight Compute counts them
// (declared in recorder.hpp, where the rules are stated).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "gpu/runtime/sim/recorder.hpp"

namespace triptych::sim {
namespace {

constexpr std::uintptr_t sector_bytes = 32;
constexpr int banks = 32;
constexpr std::uintptr_t bank_width = 4;

// The number of distinct bytes the lanes ask for (lanes may overlap, e.g. a broadcast).
std::uint64_t distinct_bytes(const std::vector<LaneAccess>& lanes) {
    // The common cases first: lanes in ascending order that do not overlap (consecutive
    // elements), and every lane at one address (a broadcast).
    bool apart = true, same = true;
    std::uint64_t sum = lanes.empty() ? 0 : lanes[0].size;
    for (std::size_t i = 1; i < lanes.size(); ++i) {
        const LaneAccess& a = lanes[i];
        const LaneAccess& before = lanes[i - 1];
        sum += a.size;
        apart = apart && a.address >= before.address + before.size;
        same = same && a.address == lanes[0].address && a.size == lanes[0].size;
    }
    if (apart) return sum;
    if (same) return lanes[0].size;
    thread_local std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans;  // [begin, end)
    spans.clear();
    for (const LaneAccess& a : lanes) spans.emplace_back(a.address, a.address + a.size);
    if (!std::is_sorted(spans.begin(), spans.end())) std::sort(spans.begin(), spans.end());
    std::uint64_t bytes = 0;
    std::uintptr_t covered = 0;  // end of what is counted so far
    for (auto [begin, end] : spans) {
        begin = std::max(begin, covered);
        if (end > begin) bytes += end - begin;
        covered = std::max(covered, end);
    }
    return bytes;
}

// The wavefronts of one phase of a shared request: the most distinct words that fall in one
// bank. Lanes mostly ask for one word per bank, so each bank's distinct words are kept in a short
// list; a bank with more is counted exactly the slow way.
int busiest_bank(std::vector<std::uintptr_t>& words) {
    constexpr int kept = 8;
    std::uintptr_t bank_words[banks][kept];
    int per_bank[banks] = {};
    int busiest = 0;
    for (std::uintptr_t w : words) {
        const int bank = int(w % banks);
        const int n = per_bank[bank];
        if (std::find(bank_words[bank], bank_words[bank] + std::min(n, kept), w) !=
            bank_words[bank] + std::min(n, kept))
            continue;
        if (n == kept) {  // more than the list holds
            std::sort(words.begin(), words.end());
            words.erase(std::unique(words.begin(), words.end()), words.end());
            std::fill(per_bank, per_bank + banks, 0);
            busiest = 0;
            for (std::uintptr_t v : words) busiest = std::max(busiest, ++per_bank[v % banks]);
            return busiest;
        }
        bank_words[bank][n] = w;
        busiest = std::max(busiest, ++per_bank[bank]);
    }
    return busiest;
}

}  // namespace

RequestCost global_request_cost(const std::vector<LaneAccess>& lanes) {
    thread_local std::vector<std::uintptr_t> sectors;
    sectors.clear();
    for (const LaneAccess& a : lanes)
        for (std::uintptr_t s = a.address / sector_bytes;
             s <= (a.address + a.size - 1) / sector_bytes; ++s)
            sectors.push_back(s);
    if (!std::is_sorted(sectors.begin(), sectors.end())) std::sort(sectors.begin(), sectors.end());
    const auto distinct = std::unique(sectors.begin(), sectors.end()) - sectors.begin();
    const std::uint64_t bytes = distinct_bytes(lanes);
    return {std::uint64_t(distinct), (bytes + sector_bytes - 1) / sector_bytes, bytes};
}

RequestCost shared_request_cost(const std::vector<LaneAccess>& lanes) {
    unsigned widest = 1;
    for (const LaneAccess& a : lanes) widest = std::max(widest, a.size);
    // 4 bytes or less: the whole warp in one phase; 8: half-warps; 16: quarter-warps.
    const int phase_shift = widest <= 4 ? 5 : widest <= 8 ? 4 : 3;  // log2 of lanes per phase
    constexpr int most_phases = 4;
    // Each phase's banks, each with the first word asked of it, until one is asked for a second
    // word (a conflict). Most phases have none: one wavefront each, nothing more to count.
    std::uintptr_t bank_word[most_phases][banks];
    std::uint32_t asked[most_phases] = {};  // bit b: bank b has its word in bank_word
    bool conflict[most_phases] = {};
    for (const LaneAccess& a : lanes) {
        const int phase = a.lane >> phase_shift;
        for (std::uintptr_t w = a.address / bank_width; w <= (a.address + a.size - 1) / bank_width;
             ++w) {
            const int bank = int(w % banks);
            if (!(asked[phase] >> bank & 1u)) {
                asked[phase] |= 1u << bank;
                bank_word[phase][bank] = w;
            } else if (bank_word[phase][bank] != w) {
                conflict[phase] = true;
            }
        }
    }
    RequestCost cost{0, 0, distinct_bytes(lanes)};
    thread_local std::vector<std::uintptr_t> words;  // the 4-byte words of a phase with a conflict
    for (int phase = 0; phase < most_phases; ++phase) {
        if (asked[phase] == 0) continue;
        cost.ideal_units += 1;
        if (!conflict[phase]) {
            cost.units += 1;
            continue;
        }
        words.clear();
        for (const LaneAccess& a : lanes)
            if (a.lane >> phase_shift == phase)
                for (std::uintptr_t w = a.address / bank_width;
                     w <= (a.address + a.size - 1) / bank_width; ++w)
                    words.push_back(w);
        cost.units += std::uint64_t(busiest_bank(words));
    }
    return cost;
}

AccessCounts& AccessCounts::operator+=(const AccessCounts& other) {
    requests += other.requests;
    units += other.units;
    ideal_units += other.ideal_units;
    lanes += other.lanes;
    bytes += other.bytes;
    lane_bytes += other.lane_bytes;
    uneven_requests += other.uneven_requests;
    return *this;
}

AccessCounts total(const LaunchProfile& launch, Space space, bool store, bool atomic) {
    AccessCounts sum;
    for (const SiteCounts& s : launch.sites)
        if (s.space == space && s.store == store && s.atomic == atomic) sum += s.counts;
    return sum;
}

}  // namespace triptych::sim
