// The registry maps names to backends: `triptych::backend("gpu_tiled")`.
//
// Each variant registers itself (see cpu/naive/backend.cpp); tests, benchmarks, lessons and the
// CLI iterate over `backend_names()`, so a new variant appears everywhere at once. A backend that
// cannot run on this machine (a cuda build without a visible GPU) is registered but not available.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/backend.hpp"

namespace triptych {

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

// Adds a backend. `rank` orders the list (cpu_naive first); `available` says whether it can run
// here. Returns true so it can initialise a namespace-scope constant.
bool register_backend(
    const std::string& name, int rank, BackendFactory factory,
    std::function<bool()> available = [] { return true; });

// The named backend, created on first use. "<variant>@<N>" (e.g. "gpu_tiled@5") is the variant
// running version N of each op that has one (common/kernels.hpp) and the default version of the
// others, so that a version can run whole layers (a dense layer's GEMM at version 5, its bias
// and activation as usual). Throws InvalidArgument for an unknown name or a version no op of the
// variant has, and Unsupported for a variant this machine cannot run; the messages list the
// available names.
Backend& backend(const std::string& name);

// The names of the backends that can run here, in rank order.
std::vector<std::string> backend_names();
// Every backend of this build, in rank order, with those that cannot run here (gpu_vendor in a
// cuda build on a machine without a GPU).
std::vector<std::string> built_backend_names();

}  // namespace triptych
