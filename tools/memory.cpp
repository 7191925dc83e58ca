// The memory cap; see memory.hpp.
#include "tools/memory.hpp"

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "triptych_config.hpp"

// Not in a sanitizer build nor a CUDA build (memory.hpp says why).
#if defined(__SANITIZE_ADDRESS__) || TRIPTYCH_GPU_CUDA
#define TRIPTYCH_CAP_MEMORY 0
#else
#define TRIPTYCH_CAP_MEMORY 1
#endif

namespace triptych::tools {
#if TRIPTYCH_CAP_MEMORY
namespace {

// The value in kB of the line "<key>:   <value> kB" of a /proc file, or -1.
std::int64_t proc_kilobytes(const char* file, const std::string& key) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ":", 0) == 0) {
            std::istringstream fields(line.substr(key.size() + 1));
            std::int64_t value = -1;
            std::string unit;
            return fields >> value >> unit && unit == "kB" ? value : -1;
        }
    return -1;
}

}  // namespace
#endif

void cap_memory_at_available() {
#if TRIPTYCH_CAP_MEMORY
    const std::int64_t available = proc_kilobytes("/proc/meminfo", "MemAvailable");
    const std::int64_t held = proc_kilobytes("/proc/self/status", "VmData");
    if (available < 0 || held < 0) return;
    rlimit limit{};
    if (getrlimit(RLIMIT_DATA, &limit) != 0) return;
    const rlim_t cap = rlim_t(available + held) * 1024;
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
