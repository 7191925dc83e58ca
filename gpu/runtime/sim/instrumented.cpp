// Linked only into the instrumented copy of a program (cmake/gpu.cmake): the functions its
// instrumented kernels call.
//
// GCC's ThreadSanitizer instrumentation (-fsanitize=thread, without ThreadSanitizer's run-time)
// calls __tsan_readN(address) before every N-byte load and __tsan_writeN(address) before every
// store, and replaces each atomic operation by a call such as __tsan_atomic32_fetch_add. The first
// two go to the recorder, which keeps only the accesses to device and shared memory of a running
// kernel; the atomics are carried out here, as real atomics (the atomics of sim.hpp tell the
// recorder about themselves, once per call).
#include <cstddef>
#include <cstdint>

#include "gpu/runtime/sim/recorder.hpp"

// recorder_available() looks for this symbol.
extern "C" const char triptych_sim_instrumented_kernels = 1;

namespace {

// The instruction that called the hook is the access itself: its address, for addr2line, is the
// byte before the return address.
#define TRIPTYCH_SITE (std::uintptr_t(__builtin_return_address(0)) - 1)

inline void record(const void* address, std::size_t size, bool is_store, std::uintptr_t site) {
    if (triptych::sim::recorder::recording)
        triptych::sim::recorder::record(std::uintptr_t(address), unsigned(size), is_store, site);
}

}  // namespace

#define TRIPTYCH_ACCESS_HOOKS(bytes)                               \
    extern "C" void __tsan_read##bytes(void* address) {            \
        record(address, bytes, false, TRIPTYCH_SITE);              \
    }                                                              \
    extern "C" void __tsan_write##bytes(void* address) {           \
        record(address, bytes, true, TRIPTYCH_SITE);               \
    }                                                              \
    extern "C" void __tsan_unaligned_read##bytes(void* address) {  \
        record(address, bytes, false, TRIPTYCH_SITE);              \
    }                                                              \
    extern "C" void __tsan_unaligned_write##bytes(void* address) { \
        record(address, bytes, true, TRIPTYCH_SITE);               \
    }
TRIPTYCH_ACCESS_HOOKS(1)
TRIPTYCH_ACCESS_HOOKS(2)
TRIPTYCH_ACCESS_HOOKS(4)
TRIPTYCH_ACCESS_HOOKS(8)
TRIPTYCH_ACCESS_HOOKS(16)
#undef TRIPTYCH_ACCESS_HOOKS

extern "C" void __tsan_read_range(void* address, std::size_t size) {
    record(address, size, false, TRIPTYCH_SITE);
}
extern "C" void __tsan_write_range(void* address, std::size_t size) {
    record(address, size, true, TRIPTYCH_SITE);
}
// Called by each instrumented file's constructor, and when an object's virtual table pointer is
// set (ThreadSanitizer checks races on those); nothing to do for either.
extern "C" void __tsan_init() {}
extern "C" void __tsan_vptr_update(void**, void*) {}

// The atomics, for each width the compiler may ask for. `order` is the C++ memory order; every
// operation here is sequentially consistent, which is at least as strong.
#define TRIPTYCH_ATOMIC_HOOKS(bits, T)                                                            \
    extern "C" T __tsan_atomic##bits##_load(const volatile T* a, int) {                           \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                              \
    }                                                                                             \
    extern "C" void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                        \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                 \
    }                                                                                             \
    extern "C" T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                        \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                       \
    }                                                                                             \
    extern "C" T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) {                       \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                             \
    extern "C" T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) {                       \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                             \
    extern "C" T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) {                       \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                             \
    extern "C" T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) {                        \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                             \
    extern "C" T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) {                       \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                             \
    extern "C" int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* expected,      \
                                                                 T desired, int, int) {           \
        return __atomic_compare_exchange_n(a, expected, desired, false, __ATOMIC_SEQ_CST,         \
                                           __ATOMIC_SEQ_CST);                                     \
    }                                                                                             \
    extern "C" int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* expected,        \
                                                               T desired, int, int) {             \
        return __atomic_compare_exchange_n(a, expected, desired, true, __ATOMIC_SEQ_CST,          \
                                           __ATOMIC_SEQ_CST);                                     \
    }                                                                                             \
    extern "C" T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T expected, T desired, \
                                                            int, int) {                           \
        __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_SEQ_CST,               \
                                    __ATOMIC_SEQ_CST);                                            \
        return expected;                                                                          \
    }
TRIPTYCH_ATOMIC_HOOKS(8, std::uint8_t)
TRIPTYCH_ATOMIC_HOOKS(16, std::uint16_t)
TRIPTYCH_ATOMIC_HOOKS(32, std::uint32_t)
TRIPTYCH_ATOMIC_HOOKS(64, std::uint64_t)
#undef TRIPTYCH_ATOMIC_HOOKS

extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
