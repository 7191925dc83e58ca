// The base of the stand-in variants that tests build to plant a mistake: a test derives from it,
// gives one op a wrong kernel with use_kernel, and asserts that the cross-check fails it. The
// stand-ins run on the host and call themselves a CPU variant on device "test".
#pragma once

#include <string>
#include <utility>

#include "common/host_backend.hpp"

namespace triptych::testing {

class TestBackend : public HostBackend {
public:
    DeviceKind device_kind() const override { return DeviceKind::Cpu; }
    std::string device() const override { return "test"; }

protected:
    explicit TestBackend(std::string name) : HostBackend(std::move(name)) {}
};

}  // namespace triptych::testing
