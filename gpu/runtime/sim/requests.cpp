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
    thread_local std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans;  // [begin, end)
    spans.clear();
    for (const LaneAccess& a : lanes) spans.emplace_back(a.address, a.address + a.size);
    std::sort(spans.begin(), spans.end());
    std::uint64_t bytes = 0;
    std::uintptr_t covered = 0;  // end of what is counted so far
    for (auto [begin, end] : spans) {
        begin = std::max(begin, covered);
        if (end > begin) bytes += end - begin;
        covered = std::max(covered, end);
    }
    return bytes;
}

}  // namespace

RequestCost global_request_cost(const std::vector<LaneAccess>& lanes) {
    thread_local std::vector<std::uintptr_t> sectors;
    sectors.clear();
    for (const LaneAccess& a : lanes)
        for (std::uintptr_t s = a.address / sector_bytes;
             s <= (a.address + a.size - 1) / sector_bytes; ++s)
            sectors.push_back(s);
    std::sort(sectors.begin(), sectors.end());
    const auto distinct = std::unique(sectors.begin(), sectors.end()) - sectors.begin();
    const std::uint64_t bytes = distinct_bytes(lanes);
    return {std::uint64_t(distinct), (bytes + sector_bytes - 1) / sector_bytes, bytes};
}

RequestCost shared_request_cost(const std::vector<LaneAccess>& lanes) {
    unsigned widest = 1;
    for (const LaneAccess& a : lanes) widest = std::max(widest, a.size);
    // 4 bytes or less: the whole warp in one phase; 8: half-warps; 16: quarter-warps.
    const int lanes_per_phase = widest <= 4 ? 32 : widest <= 8 ? 16 : 8;
    RequestCost cost{0, 0, distinct_bytes(lanes)};
    thread_local std::vector<std::uintptr_t> words;  // the 4-byte words of one phase
    for (int phase = 0; phase < 32 / lanes_per_phase; ++phase) {
        words.clear();
        for (const LaneAccess& a : lanes) {
            if (a.lane / lanes_per_phase != phase) continue;
            for (std::uintptr_t w = a.address / bank_width;
                 w <= (a.address + a.size - 1) / bank_width; ++w)
                words.push_back(w);
        }
        if (words.empty()) continue;
        // The busiest bank: the most distinct words that fall in one bank. Lanes mostly ask for
        // one word per bank, so each bank's distinct words are kept in a short list.
        constexpr int kept = 8;
        std::uintptr_t bank_words[banks][kept];
        int per_bank[banks] = {};
        int busiest = 0;
        bool overflow = false;
        for (std::uintptr_t w : words) {
            const int bank = int(w % banks);
            const int n = per_bank[bank];
            if (std::find(bank_words[bank], bank_words[bank] + std::min(n, kept), w) !=
                bank_words[bank] + std::min(n, kept))
                continue;
            if (n >= kept) overflow = true;
            if (n < kept) bank_words[bank][n] = w;
            busiest = std::max(busiest, ++per_bank[bank]);
        }
        if (overflow) {  // a bank with many words: count them exactly the slow way
            std::sort(words.begin(), words.end());
            words.erase(std::unique(words.begin(), words.end()), words.end());
            std::fill(per_bank, per_bank + banks, 0);
            busiest = 0;
            for (std::uintptr_t w : words) busiest = std::max(busiest, ++per_bank[w % banks]);
        }
        cost.units += std::uint64_t(busiest);
        cost.ideal_units += 1;
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
