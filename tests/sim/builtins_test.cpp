// The built-in index variables: threadIdx, blockIdx, blockDim and gridDim in 1D, 2D and 3D
// launches.
#include <catch2/catch.hpp>
#include <string>

#include "tests/sim/kernels.hpp"

namespace triptych::sim_tests {
namespace {

std::string shape(Extent e) {
    return std::to_string(e.x) + "x" + std::to_string(e.y) + "x" + std::to_string(e.z);
}

// Every thread of `grid` x `block` wrote exactly one record, at its own global linear id, and saw
// the threadIdx/blockIdx that id stands for and the launch's blockDim/gridDim.
void check_every_thread_once(Extent grid, Extent block) {
    INFO("grid " << shape(grid) << ", block " << shape(block));
    const std::vector<ThreadRecord> records = record_thread_indices(grid, block);
    const long long per_block = block.x * block.y * block.z;
    REQUIRE(records.size() == std::size_t(per_block * grid.x * grid.y * grid.z));
    long long wrong = 0;
    for (std::size_t id = 0; id < records.size(); ++id) {
        const long long t = id % per_block, b = id / per_block;
        const ThreadRecord& r = records[id];
        const bool right = r.writes == 1 && r.dims_match == 1 && r.thread[0] == t % block.x &&
                           r.thread[1] == (t / block.x) % block.y &&
                           r.thread[2] == t / (block.x * block.y) && r.block[0] == b % grid.x &&
                           r.block[1] == (b / grid.x) % grid.y &&
                           r.block[2] == b / (grid.x * grid.y);
        if (!right && wrong++ == 0)
            UNSCOPED_INFO("first wrong record at id "
                          << id << ": threadIdx " << r.thread[0] << "," << r.thread[1] << ","
                          << r.thread[2] << " blockIdx " << r.block[0] << "," << r.block[1] << ","
                          << r.block[2] << " writes " << r.writes);
    }
    CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("every thread of a 1D launch sees its own threadIdx.x and blockIdx.x, exactly once",
          "[sim][builtins]") {
    check_every_thread_once({7}, {33});
    check_every_thread_once({3}, {1024});
    check_every_thread_once({1}, {1});
}

TEST_CASE("every thread of a 2D launch sees its own x and y indices, exactly once",
          "[sim][builtins]") {
    check_every_thread_once({3, 5}, {16, 8});
    check_every_thread_once({1, 4}, {5, 7});
}

TEST_CASE("every thread of a 3D launch sees its own x, y and z indices, exactly once",
          "[sim][builtins]") {
    check_every_thread_once({2, 3, 4}, {4, 2, 3});
    check_every_thread_once({3, 1, 2}, {1, 1, 64});
}

}  // namespace triptych::sim_tests
