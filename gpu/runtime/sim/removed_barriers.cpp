// TRIPTYCH_SIM_SKIP_SYNC: the barriers a run leaves out (removed_barriers.hpp).
#include "gpu/runtime/sim/removed_barriers.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>

#include "common/errors.hpp"
#include "gpu/runtime/sim/sim.hpp"

namespace triptych::sim {
namespace {

// A removed site and what happened there. The counters are atomic: blocks run on several OS
// threads at once.
struct Removed {
    BarrierSite site;
    std::atomic<std::uint64_t> calls{0};
    std::atomic<bool> announced{false};
};

// The removed sites. Replaced only between launches (set_removed_barriers), read during them.
std::vector<std::unique_ptr<Removed>> removed;
std::atomic<bool> any_removed{false};

void replace_removed(const std::vector<BarrierSite>& sites) {
    removed.clear();
    for (const BarrierSite& site : sites) {
        removed.push_back(std::make_unique<Removed>());
        removed.back()->site = site;
    }
    any_removed = !removed.empty();
}

// At exit: a site that no barrier ran at is most likely a wrong line, and the run then removed
// nothing; say so rather than let its results pass for a harmless removal.
void report_unused_sites() {
    for (const auto& r : removed)
        if (r->calls == 0)
            std::fprintf(stderr,
                         "simulator: TRIPTYCH_SIM_SKIP_SYNC names %s, but no __syncthreads() or "
                         "__syncwarp() ran there: nothing was removed at that line\n",
                         r->site.str().c_str());
}

// Reads TRIPTYCH_SIM_SKIP_SYNC once, the first time any of this file is used.
void read_environment() {
    static std::once_flag once;
    std::call_once(once, [] {
        const char* text = std::getenv("TRIPTYCH_SIM_SKIP_SYNC");
        if (text != nullptr && *text != '\0') {
            try {
                replace_removed(parse_barrier_sites(text));
            } catch (const InvalidArgument& e) {
                throw InvalidArgument("TRIPTYCH_SIM_SKIP_SYNC=" + std::string(text) + ": " +
                                      e.what());
            }
        }
        std::atexit(report_unused_sites);
    });
}

// Whether `file` (a compiler's path) ends with the path `end` at a '/' or at its start.
bool path_ends_with(std::string_view file, std::string_view end) {
    if (!file.ends_with(end)) return false;
    return file.size() == end.size() || file[file.size() - end.size() - 1] == '/';
}

}  // namespace

std::vector<BarrierSite> parse_barrier_sites(const std::string& text) {
    std::vector<BarrierSite> sites;
    if (text.empty()) return sites;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma - start);
        const std::size_t colon = item.rfind(':');
        const std::string file = colon == std::string::npos ? "" : item.substr(0, colon);
        const std::string line = colon == std::string::npos ? "" : item.substr(colon + 1);
        const bool digits =
            !line.empty() && line.size() <= 9 &&
            std::all_of(line.begin(), line.end(), [](char c) { return c >= '0' && c <= '9'; });
        const bool spaces = item.find_first_of(" \t\n") != std::string::npos;
        if (file.empty() || spaces || !digits || std::stoul(line) == 0)
            throw InvalidArgument(
                "'" + item +
                "' is not FILE:LINE, e.g. gemm.cu:96 (the line of a "
                "__syncthreads() or __syncwarp(); several are separated by commas)");
        sites.push_back(BarrierSite{file, unsigned(std::stoul(line))});
        if (comma == std::string::npos) return sites;
        start = comma + 1;
    }
}

std::vector<BarrierSite> removed_barriers() {
    read_environment();
    std::vector<BarrierSite> sites;
    for (const auto& r : removed) sites.push_back(r->site);
    return sites;
}

void set_removed_barriers(const std::string& text) {
    read_environment();
    replace_removed(parse_barrier_sites(text));
}

bool barrier_removed(const std::source_location& where) {
    read_environment();
    if (!any_removed) return false;
    for (const auto& r : removed) {
        if (r->site.line != where.line() || !path_ends_with(where.file_name(), r->site.file))
            continue;
        ++r->calls;
        if (!r->announced.exchange(true))
            std::fprintf(stderr,
                         "simulator: the barrier at %s is removed (TRIPTYCH_SIM_SKIP_SYNC): every "
                         "thread passes it without waiting\n",
                         where_str(where).c_str());
        return true;
    }
    return false;
}

std::uint64_t removed_barrier_calls(const std::string& site) {
    read_environment();
    const std::vector<BarrierSite> asked = parse_barrier_sites(site);  // "gemm.cu:096" is :96
    for (const auto& r : removed)
        for (const BarrierSite& a : asked)
            if (r->site.file == a.file && r->site.line == a.line) return r->calls;
    return 0;
}

}  // namespace triptych::sim
