// HostBackend: the memory half of a Backend whose tensors live in ordinary host memory (the CPU
// variants). Buffers are 64-byte aligned (a cache line, and enough for any SIMD load) and filled
// with NaN, so an output an op forgets to write is caught by the comparison. Each lies between two
// guards of a known pattern, checked when the buffer is freed: a kernel that stores past the end
// of a buffer (a whole SIMD vector where a row ends short of one, say), or before its start,
// stops the program there, with a message, in every build. The AddressSanitizer build does not
// make this redundant: on a machine with AVX-512 it compiles for AVX2 (tools/test.sh), whose
// vectors are half as long, so an overrun of the AVX-512 kernels never runs under it.
#pragma once

#include "common/backend.hpp"

namespace triptych {

class HostBackend : public Backend {
protected:
    explicit HostBackend(std::string variant) : Backend(std::move(variant)) {}
    std::shared_ptr<float> allocate_buffer(std::int64_t count) const override;
    void copy_to_backend(float* dst, const float* src, std::int64_t count) const override;
    void copy_to_host(float* dst, const float* src, std::int64_t count) const override;
};

}  // namespace triptych
