// The CUDA simulator: runs unmodified CUDA kernels on the CPU, so every kernel can be tested,
// stepped through (gdb, printf) and sanitized on a machine without a GPU.
//
// How it works (details in gpu/runtime/sim/sim.cpp):
//   - Blocks are spread over OpenMP threads. Inside a block every CUDA thread is a fiber
//     (Boost.Context) on one OS thread; a fiber runs until it finishes or waits at
//     __syncthreads() or a warp operation, then the next one runs.
//   - `__shared__` is `thread_local` (static at block scope): one copy per OS thread, which runs
//     one block at a time. threadIdx/blockIdx/... are thread-local variables set at each switch.
//   - The order in which threads run between barriers is a knob (TRIPTYCH_SIM_ORDER=forward,
//     reverse, random:SEED): a missing __syncthreads() shows up as wrong results in another order.
//   - The access recorder (recorder.hpp) counts every launch's memory requests as Nsight Compute
//     does and checks its threads for races, in the instrumented copy of a program.
//
//   - Launches go to the host thread's current stream (gpu/runtime/stream.hpp). Each runs when it
//     is issued, or is recorded while its stream is captured into a graph; streams.hpp checks
//     that no two streams' work touches one buffer without an event or a synchronisation between.
//
// Known limits: warps do not run in lock-step (code relying on implicit warp synchrony may pass
// or fail); streams never run at the same time (races between them are found by the check, not
// by wrong results); float results may differ from a GPU in the last bits; and timings taken here
// say nothing about a GPU.
//
// Include this only through gpu/runtime/cuda.hpp, and after any CUDA header: CUDA's headers
// define __shared__ as nothing for a host compiler, so this header redefines the keywords.
#pragma once

#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "gpu/runtime/sim/recorder.hpp"
#include "gpu/runtime/sim/streams.hpp"
#include "gpu/runtime/stream.hpp"

// ---- vector types and dim3 (global namespace, as in CUDA) -------------------------------------

struct uint3 {
    unsigned x, y, z;
};

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// Kernels cast float* to float4* for 16-byte loads, so these may alias other types.
struct __attribute__((aligned(8), may_alias)) float2 {
    float x, y;
};
struct __attribute__((aligned(16), may_alias)) float4 {
    float x, y, z, w;
};
struct __attribute__((aligned(8), may_alias)) int2 {
    int x, y;
};
struct __attribute__((aligned(16), may_alias)) int4 {
    int x, y, z, w;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// ---- the built-in variables --------------------------------------------------------------------

// Defined here (inline), not only declared: every kernel then sees that they need no dynamic
// initialisation and reads them with one thread-local load, without an init-function check.
inline thread_local uint3 threadIdx{};
inline thread_local uint3 blockIdx{};
inline thread_local dim3 blockDim{};
inline thread_local dim3 gridDim{};
inline constexpr int warpSize = 32;

// ---- keywords ----------------------------------------------------------------------------------

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __constant__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __shared__ thread_local
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)

namespace triptych::sim {

// ---- what the kernels' built-ins call into (sim.cpp) ------------------------------------------

enum class WarpOp { shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all, syncwarp, mma };

// How a warp-wide multiply-accumulate spreads its matrices over the 32 lanes:
//   wmma         wmma::mma_sync (gpu/runtime/sim/wmma.hpp), whose spread CUDA leaves opaque: the
//                simulator's choice, element i of a matrix's row-major order held by lane i % 32
//                as its element i / 32.
//   m16n8k8_ptx  PTX's mma.sync.aligned.m16n8k8 (gpu/runtime/mma_sync.hpp), the layout the PTX ISA
//                defines ("Matrix Fragments for mma.m16n8k8", .tf32): with g = lane / 4 and
//                t = lane % 4, A (16 x 8) element e of a lane is (g + 8 * (e % 2), t + 4 * (e /
//                2)), B (8 x 8) element e is (t + 4 * e, g), C and D (16 x 8) element e is (g + 8 *
//                (e / 2), 2 * t + e % 2).
enum class MmaLayout { wmma, m16n8k8_ptx };

// One lane's part of a warp-wide matrix multiply-accumulate, D (m x n) = A (m x k) * B (k x n) + C,
// each matrix spread over the lanes as `layout` says; a, b and c point at this lane's elements as
// floats (A and B already in the precision the fragment holds), d at where its elements of D go
// (d may be c). Passed through warp_exchange(WarpOp::mma, ...) as a pointer: when all 32 lanes
// have arrived, the simulator computes every lane's D, adding in k order with fused
// multiply-adds.
struct MmaRequest {
    int m, n, k;
    const float* a;
    const float* b;
    const float* c;
    float* d;
    MmaLayout layout = MmaLayout::wmma;
};

// Blocks the calling CUDA thread at a __syncthreads() until every live thread of its block is
// there. Called outside a kernel, it throws CudaError.
void syncthreads(std::source_location where);

// Blocks the calling lane until every lane of `mask` in its warp has called the same kind of
// warp operation with the same mask (from any line, as on a GPU since Volta), then
// returns this lane's result: for shuffles the 8 bytes of the source lane's value, for votes the
// ballot mask or the any/all answer.
std::uint64_t warp_exchange(WarpOp op, unsigned mask, std::uint64_t value, int parameter, int width,
                            std::source_location where);

// The current block's dynamic shared memory (its size is the launch's shared_bytes).
void* dynamic_shared_memory();

// Device memory: host memory registered as "device", so a launch can refuse host pointers.
// Fresh allocations are filled with 0xFF bytes (NaN as float), as a GPU leaves garbage. Each is
// followed by device_guard_bytes() (16 KiB, more than a block of threads can overrun a buffer by)
// of a known pattern, checked after every launch: a kernel that writes past the end of a buffer
// fails its launch, with the thread and block that wrote there (the launch runs again, a block
// at a time, with the guard watched; under TRIPTYCH_SIM_RACECHECK=1 the error names the line
// too). Under AddressSanitizer there are none: it stops at the write itself, and names the CUDA
// thread and block.
std::size_t device_guard_bytes();
void* device_malloc(std::size_t bytes);
void device_free(void* pointer);
// How many device_malloc calls this process has made: the tests hold an op that should allocate
// nothing per call (cudaMalloc and cudaFree wait for the whole device) to it.
std::uint64_t device_mallocs();
bool is_device_pointer(const void* pointer);
// Every live device allocation: (start address, bytes).
std::vector<std::pair<std::uintptr_t, std::size_t>> device_allocations();
// The device allocation holding `pointer`: (start address, bytes), or (0, 0) if none does.
std::pair<std::uintptr_t, std::size_t> device_allocation_of(const void* pointer);

// "gpu/tiled/gemm.cu:42": a call site, named relative to the source tree when it lies inside it.
std::string where_str(const std::source_location& where);

// The order in which the threads of a block run between barriers.
enum class Order { forward, reverse, random };
struct ThreadOrder {
    Order order = Order::forward;
    std::uint64_t seed = 0;
    std::string str() const;
};
// Read from TRIPTYCH_SIM_ORDER ("forward", "reverse", "random:SEED") at start-up.
ThreadOrder thread_order();
void set_thread_order(ThreadOrder order);
// Parses "forward" / "reverse" / "random:SEED"; throws InvalidArgument otherwise.
ThreadOrder parse_thread_order(const std::string& text);

// Fiber stack size per CUDA thread (default 64 KiB, TRIPTYCH_SIM_STACK_KB), with a guard page.
std::size_t stack_bytes();

// The most blocks gpu::grid_rows gives a launch dimension (launch.hpp): TRIPTYCH_SIM_GRID_ROWS,
// 1 to 65535, or 65535 when it is unset.
std::int64_t grid_rows_limit();

// InvalidArgument naming the variable when one of the simulator's settings holds a value it does
// not take: TRIPTYCH_SIM_ORDER, TRIPTYCH_SIM_STACK_KB, TRIPTYCH_SIM_PROFILE,
// TRIPTYCH_SIM_RACECHECK, TRIPTYCH_SIM_GRID_ROWS (grid_rows_limit) or TRIPTYCH_SIM_SKIP_SYNC
// (removed_barriers.hpp). A command checks them before it starts, where a bad one would fail the
// first launch instead (as if the op's input were at fault) or, for PROFILE and RACECHECK, be
// ignored.
void check_environment();

// The dynamic shared memory limit a launch may use; raised like cudaFuncSetAttribute's
// cudaFuncAttributeMaxDynamicSharedMemorySize (up to 227 KiB, an H100/H200's limit).
void set_max_dynamic_shared_bytes(std::size_t bytes);

// Runs every block of the grid; `thread_body` runs one CUDA thread (the builtins already set).
// Throws CudaError for a launch the GPU would reject, and rethrows the first exception a kernel
// thread threw. `where` is the launch's call site, for messages.
// `kernel` is the kernel function, named in the recorder's profiles.
using ThreadBody = void (*)(const void* context);
void run_grid(dim3 grid, dim3 block, std::size_t shared_bytes, std::source_location where,
              ThreadBody thread_body, const void* context, const void* kernel);

// Throws CudaError if argument `index` is a non-null host pointer.
void check_argument_pointer(const void* pointer, int index, std::source_location where);

template <typename T>
void check_argument(const T& argument, int index, std::source_location where) {
    if constexpr (std::is_pointer_v<T>) check_argument_pointer(argument, index, where);
}

// The words of `bytes` bytes at `object` that point into device buffers, each as a write.
void note_pointers_in(const void* object, std::size_t bytes,
                      std::vector<streams::Access>& accesses);

// A struct argument that says which buffers it lets a kernel read and which write: a member
// `template <typename Note> void accesses(Note note) const` calling note(pointer, writes) for each
// pointer it holds (a table of tensors, gpu/tiled/optimizer.cu's TensorTable).
template <typename T>
concept DeclaresAccesses = requires(const T& argument) {
    argument.accesses([](const void*, bool) {});
};

// What a kernel argument lets the kernel touch, for the stream-order check (streams.hpp): the
// buffer a pointer points into, written unless it points to const; the pointers a struct argument
// declares (DeclaresAccesses), as it declares them; any other pointer stored in a struct argument
// counts as written, since its constness is lost in the struct's bytes.
template <typename T>
void note_argument(const T& argument, std::vector<streams::Access>& accesses) {
    if constexpr (std::is_pointer_v<T>) {
        if (argument != nullptr)
            accesses.push_back({argument, !std::is_const_v<std::remove_pointer_t<T>>});
    } else if constexpr (DeclaresAccesses<T>) {
        argument.accesses([&](const void* pointer, bool writes) {
            if (pointer != nullptr) accesses.push_back({pointer, writes});
        });
    } else if constexpr (std::is_class_v<T>) {
        note_pointers_in(&argument, sizeof(T), accesses);
    }
}

// Issues the kernel to the current stream with a copy of its arguments: a captured launch runs
// when its graph does, long after this call has returned.
template <typename Kernel, typename... Args>
void launch(Kernel kernel, dim3 grid, dim3 block, std::size_t shared_bytes,
            std::source_location where, const Args&... args) {
    int index = 0;
    (check_argument(args, index++, where), ...);
    std::vector<streams::Access> accesses;
    (note_argument(args, accesses), ...);
    const void* kernel_address = nullptr;
    if constexpr (std::is_pointer_v<Kernel>) kernel_address = reinterpret_cast<const void*>(kernel);
    auto run = [=, arguments = std::tuple<Args...>(args...)] {
        // A graph may run it after the buffers were freed: the pointers are checked again.
        int position = 0;
        std::apply([&](const auto&... a) { (check_argument(a, position++, where), ...); },
                   arguments);
        struct Context {
            Kernel kernel;
            const std::tuple<Args...>* arguments;
        } context{kernel, &arguments};
        ThreadBody body = [](const void* raw) {
            const auto* c = static_cast<const Context*>(raw);
            std::apply(c->kernel, *c->arguments);
        };
        run_grid(grid, block, shared_bytes, where, body, &context, kernel_address);
    };
    streams::issue(static_cast<streams::Stream*>(gpu::current_stream().handle()), "kernel",
                   std::move(accesses), std::move(run), where);
}

// Values travel through warp_exchange as 8 raw bytes.
template <typename T>
std::uint64_t to_bits(T value) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffle of a type > 8 bytes");
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    return bits;
}
template <typename T>
T from_bits(std::uint64_t bits) {
    T value;
    std::memcpy(&value, &bits, sizeof(T));
    return value;
}

}  // namespace triptych::sim

// ---- barriers and warp operations --------------------------------------------------------------

inline void __syncthreads(std::source_location where = std::source_location::current()) {
    triptych::sim::syncthreads(where);
}

inline void __syncwarp(unsigned mask = 0xffffffffu,
                       std::source_location where = std::source_location::current()) {
    triptych::sim::warp_exchange(triptych::sim::WarpOp::syncwarp, mask, 0, 0, warpSize, where);
}

template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
              std::source_location where = std::source_location::current()) {
    using namespace triptych::sim;
    return from_bits<T>(warp_exchange(WarpOp::shfl, mask, to_bits(var), src_lane, width, where));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 std::source_location where = std::source_location::current()) {
    using namespace triptych::sim;
    return from_bits<T>(
        warp_exchange(WarpOp::shfl_up, mask, to_bits(var), int(delta), width, where));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   std::source_location where = std::source_location::current()) {
    using namespace triptych::sim;
    return from_bits<T>(
        warp_exchange(WarpOp::shfl_down, mask, to_bits(var), int(delta), width, where));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                  std::source_location where = std::source_location::current()) {
    using namespace triptych::sim;
    return from_bits<T>(
        warp_exchange(WarpOp::shfl_xor, mask, to_bits(var), lane_mask, width, where));
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location where = std::source_location::current()) {
    using namespace triptych::sim;
    return unsigned(warp_exchange(WarpOp::ballot, mask, predicate != 0, 0, warpSize, where));
}
inline int __any_sync(unsigned mask, int predicate,
                      std::source_location where = std::source_location::current()) {
    using namespace triptych::sim;
    return int(warp_exchange(WarpOp::any, mask, predicate != 0, 0, warpSize, where));
}
inline int __all_sync(unsigned mask, int predicate,
                      std::source_location where = std::source_location::current()) {
    using namespace triptych::sim;
    return int(warp_exchange(WarpOp::all, mask, predicate != 0, 0, warpSize, where));
}

// ---- atomics: real atomics, because blocks run in parallel on several OS threads ---------------
// While the access recorder runs, each tells it its address (the race checker exempts atomics).

#define TRIPTYCH_NOTE_ATOMIC(address)         \
    if (::triptych::sim::recorder::recording) \
    ::triptych::sim::recorder::note_atomic(address, sizeof(*address))

template <typename T>
T atomicAdd(T* address, T value) {
    TRIPTYCH_NOTE_ATOMIC(address);
    return std::atomic_ref<T>(*address).fetch_add(value);  // a CAS loop for float and double
}
template <typename T>
T atomicSub(T* address, T value) {
    TRIPTYCH_NOTE_ATOMIC(address);
    return std::atomic_ref<T>(*address).fetch_sub(value);
}
template <typename T>
T atomicExch(T* address, T value) {
    TRIPTYCH_NOTE_ATOMIC(address);
    return std::atomic_ref<T>(*address).exchange(value);
}
template <typename T>
T atomicCAS(T* address, T compare, T value) {
    TRIPTYCH_NOTE_ATOMIC(address);
    std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
    return compare;  // the old value, whether or not the swap happened
}
template <typename T>
T atomicMax(T* address, T value) {
    static_assert(std::is_integral_v<T>,
                  "CUDA's atomicMax takes integers; use a CAS loop for float");
    TRIPTYCH_NOTE_ATOMIC(address);
    std::atomic_ref<T> target(*address);
    T old = target.load();
    while (old < value && !target.compare_exchange_weak(old, value)) {
    }
    return old;
}
template <typename T>
T atomicMin(T* address, T value) {
    static_assert(std::is_integral_v<T>,
                  "CUDA's atomicMin takes integers; use a CAS loop for float");
    TRIPTYCH_NOTE_ATOMIC(address);
    std::atomic_ref<T> target(*address);
    T old = target.load();
    while (old > value && !target.compare_exchange_weak(old, value)) {
    }
    return old;
}

#undef TRIPTYCH_NOTE_ATOMIC

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- intrinsics: the fast-math versions map to the precise functions ---------------------------

// Inlined always, so that the recorder attributes the load to the kernel's line (symbols.cpp).
template <typename T>
[[gnu::always_inline]] inline T __ldg(const T* address) {
    return *address;
}
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __clz(int x) { return x == 0 ? 32 : std::countl_zero(unsigned(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(unsigned(x)) + 1; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
