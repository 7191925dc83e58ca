// Copy benchmarks: how fast memory can be moved, the ceiling of every memory-bound op and the
// price of crossing between host and device.
//
// Rows (counter `bytes`: bytes moved per second):
//   copy/host/<n>             n floats memcpy'd on the host, one slice per OpenMP thread as in
//                             cpu_eigen_omp's ReLU; counts read + write (8n), like relu_forward.
//                             Measured at every float count a memory-bound row uses
//                             (copy_sizes), so each has the ceiling of its own size
//   copy/device/<n>           cudaMemcpy device to device, read + write (8n)      } real GPU only
//   copy/h2d_pageable/<n>     host to device from ordinary (pageable) memory (4n)  }
//   copy/h2d_pinned/<n>       host to device from page-locked memory (4n)          }
//   copy/d2h_pageable/<n>, copy/d2h_pinned/<n>   device to host, the same two ways }
// Pageable copies are staged by the driver through a pinned bounce buffer, so they are slower;
// the report's transfer table shows by how much.
// Run: triptych_bench --benchmark_filter='copy/'
#include <omp.h>

#include <cstring>

#include "bench/suites.hpp"
#include "triptych_config.hpp"

#if TRIPTYCH_GPU_CUDA
#include <cuda_runtime.h>

#include "common/errors.hpp"
#include "gpu/runtime/device.hpp"
#endif

namespace triptych::bench {
namespace {

void copy_host(benchmark::State& state, std::int64_t n) {
    const std::vector<float> src = check::bench_values(n);
    std::vector<float> dst(src.size());
    for (auto _ : state) {
#pragma omp parallel
        {
            const std::int64_t threads = omp_get_num_threads();
            const std::int64_t t = omp_get_thread_num();
            const std::int64_t begin = n * t / threads, end = n * (t + 1) / threads;
            std::memcpy(dst.data() + begin, src.data() + begin, sizeof(float) * (end - begin));
        }
        benchmark::ClobberMemory();
    }
    state.SetLabel("CPU, " + std::to_string(omp_get_max_threads()) + " threads");
    count_per_second(state, "bytes", 2.0 * sizeof(float) * double(n));
}

#if TRIPTYCH_GPU_CUDA

// 1 MiB, 16 MiB and 256 MiB transfers: per-copy latency dominates the first, bandwidth the last.
const std::vector<std::int64_t> transfer_sizes{1 << 18, 1 << 22, 1 << 26};
const std::vector<std::int64_t> quick_transfer_sizes{1 << 18, 1 << 20};

// Throws CudaError if the copy fails (add() turns it into a failed row).
void device_to_device(float* dst, const float* src, std::size_t bytes) {
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
        throw CudaError("cudaMemcpy device to device failed");
}

void copy_device(benchmark::State& state, std::int64_t n) {
    const std::shared_ptr<float> src = gpu::device_allocate(n), dst = gpu::device_allocate(n);
    const std::size_t bytes = sizeof(float) * n;
    device_to_device(dst.get(), src.get(), bytes);  // warm-up
    for (auto _ : state) device_to_device(dst.get(), src.get(), bytes);
    state.SetLabel(gpu::info().name);
    count_per_second(state, "bytes", 2.0 * double(bytes));
}

// Host memory of either kind; `pinned` comes from cudaMallocHost.
std::shared_ptr<float> host_buffer(std::int64_t n, bool pinned) {
    if (pinned) return gpu::pinned_allocate(n);
    return std::shared_ptr<float>(new float[n](), std::default_delete<float[]>());
}

// One cudaMemcpy (synchronous) per iteration, host to device or back.
void copy_across(benchmark::State& state, std::int64_t n, bool to_device, bool pinned) {
    const std::shared_ptr<float> host = host_buffer(n, pinned);
    const std::shared_ptr<float> device = gpu::device_allocate(n);
    auto copy = [&] {
        if (to_device)
            gpu::copy_to_device(device.get(), host.get(), n);
        else
            gpu::copy_to_host(host.get(), device.get(), n);
    };
    copy();  // warm-up: the driver sets up its staging buffers on the first copy
    for (auto _ : state) copy();
    state.SetLabel(pinned ? "pinned host memory" : "pageable host memory");
    count_per_second(state, "bytes", sizeof(float) * double(n));
}

// Registered only when a real GPU runs here; simulator copies are plain memcpy.
void register_device_copies(const Options& options) {
    if (!gpu::available() || gpu::info().simulated) return;
    for (std::int64_t n : check::copy_sizes(DeviceKind::Gpu, options.quick))
        add("copy/device/" + std::to_string(n), [n](benchmark::State& s) { copy_device(s, n); });
    for (const bool to_device : {true, false})
        for (const bool pinned : {false, true})
            for (std::int64_t n : options.quick ? quick_transfer_sizes : transfer_sizes) {
                const std::string kind =
                    std::string(to_device ? "h2d" : "d2h") + (pinned ? "_pinned" : "_pageable");
                add("copy/" + kind + "/" + std::to_string(n),
                    [=](benchmark::State& s) { copy_across(s, n, to_device, pinned); });
            }
}

#endif

}  // namespace

void register_copy(const Options& options) {
    describe_rows("copy", "bytes", "8n (host, device), 4n (h2d, d2h)", "copy");
    for (std::int64_t n : check::copy_sizes(DeviceKind::Cpu, options.quick))
        add("copy/host/" + std::to_string(n), [n](benchmark::State& s) { copy_host(s, n); });
#if TRIPTYCH_GPU_CUDA
    register_device_copies(options);
#endif
}

}  // namespace triptych::bench
