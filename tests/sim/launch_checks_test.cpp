// What launch() refuses before running anything, as a GPU would (shapes beyond the hardware's
// limits, too much dynamic shared memory, host pointers), and what device memory is: host memory
// the simulator knows as device memory, NaN until written.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/errors.hpp"
#include "gpu/runtime/device.hpp"
#include "tests/sim/kernels.hpp"
#include "tests/sim/test_support.hpp"

namespace triptych::sim_tests {
namespace {

using Catch::Matchers::Contains;

constexpr std::size_t KiB = 1024;

// A rejected launch names its call site, in launch_checks.cu.
void check_rejected(Extent grid, Extent block, std::size_t dynamic_shared_bytes = 0) {
    const std::string message =
        message_of<CudaError>([&] { count_threads(grid, block, dynamic_shared_bytes); });
    INFO(message);
    CHECK_THAT(message, Contains("launch_checks.cu:"));
}

// Restores the default dynamic shared memory limit at the end of a test.
struct DefaultSharedLimit {
    ~DefaultSharedLimit() { sim::set_max_dynamic_shared_bytes(48 * KiB); }
};

}  // namespace

TEST_CASE("launches at the hardware's limits run every thread", "[sim][launch]") {
    CHECK(count_threads({1}, {1024}) == 1024);
    CHECK(count_threads({1}, {32, 32}) == 1024);
    CHECK(count_threads({1}, {1, 16, 64}) == 1024);
    CHECK(count_threads({1, 65535}, {1}) == 65535);
    CHECK(count_threads({1, 1, 65535}, {1}) == 65535);
}

TEST_CASE("launches a GPU would reject are rejected with CudaError", "[sim][launch]") {
    struct Rejected {
        const char* what;
        Extent grid, block;
    };
    const Rejected rejected_launches[] = {
        {"1025 threads per block", {1}, {1025}},
        {"1025 threads in a 2D block", {1}, {41, 25}},
        {"blockDim.y = 1025", {1}, {1, 1025}},
        {"blockDim.z = 65", {1}, {1, 1, 65}},
        {"gridDim.x = 2^31", {2147483648u}, {1}},
        {"gridDim.y = 65536", {1, 65536}, {1}},
        {"gridDim.z = 65536", {1, 1, 65536}, {1}},
        {"an empty grid", {0}, {32}},
        {"an empty block", {4}, {0}},
        {"an empty grid in y", {4, 0}, {32}},
        {"an empty block in z", {4}, {32, 1, 0}},
    };
    for (const Rejected& rejected : rejected_launches) {
        INFO(rejected.what);
        check_rejected(rejected.grid, rejected.block);
    }
}

TEST_CASE("dynamic shared memory above 48 KiB is rejected until the limit is raised",
          "[sim][launch][shared]") {
    DefaultSharedLimit restore;
    CHECK(fill_dynamic_shared(48 * KiB));
    check_rejected({1}, {32}, 48 * KiB + 4);
    check_rejected({1}, {32}, 64 * KiB);

    sim::set_max_dynamic_shared_bytes(100 * KiB);
    CHECK(fill_dynamic_shared(64 * KiB));  // every byte of it is there
    CHECK(fill_dynamic_shared(100 * KiB));
    check_rejected({1}, {32}, 100 * KiB + 4);

    sim::set_max_dynamic_shared_bytes(227 * KiB);  // an H100/H200's limit
    CHECK(fill_dynamic_shared(227 * KiB));
    check_rejected({1}, {32}, 227 * KiB + 4);
}

TEST_CASE("the dynamic shared memory limit cannot be raised past the device's 227 KiB",
          "[sim][launch][shared]") {
    DefaultSharedLimit restore;
    CHECK_THROWS(sim::set_max_dynamic_shared_bytes(227 * KiB + 1));
}

TEST_CASE("a launch with a host pointer argument is refused with CudaError", "[sim][launch]") {
    const std::string message = message_of<CudaError>([] { launch_with_host_pointer(); });
    INFO(message);
    CHECK_THAT(message, Contains("host pointer", Catch::CaseSensitive::No));
    CHECK_THAT(message, Contains("launch_checks.cu:"));
}

TEST_CASE("a null pointer argument is allowed", "[sim][launch]") {
    const std::vector<float> with_null = copy_or_default(true);
    const std::vector<float> with_array = copy_or_default(false);
    for (int i = 0; i < 64; ++i) {
        INFO("thread " << i);
        CHECK(with_null[i] == -1.0f);
        CHECK(with_array[i] == float(i));
    }
}

TEST_CASE("fresh device memory is NaN, so a kernel that reads unwritten memory outputs NaN",
          "[sim][memory]") {
    const std::int64_t n = 1000;
    const std::shared_ptr<float> fresh = gpu::device_allocate(n);
    std::vector<float> host(n, 0.0f);
    gpu::copy_to_host(host.data(), fresh.get(), n);
    int not_nan = 0;
    for (float v : host) {
        std::uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        not_nan += bits != 0xFFFFFFFFu;
    }
    CHECK(not_nan == 0);

    not_nan = 0;
    for (float v : compute_on_unwritten_memory(64)) not_nan += !std::isnan(v);
    CHECK(not_nan == 0);
}

TEST_CASE("is_device_pointer knows every byte of a device allocation and nothing else",
          "[sim][memory]") {
    const std::int64_t n = 100;
    const std::shared_ptr<float> device = gpu::device_allocate(n);
    const float* begin = device.get();
    CHECK(sim::is_device_pointer(begin));
    CHECK(sim::is_device_pointer(begin + 1));
    CHECK(sim::is_device_pointer(begin + n - 1));
    CHECK(sim::is_device_pointer(reinterpret_cast<const char*>(begin + n) - 1));  // last byte
    CHECK_FALSE(sim::is_device_pointer(begin + n));  // one past the end
    CHECK_FALSE(sim::is_device_pointer(nullptr));

    std::vector<float> host(n);
    CHECK_FALSE(sim::is_device_pointer(host.data()));
    const std::shared_ptr<float> pinned = gpu::pinned_allocate(n);
    CHECK_FALSE(sim::is_device_pointer(pinned.get()));

    const std::shared_ptr<float> other = gpu::device_allocate(1);
    CHECK(sim::is_device_pointer(other.get()));
}

TEST_CASE("copies refuse a host pointer where device memory belongs", "[sim][memory]") {
    std::vector<float> a(8, 1.0f), b(8, 2.0f);
    CHECK_THROWS_AS(gpu::copy_to_device(a.data(), b.data(), 8), CudaError);
    CHECK_THROWS_AS(gpu::copy_to_host(a.data(), b.data(), 8), CudaError);
}

}  // namespace triptych::sim_tests
