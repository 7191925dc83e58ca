// The race checker's rules (see races.hpp).
#include "gpu/runtime/sim/races.hpp"

#include <algorithm>
#include <tuple>

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
    for (std::uintptr_t byte = address; byte < address + size;) {
        const std::uintptr_t word = byte / 4;
        std::uint8_t mask = 0;
        for (; byte < address + size && byte / 4 == word; ++byte) mask |= 1u << (byte % 4);
        touches.push_back({word, mask, index});
    }
}

// Whether a warp operation or __syncwarp between them orders two accesses.
bool ordered(const Access& a, const Access& b) {
    return a.thread / warp_size == b.thread / warp_size && a.epoch != b.epoch;
}

}  // namespace

bool already_found(const std::vector<Finding>& found, Problem problem, std::uintptr_t first_site,
                   std::uintptr_t second_site) {
    return std::any_of(found.begin(), found.end(), [&](const Finding& f) {
        return f.problem == problem && f.first.site == first_site && f.second.site == second_site;
    });
}

void find_interval_hazards(const std::vector<Access>& interval, std::uint64_t block_number,
                           std::vector<Finding>& found) {
    // Every hazard has a write in it: only the words written in this interval need looking at
    // (in a tiled kernel, most reads are of words written the interval before).
    std::vector<WordTouch> touches;
    for (std::size_t i = 0; i < interval.size(); ++i)
        if ((interval[i].flags & store) && !(interval[i].flags & atomic))
            add_words(interval[i].address, interval[i].size, i, touches);
    std::vector<std::uintptr_t> written;
    for (const WordTouch& t : touches) written.push_back(t.word);
    std::sort(written.begin(), written.end());
    written.erase(std::unique(written.begin(), written.end()), written.end());
    touches.clear();
    std::vector<WordTouch> words_of_access;
    for (std::size_t i = 0; i < interval.size(); ++i) {
        if (interval[i].flags & atomic) continue;
        words_of_access.clear();
        add_words(interval[i].address, interval[i].size, i, words_of_access);
        for (const WordTouch& t : words_of_access)
            if (std::binary_search(written.begin(), written.end(), t.word)) touches.push_back(t);
    }
    std::sort(touches.begin(), touches.end(), [](const WordTouch& a, const WordTouch& b) {
        return std::tie(a.word, a.index) < std::tie(b.word, b.index);
    });
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
                if (!((earlier.flags | later.flags) & store) || ordered(earlier, later)) continue;
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
    for (std::size_t i = 1; i < touches.size(); ++i) {
        const WordTouch& a = touches[i - 1];
        const WordTouch& b = touches[i];
        const GlobalWrite& first = writes[a.index];
        const GlobalWrite& second = writes[b.index];
        if (a.word != b.word || first.block == second.block || !(a.bytes & b.bytes)) continue;
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
