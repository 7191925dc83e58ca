// Owned<Handle, destroy>: a std::unique_ptr for the handles of NVIDIA's C libraries. A
// cublasHandle_t or cudnnTensorDescriptor_t is a pointer to an opaque struct, created by one
// function and released by another (cublasDestroy, cudnnDestroyTensorDescriptor); Owned calls the
// release when it goes out of scope, so a handle is freed even when an exception passes through.
#pragma once

#include <memory>
#include <type_traits>

namespace triptych::gpu_vendor {

template <auto destroy>
struct Destroy {
    template <typename Handle>
    void operator()(Handle handle) const {
        destroy(handle);
    }
};

template <typename Handle, auto destroy>
using Owned = std::unique_ptr<std::remove_pointer_t<Handle>, Destroy<destroy>>;

}  // namespace triptych::gpu_vendor
