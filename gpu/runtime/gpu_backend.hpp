// GpuBackend: the memory half of every GPU variant (gpu_naive, gpu_tiled, gpu_vendor): tensors in
// device memory, explicit copies across. Device facts come from gpu/runtime/device.hpp.
#pragma once

#include "common/backend.hpp"
#include "gpu/runtime/device.hpp"

namespace triptych::gpu {

// The AsyncDevice of every GPU backend: gpu/runtime/stream.hpp behind common's interface.
const AsyncDevice& gpu_async_device();

class GpuBackend : public Backend {
public:
    DeviceKind device_kind() const override {
        return info().simulated ? DeviceKind::Simulator : DeviceKind::Gpu;
    }
    std::string device() const override { return info().name; }
    void synchronize() const override { gpu::synchronize(); }
    const AsyncDevice* async() const override { return &gpu_async_device(); }

protected:
    explicit GpuBackend(std::string variant) : Backend(std::move(variant)) {}

    std::shared_ptr<float> allocate_buffer(std::int64_t count) const override {
        return device_allocate(count);
    }
    void copy_to_backend(float* dst, const float* src, std::int64_t count) const override {
        copy_to_device(dst, src, count);
    }
    void copy_to_host(float* dst, const float* src, std::int64_t count) const override {
        gpu::copy_to_host(dst, src, count);
    }
};

}  // namespace triptych::gpu
