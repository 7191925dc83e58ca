#include "common/host_backend.hpp"

#include <cstring>
#include <limits>
#include <new>

namespace triptych {

std::shared_ptr<float> HostBackend::allocate_buffer(std::int64_t count) const {
    constexpr std::align_val_t alignment{64};
    auto* data = static_cast<float*>(::operator new(sizeof(float) * count, alignment));
    std::fill(data, data + count, std::numeric_limits<float>::quiet_NaN());
    return std::shared_ptr<float>(data, [](float* p) { ::operator delete(p, alignment); });
}

void HostBackend::copy_to_backend(float* dst, const float* src, std::int64_t count) const {
    std::memcpy(dst, src, sizeof(float) * count);
}

void HostBackend::copy_to_host(float* dst, const float* src, std::int64_t count) const {
    std::memcpy(dst, src, sizeof(float) * count);
}

}  // namespace triptych
