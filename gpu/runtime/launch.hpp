// launch(kernel, grid, block, shared_bytes, args...): the one way kernels are started.
//
// On a GPU it is `kernel<<<grid, block, shared_bytes, stream>>>(args...)` on the calling host
// thread's current stream (stream.hpp), followed by a check of the launch; in the simulator it
// runs the grid on the CPU (or records it, while the stream is captured into a graph). Either way
// a rejected launch throws CudaError with the file:line of the call.
//
// `launch` is a class template, not a function, only so that the call site can be captured:
// a defaulted std::source_location parameter must come after the argument pack, and a deduction
// guide is the standard way to make that work. Use it like a function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <source_location>

#include "common/errors.hpp"
#include "gpu/runtime/launch_log.hpp"
#include "gpu/runtime/stream.hpp"

namespace triptych::gpu {

// The hardware limit on gridDim.y (and z). A kernel whose rows would need more blocks than this
// covers the rest by looping over rows with a stride of gridDim.y blocks.
constexpr std::int64_t max_grid_rows = 65535;

// How many blocks a launch puts along a dimension whose kernel loops over the rest (y for most;
// x for a few, which cap it by choice) for `wanted` of them: all, up to max_grid_rows. In the
// simulator TRIPTYCH_SIM_GRID_ROWS=N lowers the cap to N (sim::grid_rows_limit, sim.hpp), so
// that those loops run on the checks' small inputs too (no check needs 65535 blocks, which would
// leave them untested).
inline unsigned grid_rows(std::int64_t wanted) {
#if defined(__CUDACC__)
    const std::int64_t limit = max_grid_rows;
#else
    const std::int64_t limit = ::triptych::sim::grid_rows_limit();
#endif
    return unsigned(wanted < limit ? wanted : limit);
}

#if defined(__CUDACC__)
// Throws CudaError("<what> at file:line: <CUDA's message>") unless `status` is cudaSuccess.
inline void check_cuda(cudaError_t status, const char* what, std::source_location where) {
    if (status == cudaSuccess) return;
    throw CudaError(std::string(what) + " at " + where.file_name() + ":" +
                    std::to_string(where.line()) + ": " + cudaGetErrorString(status));
}
#endif

template <typename Kernel, typename... Args>
struct launch {
    launch(Kernel kernel, dim3 grid, dim3 block, std::size_t shared_bytes, const Args&... args,
           std::source_location where = std::source_location::current()) {
#if defined(__CUDACC__)
        kernel<<<grid, block, shared_bytes, static_cast<cudaStream_t>(current_stream().handle())>>>(
            args...);
        check_cuda(cudaGetLastError(), "kernel launch", where);
        if (launch_log_on()) {
            const unsigned grid_dims[3] = {grid.x, grid.y, grid.z};
            const unsigned block_dims[3] = {block.x, block.y, block.z};
            log_launch(reinterpret_cast<const void*>(kernel), grid_dims, block_dims, shared_bytes,
                       where);
        }
#else
        ::triptych::sim::launch(kernel, grid, block, shared_bytes, where, args...);
#endif
    }
};

template <typename Kernel, typename... Args>
launch(Kernel, dim3, dim3, std::size_t, const Args&...) -> launch<Kernel, Args...>;

}  // namespace triptych::gpu
