#include "common/host_backend.hpp"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

namespace triptych {

namespace {

constexpr std::align_val_t alignment{64};

// The guards before and after each buffer: 64 floats each (four AVX-512 vectors; 256 bytes, so
// that the buffer stays on a 64-byte boundary), each float a quiet NaN with a payload that no op
// makes (NaN inputs are the plain quiet NaN, whose payload is 0, and arithmetic keeps an input
// NaN's payload).
constexpr std::int64_t guard_floats = 64;
constexpr std::uint32_t guard_bits = 0x7fc0bad0;

// The first float of the guard at `guard` that no longer holds guard_bits, or -1.
std::int64_t first_overwritten(const float* guard) {
    for (std::int64_t i = 0; i < guard_floats; ++i) {
        std::uint32_t bits;
        std::memcpy(&bits, guard + i, sizeof bits);
        if (bits != guard_bits) return i;
    }
    return -1;
}

// Stops the program, naming the variant and the buffer, if anything wrote into the guards around
// the `count` floats at `data`. A deleter cannot throw, and what wrote there is long gone by now,
// so the message says where to look.
void check_guards(const std::string& variant, const float* data, std::int64_t count) {
    const auto stop = [&](const char* where, std::int64_t index) {
        std::fprintf(stderr,
                     "triptych: a kernel of %s wrote %s of a buffer of %lld floats (its float "
                     "[%lld] holds %g), found as the buffer was freed; `triptych check --backend "
                     "%s --op NAME`, op by op, stops at the first case that does this\n",
                     variant.c_str(), where, static_cast<long long>(count),
                     static_cast<long long>(index), double(data[index]), variant.c_str());
        std::abort();
    };
    if (const std::int64_t i = first_overwritten(data + count); i >= 0)
        stop("past the end", count + i);
    if (const std::int64_t i = first_overwritten(data - guard_floats); i >= 0)
        stop("before the start", i - guard_floats);
}

}  // namespace

std::shared_ptr<float> HostBackend::allocate_buffer(std::int64_t count) const {
    const auto floats = static_cast<std::size_t>(count + 2 * guard_floats);
    auto* memory = static_cast<float*>(::operator new(sizeof(float) * floats, alignment));
    float* data = memory + guard_floats;
    const float guard = std::bit_cast<float>(guard_bits);
    std::fill(memory, data, guard);
    std::fill(data, data + count, std::numeric_limits<float>::quiet_NaN());
    std::fill(data + count, data + count + guard_floats, guard);
    return std::shared_ptr<float>(data, [variant = variant(), count](float* p) {
        check_guards(variant, p, count);
        ::operator delete(p - guard_floats, alignment);
    });
}

void HostBackend::copy_to_backend(float* dst, const float* src, std::int64_t count) const {
    std::memcpy(dst, src, sizeof(float) * count);
}

void HostBackend::copy_to_host(float* dst, const float* src, std::int64_t count) const {
    std::memcpy(dst, src, sizeof(float) * count);
}

}  // namespace triptych
