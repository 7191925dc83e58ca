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
bool register_backend(const std::string& name, int rank, BackendFactory factory,
                      std::function<bool()> available = [] { return true; });

// The named backend, created on first use. Throws InvalidArgument for an unknown name and
// Unsupported for one this machine cannot run; both messages list the available names.
Backend& backend(const std::string& name);

// The names of the backends that can run here, in rank order.
std::vector<std::string> backend_names();

}  // namespace triptych
