// The sizes the benchmarks share; see description.hpp.
#include "check/description.hpp"

#include <algorithm>

#include "common/random.hpp"

namespace triptych::check {

std::vector<std::int64_t> powers_of_two(std::int64_t low, std::int64_t high) {
    std::vector<std::int64_t> sizes;
    for (std::int64_t n = 1; n <= high; n *= 2)
        if (n >= low) sizes.push_back(n);
    return sizes;
}

// 2^16 floats (256 KiB) fit in L2, 2^20 (4 MiB) in L3, 2^24 (64 MiB) only in DRAM; a GPU adds
// 2^26 (256 MiB), where launch overhead is negligible against the transfer. The simulator runs
// one fiber per CUDA thread, so it gets one small size.
std::vector<std::int64_t> stream_sizes(DeviceKind kind, bool quick) {
    switch (kind) {
        case DeviceKind::Gpu:
            if (quick) return {1 << 16, 1 << 20};
            return {1 << 16, 1 << 20, 1 << 24, 1 << 26};
        case DeviceKind::Simulator:
            return {1 << 12};
        case DeviceKind::Cpu:
            break;
    }
    if (quick) return {1 << 16, 1 << 18};
    return {1 << 16, 1 << 20, 1 << 24};
}

// 4096x1000: a classifier's batch over 1000 classes; 64x100000: long rows, where one thread per row
// (gpu_naive) leaves most of a GPU idle; 65536x10: MNIST-sized rows, where per-row overhead counts.
// A GPU adds each with 8 times the rows, so that launch overhead no longer hides the bandwidth.
std::vector<RowsCols> row_shapes(DeviceKind kind, bool quick) {
    if (kind == DeviceKind::Simulator) return {{16, 256}};
    if (quick) return {{256, 1000}, {4, 100000}, {16384, 10}};
    std::vector<RowsCols> shapes{{4096, 1000}, {64, 100000}, {65536, 10}};
    if (kind == DeviceKind::Gpu)
        shapes.insert(shapes.end(), {{32768, 1000}, {512, 100000}, {524288, 10}});
    return shapes;
}

std::vector<std::int64_t> copy_sizes(DeviceKind kind, bool quick) {
    std::vector<std::int64_t> sizes = stream_sizes(kind, quick);
    for (const RowsCols& shape : row_shapes(kind, quick)) sizes.push_back(shape.rows * shape.cols);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

std::vector<float> bench_values(std::int64_t count) {
    std::vector<float> values(static_cast<std::size_t>(count));
    Rng(20240601).uniform(values);
    return values;
}

}  // namespace triptych::check
