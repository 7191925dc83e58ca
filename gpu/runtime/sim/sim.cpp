// The CUDA simulator's scheduler: how a grid of CUDA threads runs on a few CPU threads.
//
//   run_grid      checks the launch as a GPU would, then hands blocks to OpenMP threads; a
//                 failed launch reports its lowest-numbered failing block.
//   run_block     runs one block: every CUDA thread is a fiber on this OS thread. A pass resumes
//                 each runnable thread (in the order the knob says) until it finishes or waits;
//                 then waiting warps are released, then the block-wide barrier. If nothing can be
//                 released, the threads wait at different barriers: that is reported, with the
//                 file:line of each side, and the block is unwound.
//   suspend       called by __syncthreads() and the warp operations from inside a fiber.
//
// Fibers are Boost.Context fibers on guarded stacks that each OS thread allocates once and reuses.
// A switch saves and restores a few registers and the stack pointer in user space, with no system
// call, so a block that never waits costs little more than a loop.
// Under AddressSanitizer every switch is announced to it (__sanitizer_*_switch_fiber); without
// that it would mistake the fiber stacks for stack corruption.
#include "gpu/runtime/sim/sim.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <numeric>
#include <optional>
#include <random>
#include <shared_mutex>
#include <vector>

#include "gpu/runtime/launch.hpp"
#include "gpu/runtime/sim/removed_barriers.hpp"
#include "triptych_config.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace triptych::sim {
namespace {

namespace ctx = boost::context;

// ---- AddressSanitizer fiber annotations (no-ops in other builds) ------------------------------

#if defined(__SANITIZE_ADDRESS__)
void start_switch(void** fake_stack, const void* bottom, std::size_t size) {
    __sanitizer_start_switch_fiber(fake_stack, bottom, size);
}
void finish_switch(void* fake_stack, const void** bottom, std::size_t* size) {
    __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
}
#else
void start_switch(void**, const void*, std::size_t) {}
void finish_switch(void*, const void**, std::size_t*) {}
#endif

// ---- source locations in messages --------------------------------------------------------------

bool same_place(const std::source_location& a, const std::source_location& b) {
    if (a.line() != b.line()) return false;
    return a.file_name() == b.file_name() || std::string_view(a.file_name()) == b.file_name();
}

std::string str(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

std::string hex(unsigned value) {
    char text[16];
    std::snprintf(text, sizeof text, "%08x", value);
    return text;
}

// ---- fiber stacks ------------------------------------------------------------------------------

// One guarded stack per CUDA thread slot, allocated on first use by each OS thread and kept for
// later launches. The guard page below each stack turns an overflow into a crash, not corruption.
class StackPool {
public:
    ~StackPool() {
        for (auto& stack : stacks_) allocator_.deallocate(stack);
    }
    ctx::stack_context& get(std::size_t slot) {
        while (stacks_.size() <= slot) stacks_.push_back(allocator_.allocate());
        return stacks_[slot];
    }

private:
    ctx::protected_fixedsize_stack allocator_{stack_bytes()};
    std::vector<ctx::stack_context> stacks_;
};

// Hands a fiber a stack from the pool; the pool, not the fiber, frees it.
struct PooledStack {
    ctx::stack_context stack;
    ctx::stack_context allocate() { return stack; }
    void deallocate(ctx::stack_context&) noexcept {}
};

// ---- one block's run ---------------------------------------------------------------------------

enum class Wait { none, barrier, warp, done };

struct WarpRequest {
    WarpOp op = WarpOp::syncwarp;
    unsigned mask = 0;
    std::uint64_t value = 0;
    int parameter = 0;
    int width = 32;
    std::uint64_t result = 0;
};

struct CudaThread {
    uint3 index{};
    ctx::fiber fiber;  // its suspended context; empty before it starts and after it ends
    bool started = false;
    Wait wait = Wait::none;
    std::source_location where;  // of the barrier or warp operation it waits at
    WarpRequest warp;
    void* fake_stack = nullptr;  // AddressSanitizer's bookkeeping while suspended
};

// Thrown inside the fibers of a block that cannot finish (divergent barriers, deadlock), so that
// their stacks unwind normally before the error is reported.
struct BlockAborted {};

struct BlockRun {
    ThreadBody body = nullptr;
    const void* context = nullptr;
    std::vector<CudaThread> threads;
    CudaThread* current = nullptr;
    ctx::fiber scheduler;  // how the running CUDA thread gets back to run_block
    bool aborting = false;
    std::exception_ptr kernel_error;
    void* dynamic_shared = nullptr;
    std::size_t dynamic_shared_bytes = 0;
    const void* scheduler_stack_bottom = nullptr;
    std::size_t scheduler_stack_size = 0;
    StackPool* stacks = nullptr;
    recorder::Launch* recording = nullptr;  // the access recorder's launch, when it records
    std::string launch_site;                // file:line of the launch, for messages
    // While find_guard_writer runs a launch again: the guard bytes to watch after each stretch a
    // CUDA thread runs, and the first thread seen changing them.
    const unsigned char* watched = nullptr;
    std::size_t watched_bytes = 0;
    std::optional<uint3> writer;
};

thread_local BlockRun* current_block = nullptr;

#if defined(__SANITIZE_ADDRESS__)
// When AddressSanitizer stops the program in a kernel, it prints the host stack; this adds which
// CUDA thread of which block of which launch was running (the report comes from that OS thread).
void name_the_cuda_thread() {
    const BlockRun* run = current_block;
    if (run == nullptr || run->current == nullptr) return;
    std::fprintf(stderr,
                 "triptych simulator: this happened in CUDA thread %s of block %s of the "
                 "kernel launched at %s\n",
                 str(run->current->index).c_str(), str(blockIdx).c_str(), run->launch_site.c_str());
}
[[maybe_unused]] const bool death_callback_set =
    (__sanitizer_set_death_callback(name_the_cuda_thread), true);
#endif

BlockRun& running_block(const char* what) {
    if (current_block == nullptr || current_block->current == nullptr)
        throw CudaError(std::string(what) + " called outside a kernel");
    return *current_block;
}

// The body of every fiber: one CUDA thread from start to end.
ctx::fiber thread_entry(BlockRun& run, CudaThread& thread, ctx::fiber&& scheduler) {
    finish_switch(nullptr, &run.scheduler_stack_bottom, &run.scheduler_stack_size);
    run.scheduler = std::move(scheduler);
    try {
        run.body(run.context);
    } catch (const ctx::detail::forced_unwind&) {
        throw;  // Boost.Context unwinding a fiber: must pass through
    } catch (const BlockAborted&) {
    } catch (...) {
        if (!run.kernel_error) run.kernel_error = std::current_exception();
    }
    thread.wait = Wait::done;
    start_switch(nullptr, run.scheduler_stack_bottom, run.scheduler_stack_size);
    return std::move(run.scheduler);
}

// Runs `thread` until it finishes or waits.
void resume(BlockRun& run, CudaThread& thread, std::size_t slot) {
    threadIdx = thread.index;
    run.current = &thread;
    if (run.recording != nullptr) recorder::thread_resumed(slot);
    ctx::stack_context& stack = run.stacks->get(slot);
    static const std::size_t guard = ctx::stack_traits::page_size();
    void* fake_stack = nullptr;
    start_switch(&fake_stack, static_cast<char*>(stack.sp) - stack.size + guard,
                 stack.size - guard);
    if (!thread.started) {
        thread.started = true;
        thread.fiber = ctx::fiber(std::allocator_arg, PooledStack{stack},
                                  [&run, &thread](ctx::fiber&& scheduler) {
                                      return thread_entry(run, thread, std::move(scheduler));
                                  });
    }
    thread.fiber = std::move(thread.fiber).resume();
    finish_switch(fake_stack, nullptr, nullptr);
    run.current = nullptr;
}

// Called from inside a fiber: park this CUDA thread and return to the scheduler.
void suspend(BlockRun& run, Wait why, std::source_location where) {
    CudaThread& thread = *run.current;
    thread.wait = why;
    thread.where = where;
    start_switch(&thread.fake_stack, run.scheduler_stack_bottom, run.scheduler_stack_size);
    run.scheduler = std::move(run.scheduler).resume();
    finish_switch(thread.fake_stack, &run.scheduler_stack_bottom, &run.scheduler_stack_size);
    if (run.aborting) throw BlockAborted{};
}

// Where element e of a lane's fragment sits in its matrix (MmaLayout), as (row, column).
struct MatrixPosition {
    int row, column;
};
MatrixPosition position_in(MmaLayout layout, int columns, char matrix, int lane, int e) {
    if (layout == MmaLayout::wmma) {
        const int i = e * warpSize + lane;
        return {i / columns, i % columns};
    }
    const int g = lane / 4, t = lane % 4;  // m16n8k8_ptx
    switch (matrix) {
        case 'a':
            return {g + 8 * (e % 2), t + 4 * (e / 2)};
        case 'b':
            return {t + 4 * e, g};
        default:
            return {g + 8 * (e / 2), 2 * t + e % 2};
    }
}

// The lane and element that hold (row, column) of a matrix: the inverse of position_in.
struct FragmentSlot {
    int lane, e;
};
FragmentSlot slot_of(MmaLayout layout, int columns, char matrix, int row, int column) {
    if (layout == MmaLayout::wmma) {
        const int i = row * columns + column;
        return {i % warpSize, i / warpSize};
    }
    if (matrix == 'a') return {(row % 8) * 4 + column % 4, row / 8 + 2 * (column / 4)};
    return {column * 4 + row % 4, row / 4};  // 'b'
}

// Lane `lane`'s elements of D for a warp's mma_sync (MmaRequest): every lane's A and B are
// still in place, since all 32 wait at the operation. Lane L's D is written as soon as it is
// computed, which is safe because no lane's D is another lane's A or B, and each lane's D depends
// on its own C alone.
void multiply_accumulate(const CudaThread* lanes, unsigned present, int lane) {
    const auto request = [&](int l) {
        return reinterpret_cast<const MmaRequest*>(lanes[l].warp.value);
    };
    const MmaRequest& me = *request(lane);
    const std::string name = me.layout == MmaLayout::wmma ? "wmma::mma_sync" : "mma.sync";
    if (present != 0xffffffffu)
        throw CudaError(name + " in block " + str(blockIdx) + ": lanes 0x" + hex(present) +
                        " of the warp took part; it needs all 32");
    for (int l = 0; l < warpSize; ++l) {
        const MmaRequest& other = *request(l);
        if (other.m != me.m || other.n != me.n || other.k != me.k || other.layout != me.layout)
            throw CudaError(name + " in block " + str(blockIdx) + ": lanes " +
                            std::to_string(lane) + " and " + std::to_string(l) +
                            " multiply fragments of different shapes");
    }
    const auto element = [&](const float* MmaRequest::*matrix, char which, int columns, int row,
                             int column) {
        const FragmentSlot at = slot_of(me.layout, columns, which, row, column);
        return (request(at.lane)->*matrix)[at.e];
    };
    float result[8];  // m x n / 32: 8 for every shape WMMA has for float accumulators, 4 for PTX's
    const int count = me.m * me.n / warpSize;
    const bool ptx_shape = me.m == 16 && me.n == 8 && me.k == 8;
    if (count < 1 || count > 8 || me.m * me.n % warpSize != 0 ||
        (me.layout == MmaLayout::m16n8k8_ptx && !ptx_shape))
        throw CudaError(name + ": no accumulator of " + std::to_string(me.m) + " x " +
                        std::to_string(me.n));
    for (int e = 0; e < count; ++e) {
        const MatrixPosition d = position_in(me.layout, me.n, 'd', lane, e);
        float sum = me.c[e];
        for (int kk = 0; kk < me.k; ++kk)
            sum = std::fma(element(&MmaRequest::a, 'a', me.k, d.row, kk),
                           element(&MmaRequest::b, 'b', me.n, kk, d.column), sum);
        result[e] = sum;
    }
    std::copy(result, result + count, me.d);
}

// The value lane `lane` receives from one warp operation, given every lane's request.
// `lanes` points at the warp's first thread; `present` marks the lanes taking part.
std::uint64_t warp_result(const CudaThread* lanes, unsigned present, int lane) {
    const WarpRequest& me = lanes[lane].warp;
    const int width = me.width;
    const int base = (lane / width) * width;  // first lane of this lane's width-sized segment
    // A source outside the warp, not taking part, or (for shuffles) past the end of this lane's
    // segment gives the lane its own value. Only shfl_up can look before the segment, and gets
    // its own value there too; shfl_xor may read an earlier segment, as CUDA specifies.
    auto value_of = [&](int source, bool earlier_allowed) {
        const bool inside = source >= (earlier_allowed ? 0 : base) && source < base + width;
        return inside && (present >> source & 1u) ? lanes[source].warp.value : me.value;
    };
    switch (me.op) {
        case WarpOp::shfl:
            return value_of(base + ((me.parameter % width) + width) % width, false);
        case WarpOp::shfl_up:
            return value_of(lane - me.parameter, false);
        case WarpOp::shfl_down:
            return value_of(lane + me.parameter, false);
        case WarpOp::shfl_xor:
            return value_of(lane ^ me.parameter, true);
        case WarpOp::ballot:
        case WarpOp::any:
        case WarpOp::all: {
            unsigned ballot = 0;
            for (int l = 0; l < 32; ++l)
                if ((present >> l & 1u) && lanes[l].warp.value != 0) ballot |= 1u << l;
            if (me.op == WarpOp::ballot) return ballot;
            if (me.op == WarpOp::any) return ballot != 0;
            return ballot == present;
        }
        case WarpOp::syncwarp:
            return 0;
        case WarpOp::mma:
            multiply_accumulate(lanes, present, lane);
            return 0;
    }
    return 0;
}

// Whether lane `other` waits at a warp operation that meets `lead`'s: since Volta (sm_70) a
// *_sync function waits until every lane of its mask has called one with the same mask and the
// same operation (PTX's "same qualifiers"), from any line of the kernel and however often each
// lane called it before. So the two sides of an if may each call __syncwarp() and still meet.
// (Before Volta all lanes had to call the same one, together.) Each lane's own width and source
// lane are its operands, not qualifiers: they may differ.
bool meets(const CudaThread& other, const CudaThread& lead) {
    return other.wait == Wait::warp && other.warp.op == lead.warp.op &&
           other.warp.mask == lead.warp.mask;
}

// Releases every warp whose participating lanes all wait at warp operations that meet (meets).
// Returns whether any warp was released. A mask naming a lane that has exited is an error: that
// lane can never arrive (on a GPU the result is undefined).
bool release_warps(BlockRun& run) {
    bool released = false;
    const int count = static_cast<int>(run.threads.size());
    for (int first = 0; first < count; first += warpSize) {
        CudaThread* lanes = &run.threads[first];
        const int lane_count = std::min(warpSize, count - first);
        for (int leader = 0; leader < lane_count; ++leader) {
            const CudaThread& lead = lanes[leader];
            if (lead.wait != Wait::warp) continue;
            // The lanes named in the leader's mask that exist in this block take part.
            unsigned present = 0;
            bool ready = true;
            for (int l = 0; l < lane_count; ++l) {
                if (!(lead.warp.mask >> l & 1u)) continue;
                if (lanes[l].wait == Wait::done)
                    throw CudaError("warp operation at " + where_str(lead.where) + " in block " +
                                    str(blockIdx) + ": thread " + str(lead.index) + " names lane " +
                                    std::to_string(l) + " in its mask 0x" + hex(lead.warp.mask) +
                                    ", but that lane has exited; a mask may name only lanes "
                                    "that reach this warp operation");
                present |= 1u << l;
                ready = ready && meets(lanes[l], lead);
            }
            if (!ready) continue;
            for (int l = 0; l < lane_count; ++l)
                if (present >> l & 1u) lanes[l].warp.result = warp_result(lanes, present, l);
            for (int l = 0; l < lane_count; ++l)
                if (present >> l & 1u) lanes[l].wait = Wait::none;
            if (run.recording != nullptr) recorder::warp_released(std::size_t(first), present);
            released = true;
        }
    }
    return released;
}

const char* name_of(WarpOp op) {
    switch (op) {
        case WarpOp::shfl:
            return "__shfl_sync()";
        case WarpOp::shfl_up:
            return "__shfl_up_sync()";
        case WarpOp::shfl_down:
            return "__shfl_down_sync()";
        case WarpOp::shfl_xor:
            return "__shfl_xor_sync()";
        case WarpOp::ballot:
            return "__ballot_sync()";
        case WarpOp::any:
            return "__any_sync()";
        case WarpOp::all:
            return "__all_sync()";
        case WarpOp::syncwarp:
            return "__syncwarp()";
        case WarpOp::mma:
            return "mma_sync()";
    }
    return "a warp operation";
}

std::string describe_wait(const CudaThread& t) {
    if (t.wait == Wait::barrier)
        return "thread " + str(t.index) + " waits at __syncthreads() at " + where_str(t.where);
    return "thread " + str(t.index) + " waits at " + name_of(t.warp.op) + " with mask 0x" +
           hex(t.warp.mask) + " at " + where_str(t.where);
}

// Why a block whose threads all wait cannot go on, with the file:line each side waits at. When
// all wait at barriers: two threads at different __syncthreads(). Otherwise: a thread at a warp
// operation and a lane of its mask that waits at something it cannot meet (meets).
std::string stuck_message(const BlockRun& run) {
    const bool all_barriers = std::all_of(run.threads.begin(), run.threads.end(), [](auto& t) {
        return t.wait == Wait::done || t.wait == Wait::barrier;
    });
    const CudaThread* first = nullptr;
    const CudaThread* other = nullptr;
    for (std::size_t i = 0; i < run.threads.size() && other == nullptr; ++i) {
        const CudaThread& t = run.threads[i];
        if (t.wait == Wait::done) continue;
        if (all_barriers) {
            if (first == nullptr)
                first = &t;
            else if (!same_place(t.where, first->where))
                other = &t;
            continue;
        }
        if (first == nullptr) first = &t;  // if no pair below is found
        if (t.wait != Wait::warp) continue;
        const std::size_t warp_start = i - i % warpSize;
        for (int l = 0; l < warpSize && warp_start + l < run.threads.size(); ++l) {
            const CudaThread& lane = run.threads[warp_start + l];
            if ((t.warp.mask >> l & 1u) && lane.wait != Wait::done && !meets(lane, t)) {
                first = &t;
                other = &lane;
                break;
            }
        }
    }
    std::string message =
        all_barriers ? "divergent __syncthreads() in block " : "deadlock in block ";
    message += str(blockIdx) + ": " + describe_wait(*first);
    if (other != nullptr) message += ", while " + describe_wait(*other);
    message += all_barriers
                   ? "; every thread of a block must reach the same __syncthreads()"
                   : "; a warp operation waits until every lane of its mask calls the same "
                     "operation with the same mask (from any line)";
    return message;
}

// Releases the block-wide barrier when every live thread waits at the same __syncthreads().
bool release_barrier(BlockRun& run) {
    const CudaThread* first = nullptr;
    for (const CudaThread& t : run.threads) {
        if (t.wait == Wait::done) continue;
        if (t.wait != Wait::barrier) return false;
        if (first == nullptr) first = &t;
        if (!same_place(t.where, first->where)) return false;
    }
    std::size_t warps_waiting = 0;
    for (std::size_t i = 0; i < run.threads.size(); ++i) {
        if (run.threads[i].wait != Wait::barrier) continue;
        run.threads[i].wait = Wait::none;
        if (i % warpSize == 0 || run.threads[i - 1].wait == Wait::done) ++warps_waiting;
    }
    if (run.recording != nullptr) recorder::barrier_released(warps_waiting);
    return true;
}

bool guard_changed(const BlockRun& run);  // (device memory, below)

// The order in which a pass visits the threads.
void arrange(std::vector<std::size_t>& order, const ThreadOrder& knob, std::mt19937_64& random) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (knob.order == Order::reverse) std::reverse(order.begin(), order.end());
    if (knob.order == Order::random) std::shuffle(order.begin(), order.end(), random);
}

void run_block(BlockRun& run, const ThreadOrder& knob, std::uint64_t block_number) {
    const dim3 block = blockDim;
    if (run.recording != nullptr) {
        const unsigned index[3] = {blockIdx.x, blockIdx.y, blockIdx.z};
        recorder::block_begin(run.recording, block_number, index, run.threads.size());
    }
    for (std::size_t i = 0; i < run.threads.size(); ++i) {
        CudaThread& t = run.threads[i];
        t = CudaThread{};
        t.index = uint3{unsigned(i % block.x), unsigned(i / block.x % block.y),
                        unsigned(i / (std::size_t(block.x) * block.y))};
    }
    run.kernel_error = nullptr;
    run.aborting = false;
    // A GPU leaves shared memory with whatever the previous block wrote; NaN makes reads of
    // unwritten dynamic shared memory visible.
    if (run.dynamic_shared_bytes > 0)
        std::memset(run.dynamic_shared, 0xFF, run.dynamic_shared_bytes);

    std::mt19937_64 random(knob.seed ^ (block_number * 0x9E3779B97F4A7C15ull));
    std::vector<std::size_t> order(run.threads.size());
    while (true) {
        arrange(order, knob, random);
        for (std::size_t slot : order) {
            if (run.threads[slot].wait != Wait::none) continue;
            resume(run, run.threads[slot], slot);
            if (run.watched != nullptr && !run.writer && guard_changed(run))
                run.writer = run.threads[slot].index;
        }
        const bool finished = std::all_of(run.threads.begin(), run.threads.end(),
                                          [](const CudaThread& t) { return t.wait == Wait::done; });
        if (finished) break;
        if (release_warps(run) || release_barrier(run)) continue;

        // Nothing can move: unwind every waiting thread, then report.
        const std::string message = stuck_message(run);
        run.aborting = true;
        for (std::size_t slot = 0; slot < run.threads.size(); ++slot)
            if (run.threads[slot].wait != Wait::done) resume(run, run.threads[slot], slot);
        throw CudaError(message);
    }
    if (run.recording != nullptr) recorder::block_end();
    if (run.kernel_error) std::rethrow_exception(run.kernel_error);
}

// ---- launch checks -----------------------------------------------------------------------------

std::size_t max_dynamic_shared = 48 * 1024;
constexpr std::size_t opt_in_shared_limit = 227 * 1024;

std::string dims(dim3 d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

// The checks a GPU makes before it starts a kernel, with CUDA's own words first.
void validate_launch(dim3 grid, dim3 block, std::size_t shared_bytes, std::source_location where) {
    auto reject = [&](const std::string& cuda_words, const std::string& detail) {
        throw CudaError("kernel launch at " + where_str(where) + ": " + cuda_words + " (" + detail +
                        ")");
    };
    const std::uint64_t threads = std::uint64_t(block.x) * block.y * block.z;
    if (threads == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
        reject("invalid configuration argument",
               "grid " + dims(grid) + ", block " + dims(block) + ": every dimension must be >= 1");
    if (threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64)
        reject("invalid configuration argument",
               "block " + dims(block) + " = " + std::to_string(threads) +
                   " threads; a block holds at most 1024 threads, blockDim.z at most 64");
    if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
        reject("invalid configuration argument",
               "grid " + dims(grid) + "; gridDim.y and gridDim.z are at most 65535");
    if (shared_bytes > max_dynamic_shared)
        reject("invalid argument",
               std::to_string(shared_bytes) + " bytes of dynamic shared memory; the limit is " +
                   std::to_string(max_dynamic_shared) + " unless raised (cudaFuncSetAttribute)");
}

// How many OS threads may run blocks at once. Each keeps one guarded stack per CUDA thread of a
// block, and each guarded stack is two memory mappings; Linux allows about 65530 per process
// (vm.max_map_count). Half of that is left for stacks, the rest for everything else.
int simulator_threads(std::size_t threads_per_block) {
    static const long map_limit = [] {
        long limit = 65530;
        if (FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
            if (std::fscanf(f, "%ld", &limit) != 1) limit = 65530;
            std::fclose(f);
        }
        return limit;
    }();
    const long affordable = map_limit / 2 / (2 * long(threads_per_block));
    return int(std::clamp<long>(affordable, 1, omp_get_max_threads()));
}

// ---- the thread-order knob ---------------------------------------------------------------------

std::mutex order_mutex;

ThreadOrder& order_setting() {
    static ThreadOrder order = [] {
        const char* text = std::getenv("TRIPTYCH_SIM_ORDER");
        return text != nullptr && *text != '\0' ? parse_thread_order(text) : ThreadOrder{};
    }();
    return order;
}

// ---- device memory -----------------------------------------------------------------------------

std::shared_mutex allocations_mutex;
std::map<std::uintptr_t, std::size_t>& allocations() {
    static std::map<std::uintptr_t, std::size_t> map;  // start address -> size in bytes
    return map;
}
constexpr std::align_val_t device_alignment{256};  // as cudaMalloc guarantees
constexpr unsigned char guard_pattern = 0xA5;      // the bytes after each allocation

// The guard as it must read: compared whole (memcmp), so that checking every allocation's guard
// after every launch stays cheap.
const std::vector<unsigned char>& intact_guard() {
    static const std::vector<unsigned char> bytes(device_guard_bytes(), guard_pattern);
    return bytes;
}

bool guard_changed(const BlockRun& run) {
    return std::memcmp(run.watched, intact_guard().data(), run.watched_bytes) != 0;
}

// An allocation whose guard bytes a kernel changed: its size, and the first byte changed.
struct ChangedGuard {
    unsigned char* guard;
    std::size_t buffer_bytes, first_changed;
};

// After a launch: the first allocation whose guard bytes a kernel changed, if any.
std::optional<ChangedGuard> changed_guard() {
    const std::vector<unsigned char>& intact = intact_guard();
    if (intact.empty()) return std::nullopt;  // no guards under AddressSanitizer
    std::shared_lock lock(allocations_mutex);
    for (auto [start, bytes] : allocations()) {
        auto* guard = reinterpret_cast<unsigned char*>(start) + bytes;
        if (std::memcmp(guard, intact.data(), intact.size()) == 0) continue;
        std::size_t i = 0;
        while (guard[i] == guard_pattern) ++i;
        return ChangedGuard{guard, bytes, i};
    }
    return std::nullopt;
}

}  // namespace

// ---- public API --------------------------------------------------------------------------------

std::string where_str(const std::source_location& where) {
    std::string file = where.file_name();
    const std::string root = std::string(TRIPTYCH_SOURCE_DIR) + "/";
    if (file.rfind(root, 0) == 0) file = file.substr(root.size());
    return file + ":" + std::to_string(where.line());
}

std::size_t device_guard_bytes() {
#if defined(__SANITIZE_ADDRESS__)
    return 0;  // AddressSanitizer's own redzones catch the write as it happens
#else
    // The classic overrun, a grid rounded up to whole blocks with no `if (i < n)`, writes up to a
    // block less one thread past the end: 1023 float4s at most, under 16 KiB. A guard that size
    // turns it into this error instead of corrupting the heap the simulator runs on.
    return 16384;
#endif
}

void syncthreads(std::source_location where) {
    BlockRun& run = running_block("__syncthreads()");
    if (barrier_removed(where)) return;  // TRIPTYCH_SIM_SKIP_SYNC: as if deleted
    suspend(run, Wait::barrier, where);
}

std::uint64_t warp_exchange(WarpOp op, unsigned mask, std::uint64_t value, int parameter, int width,
                            std::source_location where) {
    BlockRun& run = running_block("a warp operation");
    if (op == WarpOp::syncwarp && barrier_removed(where)) return 0;  // TRIPTYCH_SIM_SKIP_SYNC
    if (width < 1 || width > warpSize || (width & (width - 1)) != 0)
        throw CudaError("warp operation at " + where_str(where) + ": width " +
                        std::to_string(width) + " is not a power of two from 1 to 32");
    CudaThread& me = *run.current;
    const std::size_t lane = std::size_t(&me - run.threads.data()) % warpSize;
    if (!(mask >> lane & 1u))
        throw CudaError("warp operation at " + where_str(where) + ": thread " + str(me.index) +
                        " of block " + str(blockIdx) + " is lane " + std::to_string(lane) +
                        " and calls it with mask 0x" + hex(mask) +
                        ", which leaves itself out; a lane calling a *_sync function must be in "
                        "its mask");
    me.warp = WarpRequest{op, mask, value, parameter, width, 0};
    suspend(run, Wait::warp, where);
    return me.warp.result;
}

void* dynamic_shared_memory() {
    BlockRun& run = running_block("dynamic shared memory");
    return run.dynamic_shared;
}

namespace {
std::atomic<std::uint64_t> malloc_calls{0};
}  // namespace

std::uint64_t device_mallocs() { return malloc_calls.load(); }

void* device_malloc(std::size_t bytes) {
    ++malloc_calls;
    streams::refuse_while_capturing("a device allocation (cudaMalloc) of " + std::to_string(bytes) +
                                    " bytes");
    if (bytes == 0) return nullptr;
    auto* pointer =
        static_cast<unsigned char*>(::operator new(bytes + device_guard_bytes(), device_alignment));
    std::memset(pointer, 0xFF, bytes);
    std::memset(pointer + bytes, guard_pattern, device_guard_bytes());
    {
        std::unique_lock lock(allocations_mutex);
        allocations()[reinterpret_cast<std::uintptr_t>(pointer)] = bytes;
    }
    return pointer;
}

void device_free(void* pointer) {
    if (pointer == nullptr) return;
    {
        std::unique_lock lock(allocations_mutex);
        allocations().erase(reinterpret_cast<std::uintptr_t>(pointer));
    }
    streams::forget_buffer(pointer);
    ::operator delete(pointer, device_alignment);
}

std::vector<std::pair<std::uintptr_t, std::size_t>> device_allocations() {
    std::shared_lock lock(allocations_mutex);
    return {allocations().begin(), allocations().end()};
}

std::pair<std::uintptr_t, std::size_t> device_allocation_of(const void* pointer) {
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    std::shared_lock lock(allocations_mutex);
    auto it = allocations().upper_bound(address);
    if (it == allocations().begin()) return {0, 0};
    --it;
    if (address >= it->first + it->second) return {0, 0};
    return *it;
}

bool is_device_pointer(const void* pointer) { return device_allocation_of(pointer).second > 0; }

void note_pointers_in(const void* object, std::size_t bytes,
                      std::vector<streams::Access>& accesses) {
    // A struct's pointer members sit at multiples of the pointer's size from its start.
    const auto* words = static_cast<const unsigned char*>(object);
    for (std::size_t offset = 0; offset + sizeof(void*) <= bytes; offset += sizeof(void*)) {
        const void* candidate = nullptr;
        std::memcpy(&candidate, words + offset, sizeof candidate);
        if (candidate != nullptr && is_device_pointer(candidate))
            accesses.push_back({candidate, true});
    }
}

void check_argument_pointer(const void* pointer, int index, std::source_location where) {
    if (pointer == nullptr || is_device_pointer(pointer)) return;
    throw CudaError("kernel launch at " + where_str(where) + ": argument " + std::to_string(index) +
                    " is a host pointer; a kernel can only use device memory (device_allocate / "
                    "cudaMalloc). On a GPU this is an illegal memory access.");
}

std::string ThreadOrder::str() const {
    switch (order) {
        case Order::forward:
            return "forward";
        case Order::reverse:
            return "reverse";
        case Order::random:
            return "random:" + std::to_string(seed);
    }
    return "?";
}

ThreadOrder parse_thread_order(const std::string& text) {
    if (text == "forward") return {Order::forward, 0};
    if (text == "reverse") return {Order::reverse, 0};
    const std::string prefix = "random:";
    if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size()) {
        const std::string digits = text.substr(prefix.size());
        const bool numeric =
            digits.size() <= 19 &&
            std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (numeric) return {Order::random, std::stoull(digits)};
    }
    throw InvalidArgument("simulator thread order '" + text +
                          "' is not one of forward, reverse, random:SEED");
}

ThreadOrder thread_order() {
    std::lock_guard lock(order_mutex);
    return order_setting();
}

void set_thread_order(ThreadOrder order) {
    std::lock_guard lock(order_mutex);
    order_setting() = order;
}

namespace {

// TRIPTYCH_SIM_STACK_KB in bytes: 64 KiB when unset; InvalidArgument unless it is a whole number
// of KiB from 8 to 65536.
// The whole number in environment variable `name`, `unset` when it is unset or empty;
// InvalidArgument "NAME=VALUE: <why>" unless it is one from `low` to `high` (at most 5 digits).
long whole_number_setting(const char* name, long unset, long low, long high,
                          const std::string& why) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return unset;
    const std::string value = text;
    const bool digits = value.size() <= 5 && std::all_of(value.begin(), value.end(), [](char c) {
                            return c >= '0' && c <= '9';
                        });
    const long number = digits ? std::stol(value) : 0;
    if (number < low || number > high)
        throw InvalidArgument(std::string(name) + "=" + value + ": " + why);
    return number;
}

std::size_t stack_bytes_from_environment() {
    return std::size_t(whole_number_setting(
               "TRIPTYCH_SIM_STACK_KB", 64, 8, 65536,
               "each CUDA thread's stack takes a whole number of KiB from 8 to 65536")) *
           1024;
}

}  // namespace

std::size_t stack_bytes() {
    static const std::size_t bytes = stack_bytes_from_environment();
    return bytes;
}

namespace {

// TRIPTYCH_SIM_GRID_ROWS: gpu::max_grid_rows when unset; InvalidArgument unless it is a whole
// number from 1 to that.
std::int64_t grid_rows_from_environment() {
    return whole_number_setting("TRIPTYCH_SIM_GRID_ROWS", gpu::max_grid_rows, 1, gpu::max_grid_rows,
                                "the most blocks a launch puts along y is a whole number from 1 "
                                "to " +
                                    std::to_string(gpu::max_grid_rows));
}

}  // namespace

std::int64_t grid_rows_limit() {
    static const std::int64_t rows = grid_rows_from_environment();
    return rows;
}

void check_environment() {
    if (const char* order = std::getenv("TRIPTYCH_SIM_ORDER"); order != nullptr && *order != '\0')
        try {
            parse_thread_order(order);
        } catch (const InvalidArgument& e) {
            throw InvalidArgument("TRIPTYCH_SIM_ORDER=" + std::string(order) + ": " + e.what());
        }
    stack_bytes_from_environment();
    grid_rows_from_environment();
    removed_barriers();  // reads TRIPTYCH_SIM_SKIP_SYNC, InvalidArgument if it is malformed
    for (const char* name : {"TRIPTYCH_SIM_PROFILE", "TRIPTYCH_SIM_RACECHECK"}) {
        const char* value = std::getenv(name);
        if (value != nullptr && std::string(value) != "" && std::string(value) != "0" &&
            std::string(value) != "1")
            throw InvalidArgument(std::string(name) + "=" + value + ": takes 1 (on) or 0 (off)");
    }
}

void set_max_dynamic_shared_bytes(std::size_t bytes) {
    if (bytes > opt_in_shared_limit)
        throw CudaError("set_max_dynamic_shared_bytes: " + std::to_string(bytes) +
                        " bytes is over the device limit of " +
                        std::to_string(opt_in_shared_limit));
    max_dynamic_shared = std::max<std::size_t>(bytes, 48 * 1024);
}

namespace {

// What every block of one launch shares.
struct LaunchParts {
    dim3 grid, block;
    std::size_t shared_bytes = 0;
    ThreadBody body = nullptr;
    const void* context = nullptr;
    std::string site;  // file:line of the launch
};

uint3 block_index(std::uint64_t b, dim3 grid) {
    return uint3{unsigned(b % grid.x), unsigned(b / grid.x % grid.y),
                 unsigned(b / (std::uint64_t(grid.x) * grid.y))};
}

// Makes `run` ready to run blocks of `launch` on the calling host thread.
void set_up(BlockRun& run, const LaunchParts& launch, StackPool& stacks,
            std::byte* dynamic_shared) {
    run.body = launch.body;
    run.context = launch.context;
    run.threads.resize(std::size_t(launch.block.x) * launch.block.y * launch.block.z);
    run.stacks = &stacks;
    run.dynamic_shared = dynamic_shared;
    run.dynamic_shared_bytes = launch.shared_bytes;
    run.launch_site = launch.site;
    gridDim = launch.grid;
    blockDim = launch.block;
    current_block = &run;
}

// Which thread of which block wrote into `changed`'s guard: the launch runs again, one block at a
// time on this host thread, and the guard's bytes up to the first one changed are compared after
// every stretch a CUDA thread runs. The first run's outputs are in place, so a kernel that updates
// its data in place computes other values this time; but a write past the end that follows from
// the indices (a missing bounds check, the usual cause) happens again. Returns "thread (x,y,z) of
// block (x,y,z)", or nothing if the second run wrote no watched byte.
std::optional<std::string> find_guard_writer(const LaunchParts& launch,
                                             const ChangedGuard& changed) {
    std::memset(changed.guard, guard_pattern, device_guard_bytes());
    StackPool stacks;
    std::unique_ptr<std::byte[]> shared(launch.shared_bytes > 0 ? new std::byte[launch.shared_bytes]
                                                                : nullptr);
    BlockRun run;
    set_up(run, launch, stacks, shared.get());
    run.watched = changed.guard;
    run.watched_bytes = changed.first_changed + 1;
    const ThreadOrder knob = thread_order();
    const std::uint64_t blocks = std::uint64_t(launch.grid.x) * launch.grid.y * launch.grid.z;
    std::optional<std::string> found;
    for (std::uint64_t b = 0; b < blocks && !found; ++b) {
        blockIdx = block_index(b, launch.grid);
        try {
            run_block(run, knob, b);
        } catch (...) {  // the first run's error, if it had one, is the one reported
        }
        if (run.writer) found = "thread " + str(*run.writer) + " of block " + str(blockIdx);
    }
    current_block = nullptr;
    std::memset(changed.guard, guard_pattern, device_guard_bytes());
    return found;
}

}  // namespace

void run_grid(dim3 grid, dim3 block, std::size_t shared_bytes, std::source_location where,
              ThreadBody thread_body, const void* context, const void* kernel) {
    validate_launch(grid, block, shared_bytes, where);
    const LaunchParts launch{grid, block, shared_bytes, thread_body, context, where_str(where)};
    const unsigned grid_dims[3] = {grid.x, grid.y, grid.z};
    const unsigned block_dims[3] = {block.x, block.y, block.z};
    recorder::Launch* recording =
        recorder::launch_begin(kernel, grid_dims, block_dims, shared_bytes, launch.site);
    const ThreadOrder knob = thread_order();
    const std::uint64_t blocks = std::uint64_t(grid.x) * grid.y * grid.z;
    const std::size_t threads = std::size_t(block.x) * block.y * block.z;

    // A failed launch reports the failure of its lowest-numbered failing block, whichever worker
    // got there first: the blocks are handed out in order, so every block below a failed one has
    // been taken and runs to its end, and only the blocks above it are skipped. The report is then
    // the same on every run (with the same thread order), however the workers were scheduled.
    std::exception_ptr first_error;
    std::uint64_t failed_block = blocks;  // first_error's block, or `blocks` while none has failed
    std::mutex error_mutex;
#pragma omp parallel if (blocks > 1) num_threads(simulator_threads(threads))
    {
        thread_local StackPool stacks;
        // Exact size, so AddressSanitizer catches an access one byte past the end.
        std::unique_ptr<std::byte[]> dynamic_shared(shared_bytes > 0 ? new std::byte[shared_bytes]
                                                                     : nullptr);
        BlockRun run;
        set_up(run, launch, stacks, dynamic_shared.get());
        run.recording = recording;
        if (recording != nullptr)
            recorder::worker_begin(recording, run.dynamic_shared, shared_bytes);

#pragma omp for schedule(dynamic)
        for (std::int64_t b = 0; b < std::int64_t(blocks); ++b) {
            {
                std::lock_guard lock(error_mutex);
                if (std::uint64_t(b) > failed_block) continue;  // a block before it failed
            }
            blockIdx = block_index(std::uint64_t(b), grid);
            try {
                run_block(run, knob, std::uint64_t(b));
            } catch (...) {
                std::lock_guard lock(error_mutex);
                if (std::uint64_t(b) < failed_block) {
                    failed_block = std::uint64_t(b);
                    first_error = std::current_exception();
                }
            }
        }
        if (recording != nullptr) recorder::worker_end(recording);
        current_block = nullptr;
    }
    // A kernel's own error comes first, then what the recorder found, then the guard bytes; each
    // way out leaves the guards intact for the next launch.
    const std::optional<ChangedGuard> changed = changed_guard();
    const auto restore_guard = [&] {
        if (changed) std::memset(changed->guard, guard_pattern, device_guard_bytes());
    };
    if (recording != nullptr && first_error) recorder::launch_abandoned(recording);
    if (first_error) {
        restore_guard();
        std::rethrow_exception(first_error);
    }
    if (recording != nullptr) {
        try {
            recorder::launch_end(recording);  // throws for the races it found
        } catch (...) {
            restore_guard();
            throw;
        }
    }
    if (!changed) return;
    // The recorder's instrumented kernels are not run again outside a recording.
    const std::optional<std::string> writer =
        recording == nullptr ? find_guard_writer(launch, *changed) : std::nullopt;
    restore_guard();
    throw CudaError(
        "kernel launched at " + launch.site + " wrote past the end of a device buffer of " +
        std::to_string(changed->buffer_bytes) + " bytes (" +
        std::to_string(changed->first_changed + 1) +
        (changed->first_changed == 0 ? " byte" : " bytes") + " past it)" +
        (writer ? "; run again block by block, " + *writer + " wrote there first" : "") +
        ". On a GPU this corrupts a neighbouring buffer or is an illegal memory "
        "access. TRIPTYCH_SIM_RACECHECK=1 names the line");
}

}  // namespace triptych::sim
