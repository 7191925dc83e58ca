// The access recorder (see recorder.hpp): what it does with each access, and when.
//
//   record          an access by the running CUDA thread, from the instrumentation: kept in its
//                   OS thread's log, tagged with the thread, its epoch and the access's site.
//   flush           at each barrier and at the block's end, the log of that barrier interval is
//                   complete: its accesses are grouped into warp requests and counted (profile),
//                   and checked for races (racecheck); then it is emptied.
//   launch_end      merges what every OS thread found, checks writes across blocks, keeps the
//                   launch's profile, and throws CudaError for the problems found.
//
// A program whose kernels are not instrumented has this file too (the scheduler calls it), but
// nothing is ever recorded there: asked to record, it runs its instrumented copy instead (below),
// or says why it cannot.
#include "gpu/runtime/sim/recorder.hpp"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/errors.hpp"
#include "gpu/runtime/sim/races.hpp"
#include "gpu/runtime/sim/sim.hpp"

// Defined only by instrumented.cpp, which only the instrumented copy of a program links.
extern "C" __attribute__((weak)) const char triptych_sim_instrumented_kernels;

namespace triptych::sim {
namespace {

// ---- the mode, and running the instrumented copy -----------------------------------------------

bool env_on(const char* name) {
    const char* text = std::getenv(name);
    return text != nullptr && std::string(text) == "1";
}

RecordMode& mode_setting() {
    static RecordMode mode = [] {
        const RecordMode from_environment{env_on("TRIPTYCH_SIM_PROFILE"),
                                          env_on("TRIPTYCH_SIM_RACECHECK")};
        recorder::recording = from_environment.any() && recorder_available();
        return from_environment;
    }();
    return mode;
}

std::string self_path() {
    char path[4096];
    const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0) return "";
    path[length] = '\0';
    return path;
}

// "build/tools/instrumented/triptych" for "build/tools/triptych".
std::string instrumented_copy_path() {
    const std::string self = self_path();
    const auto slash = self.rfind('/');
    if (slash == std::string::npos) return "";
    return self.substr(0, slash) + "/instrumented" + self.substr(slash);
}

// Replaces this process with the instrumented copy, with the same arguments (read back from
// /proc/self/cmdline) and environment. Returns only if there is no copy to run.
void exec_instrumented_copy() {
    const std::string copy = instrumented_copy_path();
    if (copy.empty() || access(copy.c_str(), X_OK) != 0) return;
    std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(cmdline)),
                          std::istreambuf_iterator<char>());
    std::vector<char*> argv;
    for (std::size_t at = 0; at < all.size(); at += std::strlen(all.c_str() + at) + 1)
        argv.push_back(const_cast<char*>(all.c_str() + at));
    argv.push_back(nullptr);
    std::fflush(stdout);
    execv(copy.c_str(), argv.data());  // returns only on failure
}

// Before main: a plain program asked to record becomes its instrumented copy. Without one, the
// first launch says why it cannot record.
__attribute__((constructor)) void become_instrumented_copy_if_asked() {
    if (!recorder_available() && mode_setting().any()) exec_instrumented_copy();
}

std::string why_no_recorder() {
    return "this program's kernels were compiled without the access recorder, and there is no "
           "instrumented copy of it at " +
           instrumented_copy_path() +
           " (a sim build compiled by GCC makes one for every program, except under "
           "TRIPTYCH_SANITIZE, whose AddressSanitizer cannot be combined with it)";
}

// ---- where static shared memory lives --------------------------------------------------------

// The span of this OS thread's block of the program's thread-local storage: static __shared__
// variables live there (`__shared__` is `thread_local` in the simulator).
std::pair<std::uintptr_t, std::uintptr_t> thread_local_span() {
    std::pair<std::uintptr_t, std::uintptr_t> span{0, 0};
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
            auto& result = *static_cast<std::pair<std::uintptr_t, std::uintptr_t>*>(out);
            for (int i = 0; i < info->dlpi_phnum; ++i)
                if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_tls_data != nullptr) {
                    const auto begin = reinterpret_cast<std::uintptr_t>(info->dlpi_tls_data);
                    result = {begin, begin + info->dlpi_phdr[i].p_memsz};
                }
            return 1;  // the program itself is the first object
        },
        &span);
    return span;
}

// ---- a launch, and each OS thread's part of it -------------------------------------------------

// Which bytes of each 4-byte word of shared memory the running block has written, for the race
// checker's read of unwritten shared memory. One entry per word of the static (thread-local) and
// the dynamic span, stamped with the block that wrote it: a new block starts with nothing
// written, and nothing is cleared. (A std::unordered_map of the words, emptied at every block,
// took a measurable share of a race-checked `triptych check --op conv2d`, whose cost
// `triptych_sim_cost --op conv2d` measures.) Kept by each OS thread across launches, so that its
// arrays are allocated once.
class SharedWritten {
public:
    void begin_block(std::uintptr_t static_begin, std::uintptr_t static_end,
                     std::uintptr_t dynamic_begin, std::uintptr_t dynamic_end) {
        spans_[0] = {static_begin, static_end};
        spans_[1] = {dynamic_begin, dynamic_end};
        for (int i = 0; i < 2; ++i) {
            // every word an access that starts in the span touches (16 bytes at most)
            const std::size_t words = (spans_[i].end + 16) / 4 - spans_[i].begin / 4;
            if (entries_[i].size() < words) entries_[i].resize(words);
        }
        if (++block_ == 0) {  // the stamps wrapped: forget them all
            for (auto& entries : entries_) std::fill(entries.begin(), entries.end(), Entry{});
            block_ = 1;
        }
    }
    // The bytes of `word` written so far (bit b: byte b); `word` is in one of the spans.
    std::uint8_t& bytes(std::uintptr_t word) {
        const int i = word * 4 >= spans_[0].begin && word * 4 < spans_[0].end ? 0 : 1;
        Entry& e = entries_[i][word - spans_[i].begin / 4];
        if (e.block != block_) e = {block_, 0};
        return e.bytes;
    }

private:
    struct Span {
        std::uintptr_t begin = 0, end = 0;
    };
    struct Entry {
        std::uint32_t block = 0;
        std::uint8_t bytes = 0;
    };
    Span spans_[2];
    std::vector<Entry> entries_[2];
    std::uint32_t block_ = 0;
};
thread_local SharedWritten shared_written;

struct Allocation {
    std::uintptr_t begin = 0, end = 0, guard_end = 0;
};

std::uint64_t counts_key(std::uintptr_t site, std::uint8_t flags) { return site << 3 | flags; }

struct Worker {
    recorder::Launch* launch = nullptr;
    std::uintptr_t dynamic_begin = 0, dynamic_end = 0, static_begin = 0, static_end = 0;
    std::uintptr_t builtins[4] = {};  // threadIdx, blockIdx, blockDim, gridDim: not memory
    // The running block.
    bool in_block = false;
    std::uint64_t block_number = 0;
    std::size_t current = 0;            // the running thread's slot
    std::vector<std::uint32_t> epochs;  // per thread: barriers and warp operations passed
    WarpClocks clocks;                  // which of this interval's accesses warp operations order
    std::vector<Access> log;            // this barrier interval's accesses, in the order they ran
    // Found so far, merged at worker_end.
    std::unordered_map<std::uint64_t, AccessCounts> counts;  // by counts_key(site, flags)
    std::uint64_t warps = 0, barriers = 0, warp_operations = 0;
    std::vector<Finding> findings;
    std::vector<GlobalWrite> global_writes;
    // The DRAM model (profile mode): every global sector loaded and stored.
    std::unordered_set<std::uintptr_t> loaded_sectors, stored_sectors;
};
thread_local Worker worker;

std::mutex profiles_mutex;
std::vector<LaunchProfile> profiles;

}  // namespace

struct recorder::Launch {
    RecordMode mode;
    std::uintptr_t kernel = 0;
    LaunchProfile profile;
    std::vector<Allocation> allocations;  // sorted by begin
    std::mutex mutex;
    std::unordered_map<std::uint64_t, AccessCounts> counts;
    std::vector<Finding> findings;
    std::vector<GlobalWrite> global_writes;
    std::unordered_set<std::uintptr_t> loaded_sectors, stored_sectors;
};

namespace {

const Allocation* allocation_at(const recorder::Launch& launch, std::uintptr_t address) {
    auto it = std::upper_bound(
        launch.allocations.begin(), launch.allocations.end(), address,
        [](std::uintptr_t a, const Allocation& allocation) { return a < allocation.begin; });
    if (it == launch.allocations.begin()) return nullptr;
    --it;
    return address < it->guard_end ? &*it : nullptr;
}

// ---- counting: accesses into warp requests -----------------------------------------------------

// The k-th execution of one access instruction by each lane of a warp within one epoch is one
// request (recorder.hpp). `log` holds one barrier interval of one block.
// `uneven`: the lanes ran this instruction different numbers of times in the epoch.
void add_request(Worker& w, const Access& first, const std::vector<LaneAccess>& lanes,
                 bool uneven = false) {
    const RequestCost cost =
        (first.flags & shared) ? shared_request_cost(lanes) : global_request_cost(lanes);
    std::uint64_t lane_bytes = 0;
    for (const LaneAccess& lane : lanes) lane_bytes += lane.size;
    w.counts[counts_key(first.site, first.flags)] += AccessCounts{
        1, cost.units, cost.ideal_units, lanes.size(), cost.bytes, lane_bytes, uneven ? 1u : 0u};
    if (!(first.flags & shared)) {
        const bool loads = !(first.flags & store) || (first.flags & atomic);
        const bool stores = (first.flags & store) != 0;
        for (const LaneAccess& lane : lanes)
            for (std::uintptr_t s = lane.address / 32; s <= (lane.address + lane.size - 1) / 32;
                 ++s) {
                if (loads) w.loaded_sectors.insert(s);
                if (stores) w.stored_sectors.insert(s);
            }
    }
}

// The general grouping, for a warp whose lanes did not run the same accesses: request k of an
// instruction (epoch, site, flags) takes the k-th run of it by every lane that ran it more than k
// times. by_thread[t] lists lane t's accesses in `log` in the order they ran, for the threads
// first .. last - 1 of the warp. Each instruction gathers its requests lane by lane as the lanes'
// accesses are read (sorting every access by instruction and lane took a tenth of a profiled run).
void count_divergent_warp(const std::vector<Access>& log,
                          const std::vector<std::vector<std::uint32_t>>& by_thread,
                          std::size_t first, std::size_t last, Worker& w) {
    struct Instruction {
        std::uint32_t one_access = 0;                   // in `log`, for add_request
        std::uint32_t runs[32] = {};                    // by lane
        std::vector<std::vector<LaneAccess>> requests;  // [k]: the lanes' k-th runs
        std::size_t request_count = 0;                  // of `requests`, those of this warp
    };
    struct Key {  // the instruction
        std::uint32_t epoch;
        std::uintptr_t site;
        std::uint8_t flags;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const {
            return std::hash<std::uintptr_t>()(k.site * 31 + k.epoch * 8 + k.flags);
        }
    };
    // Kept from call to call, with their vectors' memory; `count` of them in use.
    thread_local std::vector<Instruction> instructions;
    thread_local std::unordered_map<Key, std::size_t, KeyHash> numbers;
    std::size_t count = 0;
    numbers.clear();
    for (std::size_t t = first; t < last; ++t) {
        const int lane = int(t % 32);
        for (std::uint32_t i : by_thread[t]) {
            const Access& a = log[i];
            auto [found, added] = numbers.try_emplace(Key{a.epoch, a.site, a.flags}, count);
            if (added) {
                if (count == instructions.size()) instructions.emplace_back();
                Instruction& in = instructions[count++];
                in.one_access = i;
                std::fill(std::begin(in.runs), std::end(in.runs), 0);
                in.request_count = 0;
            }
            Instruction& in = instructions[found->second];
            const std::uint32_t k = in.runs[lane]++;
            if (k == in.request_count) {
                if (k == in.requests.size()) in.requests.emplace_back();
                in.requests[k].clear();
                ++in.request_count;
            }
            in.requests[k].push_back({lane, a.address, a.size});
        }
    }
    for (std::size_t n = 0; n < count; ++n) {
        const Instruction& in = instructions[n];
        // whether its lanes ran it different numbers of times (recorder.hpp)
        std::uint32_t runs = 0;
        bool uneven = false;
        for (std::uint32_t r : in.runs) {
            if (r == 0) continue;
            uneven = uneven || (runs != 0 && r != runs);
            runs = r;
        }
        for (std::size_t k = 0; k < in.request_count; ++k)
            add_request(w, log[in.one_access], in.requests[k], uneven);
    }
}

// The k-th execution of one access instruction by each lane of a warp within one epoch is one
// request (recorder.hpp). `log` holds one barrier interval of one block, in the order it ran.
// When every lane of a warp ran the same instructions in the same order (convergent code, the
// common case), the n-th access of each lane is one request; otherwise the general grouping runs.
void count_requests(const std::vector<Access>& log, Worker& w) {
    thread_local std::vector<std::vector<std::uint32_t>> by_thread;
    if (by_thread.size() < w.epochs.size()) by_thread.resize(w.epochs.size());
    for (auto& accesses : by_thread) accesses.clear();
    for (std::uint32_t i = 0; i < log.size(); ++i) by_thread[log[i].thread].push_back(i);

    std::vector<LaneAccess> lanes;
    for (std::size_t first = 0; first < w.epochs.size(); first += 32) {
        const std::size_t last = std::min(first + 32, w.epochs.size());
        // Lanes with accesses must all have run the same sequence of (epoch, site, flags).
        const std::vector<std::uint32_t>* leader = nullptr;
        bool convergent = true;
        for (std::size_t t = first; t < last && convergent; ++t) {
            const auto& mine = by_thread[t];
            if (mine.empty()) continue;
            if (leader == nullptr) {
                leader = &mine;
                continue;
            }
            convergent = mine.size() == leader->size();
            for (std::size_t n = 0; convergent && n < mine.size(); ++n) {
                const Access& a = log[mine[n]];
                const Access& b = log[(*leader)[n]];
                convergent = a.site == b.site && a.flags == b.flags && a.epoch == b.epoch;
            }
        }
        if (leader == nullptr) continue;
        if (convergent) {
            for (std::size_t n = 0; n < leader->size(); ++n) {
                lanes.clear();
                for (std::size_t t = first; t < last; ++t) {
                    if (by_thread[t].empty()) continue;
                    const Access& a = log[by_thread[t][n]];
                    lanes.push_back({int(t % 32), a.address, a.size});
                }
                add_request(w, log[(*leader)[n]], lanes);
            }
            continue;
        }
        count_divergent_warp(log, by_thread, first, last, w);
    }
}

// ---- checking: the races and the rest ----------------------------------------------------------

void add_finding(Worker& w, Finding finding) {
    if (!already_found(w.findings, finding.problem, finding.first.site, finding.second.site))
        w.findings.push_back(finding);
}

void check_interval(const std::vector<Access>& log, Worker& w) {
    find_interval_hazards(log, w.clocks, w.block_number, w.findings);
    for (const Access& a : log) {
        if (a.flags & shared) {
            // Bytes no thread of this block has written yet: on a GPU they hold whatever the
            // previous block there left (static shared memory is never cleared).
            bool unwritten = false;
            const bool reads = !(a.flags & store) || (a.flags & atomic);
            for (std::uintptr_t word = a.address / 4; word <= (a.address + a.size - 1) / 4;
                 ++word) {
                const std::uint8_t touched = word_bytes(a.address, a.size, word);
                std::uint8_t& written = shared_written.bytes(word);
                unwritten = unwritten || (reads && (written & touched) != touched);
                if (a.flags & store) written |= touched;
            }
            if (unwritten)
                add_finding(w, {Problem::uninitialised_shared_read, a, {}, w.block_number, 0});
        } else if (!(a.flags & atomic) && (a.flags & store)) {
            w.global_writes.push_back({a.address, a.size, a.thread, w.block_number, a.site});
        }
    }
}

void flush(Worker& w) {
    if (w.log.empty()) return;
    if (w.launch->mode.profile) count_requests(w.log, w);
    if (w.launch->mode.racecheck) check_interval(w.log, w);
    w.log.clear();
}

// ---- reporting ---------------------------------------------------------------------------------

std::string dims(const unsigned d[3]) {
    return "(" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) +
           ")";
}

std::string index_in(std::uint64_t linear, const unsigned extent[3]) {
    const unsigned index[3] = {unsigned(linear % extent[0]),
                               unsigned(linear / extent[0] % extent[1]),
                               unsigned(linear / (std::uint64_t(extent[0]) * extent[1]))};
    return dims(index);
}

std::string problem_words(Problem p) {
    switch (p) {
        case Problem::read_after_write:
            return "read after write";
        case Problem::write_after_read:
            return "write after read";
        case Problem::write_after_write:
            return "write after write";
        case Problem::blocks_write_same:
            return "two blocks write one element";
        case Problem::uninitialised_shared_read:
            return "read of shared memory that no thread of this block wrote";
        case Problem::out_of_bounds:
            return "access past the end of a device buffer";
    }
    return "?";
}

std::string describe(const recorder::Launch& launch, const std::vector<Finding>& findings) {
    std::vector<std::uintptr_t> sites;
    for (const Finding& f : findings) sites.insert(sites.end(), {f.first.site, f.second.site});
    const std::vector<SourceLine> lines = source_lines(sites);
    const LaunchProfile& p = launch.profile;
    std::string text = "race check: " + std::to_string(findings.size()) + " problem" +
                       (findings.size() == 1 ? "" : "s") + " in the kernel launched at " +
                       p.launch_site + " (grid " + dims(p.grid) + ", block " + dims(p.block) + ")";
    auto who = [&](const Access& a, std::uint64_t block) {
        return "thread " + index_in(a.thread, p.block) + " of block " + index_in(block, p.grid) +
               ((a.flags & store) ? " writes " : " reads ") + std::to_string(a.size) + " bytes";
    };
    for (std::size_t i = 0; i < findings.size() && i < 8; ++i) {
        const Finding& f = findings[i];
        const std::string space = (f.first.flags & shared) ? "shared memory" : "global memory";
        text += "\n  " + space + ", " + problem_words(f.problem) + ": " +
                who(f.first, f.first_block) + " at " + lines[2 * i].file_line;
        if (f.second.size != 0)
            text += ", then " + who(f.second, f.second_block) + " at " + lines[2 * i + 1].file_line;
        if (f.problem == Problem::read_after_write || f.problem == Problem::write_after_read ||
            f.problem == Problem::write_after_write)
            text += f.first.thread / 32 == f.second.thread / 32
                        ? ", in one warp with no __syncwarp() or warp operation ordering them"
                        : ", with no __syncthreads() between them";
        if (f.problem == Problem::blocks_write_same)
            text += "; blocks are not ordered: use atomicAdd, or give each block its own output";
    }
    if (findings.size() > 8) text += "\n  ... and " + std::to_string(findings.size() - 8) + " more";
    return text;
}

}  // namespace

// ---- public API --------------------------------------------------------------------------------

bool recorder_available() { return &triptych_sim_instrumented_kernels != nullptr; }

RecordMode record_mode() { return mode_setting(); }

void set_record_mode(RecordMode mode) {
    if (mode.any() && !recorder_available())
        throw CudaError("the simulator cannot record accesses: " + why_no_recorder());
    mode_setting() = mode;
    recorder::recording = mode.any();
}

void ensure_recorder(RecordMode mode) {
    if (recorder_available()) return set_record_mode(mode);
    if (mode.profile) setenv("TRIPTYCH_SIM_PROFILE", "1", 1);
    if (mode.racecheck) setenv("TRIPTYCH_SIM_RACECHECK", "1", 1);
    exec_instrumented_copy();
    throw CudaError("the simulator cannot record accesses: " + why_no_recorder());
}

std::vector<LaunchProfile> take_profiles() {
    std::vector<LaunchProfile> taken;
    {
        std::lock_guard lock(profiles_mutex);
        taken.swap(profiles);
    }
    return taken;
}

namespace {

// The function at `kernel`, asked of addr2line once per kernel: a profiled `triptych check`
// launches each kernel many times, and addr2line read the program's debug information at every
// launch, a fifth of the run.
std::string kernel_name(std::uintptr_t kernel) {
    static std::mutex mutex;
    static std::unordered_map<std::uintptr_t, std::string> names;
    std::lock_guard lock(mutex);
    auto found = names.find(kernel);
    if (found == names.end())
        found = names.emplace(kernel, source_lines({kernel})[0].function).first;
    return found->second;
}

}  // namespace

namespace recorder {

Launch* launch_begin(const void* kernel, const unsigned grid[3], const unsigned block[3],
                     std::size_t dynamic_shared_bytes, const std::string& launch_site) {
    const RecordMode mode = mode_setting();
    if (!mode.any()) return nullptr;
    if (!recorder_available())
        throw CudaError("TRIPTYCH_SIM_PROFILE / TRIPTYCH_SIM_RACECHECK: " + why_no_recorder());
    auto* launch = new Launch;
    launch->mode = mode;
    launch->kernel = reinterpret_cast<std::uintptr_t>(kernel);
    launch->profile.launch_site = launch_site;
    std::copy(grid, grid + 3, launch->profile.grid);
    std::copy(block, block + 3, launch->profile.block);
    launch->profile.dynamic_shared_bytes = dynamic_shared_bytes;
    for (auto [begin, bytes] : device_allocations())
        launch->allocations.push_back({begin, begin + bytes, begin + bytes + device_guard_bytes()});
    std::sort(launch->allocations.begin(), launch->allocations.end(),
              [](const Allocation& a, const Allocation& b) { return a.begin < b.begin; });
    return launch;
}

void worker_begin(Launch* launch, void* dynamic_shared, std::size_t dynamic_shared_bytes) {
    Worker& w = worker;
    w = Worker{};
    w.launch = launch;
    w.dynamic_begin = reinterpret_cast<std::uintptr_t>(dynamic_shared);
    w.dynamic_end = w.dynamic_begin + dynamic_shared_bytes;
    std::tie(w.static_begin, w.static_end) = thread_local_span();
    w.builtins[0] = reinterpret_cast<std::uintptr_t>(&threadIdx);
    w.builtins[1] = reinterpret_cast<std::uintptr_t>(&blockIdx);
    w.builtins[2] = reinterpret_cast<std::uintptr_t>(&blockDim);
    w.builtins[3] = reinterpret_cast<std::uintptr_t>(&gridDim);
}

void worker_end(Launch* launch) {
    Worker& w = worker;
    std::lock_guard lock(launch->mutex);
    for (auto& [key, counts] : w.counts) launch->counts[key] += counts;
    launch->profile.warps += w.warps;
    launch->profile.barriers += w.barriers;
    launch->profile.warp_operations += w.warp_operations;
    for (const Finding& f : w.findings)
        if (!already_found(launch->findings, f.problem, f.first.site, f.second.site))
            launch->findings.push_back(f);
    launch->global_writes.insert(launch->global_writes.end(), w.global_writes.begin(),
                                 w.global_writes.end());
    launch->loaded_sectors.merge(w.loaded_sectors);
    launch->stored_sectors.merge(w.stored_sectors);
    w = Worker{};
}

void block_begin(Launch*, std::uint64_t block_number, const unsigned*, std::size_t threads) {
    Worker& w = worker;
    w.in_block = true;
    w.block_number = block_number;
    w.current = 0;
    w.epochs.assign(threads, 0);
    w.clocks.begin_interval(threads);
    w.log.clear();
    if (w.launch->mode.racecheck)
        shared_written.begin_block(w.static_begin, w.static_end, w.dynamic_begin, w.dynamic_end);
    w.warps += (threads + 31) / 32;
}

void thread_resumed(std::size_t slot) { worker.current = slot; }

void barrier_released(std::size_t warps_waiting) {
    Worker& w = worker;
    flush(w);
    // Every thread has seen what every other did: one epoch for all, past the latest (lanes left
    // out of some warp operations passed fewer).
    const std::uint32_t next = *std::max_element(w.epochs.begin(), w.epochs.end()) + 1;
    std::fill(w.epochs.begin(), w.epochs.end(), next);
    w.clocks.begin_interval(w.epochs.size());
    w.barriers += warps_waiting;
}

void warp_released(std::size_t first, unsigned mask) {
    Worker& w = worker;
    for (unsigned lane = 0; lane < 32; ++lane)
        if ((mask >> lane & 1u) && first + lane < w.epochs.size()) ++w.epochs[first + lane];
    if (w.launch->mode.racecheck) w.clocks.released(first, mask, w.epochs);
    w.warp_operations += 1;
}

void block_end() {
    Worker& w = worker;
    flush(w);
    w.in_block = false;
}

void launch_end(Launch* launch) {
    std::unique_ptr<Launch> owned(launch);
    if (launch->mode.racecheck) find_cross_block_writes(launch->global_writes, launch->findings);
    if (launch->mode.profile) {
        LaunchProfile& p = launch->profile;
        p.kernel = kernel_name(launch->kernel);
        for (auto& [key, counts] : launch->counts) {
            SiteCounts s;
            s.site = key >> 3;
            const auto flags = std::uint8_t(key & 7);
            s.space = (flags & shared) ? Space::shared : Space::global;
            s.store = flags & store;
            s.atomic = flags & atomic;
            s.counts = counts;
            p.sites.push_back(s);
        }
        std::sort(p.sites.begin(), p.sites.end(), [](const SiteCounts& a, const SiteCounts& b) {
            return std::tie(a.site, a.space, a.store) < std::tie(b.site, b.space, b.store);
        });
        p.dram_read_sectors = launch->loaded_sectors.size();
        p.dram_write_sectors = launch->stored_sectors.size();
        std::lock_guard lock(profiles_mutex);
        profiles.push_back(p);
    }
    if (!launch->findings.empty()) throw CudaError(describe(*launch, launch->findings));
}

void launch_abandoned(Launch* launch) { delete launch; }

void record(std::uintptr_t address, unsigned size, bool is_store, std::uintptr_t site) {
    Worker& w = worker;
    if (!w.in_block) return;  // host code of a kernel file, or another program's thread
    for (std::uintptr_t builtin : w.builtins)
        if (address >= builtin && address < builtin + sizeof(uint3)) return;
    std::uint8_t flags = is_store ? store : 0;
    if ((address >= w.dynamic_begin && address < w.dynamic_end) ||
        (address >= w.static_begin && address < w.static_end)) {
        flags |= shared;
    } else {
        const Allocation* allocation = allocation_at(*w.launch, address);
        if (allocation == nullptr) return;  // not device memory: a local variable, a host value
        if (address + size > allocation->end && w.launch->mode.racecheck) {
            const Access a{address, site, 0, std::uint32_t(w.current), size, flags};
            add_finding(w, {Problem::out_of_bounds, a, {}, w.block_number, 0});
        }
    }
    w.log.push_back({address, site, w.epochs[w.current], std::uint32_t(w.current), size, flags});
}

void note_atomic(const void* address, unsigned size) {
    Worker& w = worker;
    if (!w.in_block) return;
    const auto where = reinterpret_cast<std::uintptr_t>(address);
    const auto site = std::uintptr_t(__builtin_return_address(0)) - 1;
    const bool is_shared = (where >= w.dynamic_begin && where < w.dynamic_end) ||
                           (where >= w.static_begin && where < w.static_end);
    const std::uint8_t flags = std::uint8_t(store | atomic | (is_shared ? shared : 0));
    w.log.push_back({where, site, w.epochs[w.current], std::uint32_t(w.current), size, flags});
}

}  // namespace recorder
}  // namespace triptych::sim
