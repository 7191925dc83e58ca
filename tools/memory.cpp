// The memory cap; see memory.hpp.
#include "tools/memory.hpp"

#include <sys/resource.h>

#include <cstdint>

#include "common/machine.hpp"
#include "triptych_config.hpp"

// Not in a sanitizer build nor a CUDA build (memory.hpp says why).
#if defined(__SANITIZE_ADDRESS__) || TRIPTYCH_GPU_CUDA
#define TRIPTYCH_CAP_MEMORY 0
#else
#define TRIPTYCH_CAP_MEMORY 1
#endif

namespace triptych::tools {

void cap_memory_at_available() {
#if TRIPTYCH_CAP_MEMORY
    const std::int64_t available = available_memory();                        // bytes
    const std::int64_t held = proc_kilobytes("/proc/self/status", "VmData");  // kB
    if (available < 0 || held < 0) return;
    rlimit limit{};
    if (getrlimit(RLIMIT_DATA, &limit) != 0) return;
    const rlim_t cap = rlim_t(available) + rlim_t(held) * 1024;
    if (limit.rlim_max != RLIM_INFINITY && cap > limit.rlim_max) return;
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < cap) return;  // a tighter cap stands
    limit.rlim_cur = cap;
    setrlimit(RLIMIT_DATA, &limit);
#endif
}

unsigned long long memory_cap() {
    rlimit limit{};
    if (getrlimit(RLIMIT_DATA, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
    return limit.rlim_cur;
}

}  // namespace triptych::tools
