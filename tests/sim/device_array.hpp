// DeviceArray<T>: a typed device array for the simulator's test kernels. device_allocate hands out
// floats; these tests also need int, double and record arrays, so this rounds nothing: T must be
// a whole number of floats (int, unsigned, float, double, the records of kernels.hpp).
// Host code only; included by the tests' .cu files.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/runtime/device.hpp"

namespace triptych::sim_tests {

template <typename T>
class DeviceArray {
    static_assert(sizeof(T) % sizeof(float) == 0, "DeviceArray<T> needs a whole number of floats");

public:
    // `count` elements, every byte 0xFF until written (as device_allocate leaves them).
    explicit DeviceArray(std::int64_t count)
        : count_(count), storage_(gpu::device_allocate(floats(count))) {}
    // A copy of `host` on the device.
    explicit DeviceArray(const std::vector<T>& host) : DeviceArray(std::int64_t(host.size())) {
        gpu::copy_to_device(storage_.get(), reinterpret_cast<const float*>(host.data()),
                            floats(count_));
    }

    T* get() const { return reinterpret_cast<T*>(storage_.get()); }

    std::vector<T> to_host() const {
        std::vector<T> host(count_);
        gpu::copy_to_host(reinterpret_cast<float*>(host.data()), storage_.get(), floats(count_));
        return host;
    }

private:
    static std::int64_t floats(std::int64_t count) {
        return count * std::int64_t(sizeof(T) / sizeof(float));
    }

    std::int64_t count_;
    std::shared_ptr<float> storage_;
};

}  // namespace triptych::sim_tests
