// The race checker's rules (see races.hpp).
#include "gpu/runtime/sim/races.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace triptych::sim {
namespace {

constexpr std::uint32_t warp_size = 32;
constexpr std::size_t most_findings_kept = 64;

// The 4-byte words an access touches, each with a mask of its bytes there.
struct WordTouch {
    std::uintptr_t word = 0;
    std::uint8_t bytes = 0;  // bit b: byte b of the word
    std::size_t index = 0;   // of the access, in the order the accesses ran
};

void add_words(std::uintptr_t address, std::uint32_t size, std::size_t index,
               std::vector<WordTouch>& touches) {
    for (std::uintptr_t word = address / 4; word <= (address + size - 1) / 4; ++word)
        touches.push_back({word, word_bytes(address, size, word), index});
}

// The words written in one barrier interval, numbered in the order they were first written, and
// found by hashing: the checker looks up every word every access of the interval touches (in a
// tiled kernel, thousands of written words and hundreds of millions of lookups over `triptych
// check`). Open addressing in two flat arrays, where std::unordered_map would allocate a node per
// word; a binary search of the sorted words took most of the checker's time.
class WordNumbers {
public:
    static constexpr std::uint32_t none = ~std::uint32_t{0};

    // Empties the table, sized for `most` words at most.
    void clear(std::size_t most) {
        int bits = 4;
        while ((std::size_t{1} << bits) < 2 * most) ++bits;
        shift_ = 64 - bits;
        keys_.assign(std::size_t{1} << bits, empty);
        numbers_.resize(keys_.size());
        count_ = 0;
    }
    // The number of `word`, given it (the next number) if it has none yet.
    std::uint32_t add(std::uintptr_t word) {
        std::size_t h = slot(word);
        for (; keys_[h] != empty; h = (h + 1) & (keys_.size() - 1))
            if (keys_[h] == word) return numbers_[h];
        keys_[h] = word;
        numbers_[h] = count_;
        return count_++;
    }
    // The number of `word`, or `none` if it was not added.
    std::uint32_t find(std::uintptr_t word) const {
        for (std::size_t h = slot(word);; h = (h + 1) & (keys_.size() - 1)) {
            if (keys_[h] == word) return numbers_[h];
            if (keys_[h] == empty) return none;
        }
    }
    std::uint32_t size() const { return count_; }

private:
    static constexpr std::uintptr_t empty = ~std::uintptr_t{0};  // never a word (address / 4)
    // Fibonacci hashing: the top bits of the word times 2^64 / golden ratio, which spreads
    // consecutive words (a tile's) over the table.
    std::size_t slot(std::uintptr_t word) const {
        return std::size_t((std::uint64_t(word) * 0x9E3779B97F4A7C15ull) >> shift_);
    }
    int shift_ = 60;
    std::vector<std::uintptr_t> keys_;
    std::vector<std::uint32_t> numbers_;
    std::uint32_t count_ = 0;
};

// The touches of the words that accesses of `interval` write (not atomically), word by word in
// the order each was first written, each word's in the order they ran. Every hazard has a write
// in it: only these words need looking at (in a tiled kernel, most reads are of words written the
// interval before).
const std::vector<WordTouch>& touches_of_written_words(const std::vector<Access>& interval) {
    thread_local std::vector<WordTouch> touches;
    touches.clear();
    for (std::size_t i = 0; i < interval.size(); ++i)
        if ((interval[i].flags & store) && !(interval[i].flags & atomic))
            add_words(interval[i].address, interval[i].size, i, touches);
    thread_local WordNumbers written;
    written.clear(touches.size());
    for (const WordTouch& t : touches) written.add(t.word);
    // Every access's touches of written words, with the word's number, then put in that order by
    // counting (stable: each word's touches stay in the order they ran).
    touches.clear();
    thread_local std::vector<std::uint32_t> number_of_touch, starts;
    number_of_touch.clear();
    starts.assign(written.size() + std::size_t{1}, 0);
    for (std::size_t i = 0; i < interval.size(); ++i) {
        if (interval[i].flags & atomic) continue;
        const std::size_t before = touches.size();
        add_words(interval[i].address, interval[i].size, i, touches);
        std::size_t kept = before;
        for (std::size_t j = before; j < touches.size(); ++j) {
            const std::uint32_t number = written.find(touches[j].word);
            if (number == WordNumbers::none) continue;
            touches[kept++] = touches[j];
            number_of_touch.push_back(number);
            ++starts[number + 1];
        }
        touches.resize(kept);
    }
    for (std::size_t p = 1; p < starts.size(); ++p) starts[p] += starts[p - 1];
    thread_local std::vector<WordTouch> by_word;  // the touches by (word, order they ran)
    by_word.resize(touches.size());
    for (std::size_t j = 0; j < touches.size(); ++j)
        by_word[starts[number_of_touch[j]]++] = touches[j];
    touches.swap(by_word);
    return touches;
}

}  // namespace

void WarpClocks::begin_interval(std::size_t threads) {
    warps_.resize((threads + warp_size - 1) / warp_size);
    for (Warp& warp : warps_) warp.lockstep = true;
}

void WarpClocks::released(std::size_t first, unsigned lanes,
                          const std::vector<std::uint32_t>& epochs) {
    Warp& warp = warps_[first / warp_size];
    const std::size_t count = std::min<std::size_t>(warp_size, epochs.size() - first);
    const unsigned every_lane = count == warp_size ? ~0u : (1u << count) - 1;
    lanes &= every_lane;
    if (warp.lockstep) {
        if (lanes == every_lane) return;
        // The first operation that leaves a lane out: until it, every lane's clock was all
        // its epoch, the one the lanes left out still have.
        warp.lockstep = false;
        warp.split = epochs[first + unsigned(__builtin_ctz(lanes))] - 1;
        Clock start;
        start.fill(warp.split);
        warp.clocks.assign(1, start);
        for (std::size_t lane = 0; lane < count; ++lane) warp.lane_clocks[lane].assign(1, 0);
    }
    Clock joined{};
    for (std::size_t lane = 0; lane < count; ++lane) {
        if (!(lanes >> lane & 1u)) continue;
        const Clock& clock = warp.clocks[warp.lane_clocks[lane].back()];
        for (std::size_t other = 0; other < warp_size; ++other)
            joined[other] = std::max(joined[other], clock[other]);
    }
    for (std::size_t lane = 0; lane < count; ++lane)
        if (lanes >> lane & 1u) joined[lane] = epochs[first + lane];
    warp.clocks.push_back(joined);
    for (std::size_t lane = 0; lane < count; ++lane)
        if (lanes >> lane & 1u)
            warp.lane_clocks[lane].push_back(std::uint32_t(warp.clocks.size() - 1));
}

std::uint32_t WarpClocks::seen(const Warp& warp, const Access& x, unsigned lane) {
    if (x.epoch < warp.split) return x.epoch;  // the warp was in lockstep then
    return warp.clocks[warp.lane_clocks[x.thread % warp_size][x.epoch - warp.split]][lane];
}

bool WarpClocks::ordered(const Access& a, const Access& b) const {
    if (a.thread / warp_size != b.thread / warp_size) return false;
    const Warp& warp = warps_[a.thread / warp_size];
    if (warp.lockstep) return a.epoch != b.epoch;
    return seen(warp, b, a.thread % warp_size) > a.epoch ||
           seen(warp, a, b.thread % warp_size) > b.epoch;
}

bool already_found(const std::vector<Finding>& found, Problem problem, std::uintptr_t first_site,
                   std::uintptr_t second_site) {
    return std::any_of(found.begin(), found.end(), [&](const Finding& f) {
        return f.problem == problem && f.first.site == first_site && f.second.site == second_site;
    });
}

void find_interval_hazards(const std::vector<Access>& interval, const WarpClocks& clocks,
                           std::uint64_t block_number, std::vector<Finding>& found) {
    const std::vector<WordTouch>& touches = touches_of_written_words(interval);
    for (std::size_t begin = 0; begin < touches.size();) {
        std::size_t end = begin;
        bool any_store = false, two_threads = false;
        while (end < touches.size() && touches[end].word == touches[begin].word) {
            const Access& a = interval[touches[end].index];
            any_store = any_store || (a.flags & store);
            two_threads = two_threads || a.thread != interval[touches[begin].index].thread;
            ++end;
        }
        // The first unordered pair of this word, earlier access first.
        for (std::size_t j = begin + 1; any_store && two_threads && j < end; ++j) {
            const Access& later = interval[touches[j].index];
            bool reported = false;
            for (std::size_t k = begin; k < j && !reported; ++k) {
                const Access& earlier = interval[touches[k].index];
                if (earlier.thread == later.thread || !(touches[j].bytes & touches[k].bytes))
                    continue;
                if (!((earlier.flags | later.flags) & store) || clocks.ordered(earlier, later))
                    continue;
                const Problem problem = !(earlier.flags & store) ? Problem::write_after_read
                                        : (later.flags & store)  ? Problem::write_after_write
                                                                 : Problem::read_after_write;
                if (!already_found(found, problem, earlier.site, later.site) &&
                    found.size() < most_findings_kept)
                    found.push_back({problem, earlier, later, block_number, block_number});
                reported = true;
            }
            if (reported) break;
        }
        begin = end;
    }
}

void find_cross_block_writes(std::vector<GlobalWrite>& writes, std::vector<Finding>& found) {
    std::vector<WordTouch> touches;
    for (std::size_t i = 0; i < writes.size(); ++i)
        add_words(writes[i].address, writes[i].size, i, touches);
    std::sort(touches.begin(), touches.end(), [&](const WordTouch& a, const WordTouch& b) {
        return std::tie(a.word, writes[a.index].block) < std::tie(b.word, writes[b.index].block);
    });
    // Each word's writes in block order: a write races with any earlier block's write to one of
    // its bytes, not only with the write just before it (blocks 0 and 2 writing byte 0 of a word,
    // block 1 byte 1 between them).
    constexpr std::size_t none = ~std::size_t{0};
    std::size_t earlier[4], latest[4];  // per byte: the last write (in touches) of an earlier
                                        // block, and of this block
    for (std::size_t i = 0; i < touches.size(); ++i) {
        const WordTouch& b = touches[i];
        const GlobalWrite& second = writes[b.index];
        if (i == 0 || b.word != touches[i - 1].word) {
            std::fill(earlier, earlier + 4, none);
            std::fill(latest, latest + 4, none);
        } else if (second.block != writes[touches[i - 1].index].block) {
            for (int byte = 0; byte < 4; ++byte)
                if (latest[byte] != none) earlier[byte] = std::exchange(latest[byte], none);
        }
        std::size_t j = none;  // an earlier block's write to one of this write's bytes
        for (int byte = 0; byte < 4; ++byte)
            if (b.bytes >> byte & 1) {
                if (j == none) j = earlier[byte];
                latest[byte] = i;
            }
        if (j == none) continue;
        const GlobalWrite& first = writes[touches[j].index];
        if (already_found(found, Problem::blocks_write_same, first.site, second.site) ||
            found.size() >= most_findings_kept)
            continue;
        Finding f{Problem::blocks_write_same, {}, {}, first.block, second.block};
        f.first = {first.address, first.site, 0, first.thread, first.size, store};
        f.second = {second.address, second.site, 0, second.thread, second.size, store};
        found.push_back(f);
    }
}

}  // namespace triptych::sim
