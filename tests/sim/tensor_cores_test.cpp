// The simulator's tensor cores (gpu/runtime/sim/wmma.hpp, gpu/runtime/mma_sync.hpp): a warp's TF32
// and BF16 multiply-accumulate against the product computed here, each fragment layout and store
// layout, PTX mma.sync's documented fragment layout, what the tensor core reads of a TF32 input,
// the two roundings, CUDA's rules for a tile's address and stride, and a warp with lanes missing.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/errors.hpp"
#include "tests/sim/kernels.hpp"
#include "tests/sim/test_support.hpp"

namespace triptych::sim_tests {
namespace {

// Small integers: every product and sum is exact in float, and every input exact in TF32 and
// BF16, so the tensor core's result must equal the exact one, whatever order it adds in.
std::vector<float> small_integers(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> value(-8, 8);
    std::vector<float> v(count);
    for (float& x : v) x = float(value(rng));
    return v;
}

}  // namespace

TEST_CASE(
    "one warp's TF32 mma_sync gives A * B + C, with A row-major, B column-major, and D "
    "stored row- and column-major",
    "[tensor_cores]") {
    const std::vector<float> a = small_integers(16 * 8, 1), b = small_integers(8 * 16, 2);
    const std::vector<float> c = small_integers(16 * 16, 3);
    const MmaResult d = tensor_core_tf32(a, b, c);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            float expected = c[i * 16 + j];
            for (int k = 0; k < 8; ++k) expected += a[i * 8 + k] * b[j * 8 + k];  // B(k, j)
            INFO("D(" << i << ", " << j << ")");
            CHECK(d.rows[i * 16 + j] == expected);
            CHECK(d.columns[j * 16 + i] == expected);
        }
}

TEST_CASE("one warp's BF16 mma_sync gives A * B of 16 x 16 x 16", "[tensor_cores]") {
    const std::vector<float> a = small_integers(256, 4), b = small_integers(256, 5);
    const std::vector<float> d = tensor_core_bf16(a, b);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            float expected = 0.0f;
            for (int k = 0; k < 16; ++k) expected += a[i * 16 + k] * b[k * 16 + j];
            INFO("D(" << i << ", " << j << ")");
            CHECK(d[i * 16 + j] == expected);
        }
}

TEST_CASE(
    "one warp's PTX mma.sync (m16n8k8, TF32) gives A * B + C with every lane's fragments where the "
    "PTX ISA puts them",
    "[tensor_cores]") {
    // Distinct small integers everywhere: a lane that held another element than its layout says
    // would add a wrong product to some D(i, j), and an element of D left unwritten stays NaN.
    const std::vector<float> a = small_integers(16 * 8, 6), b = small_integers(8 * 8, 7);
    const std::vector<float> c = small_integers(16 * 8, 8);
    const std::vector<float> d = mma_sync_tf32(a, b, c);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
            float expected = c[i * 8 + j];
            for (int k = 0; k < 8; ++k) expected += a[i * 8 + k] * b[k * 8 + j];
            INFO("D(" << i << ", " << j << ")");
            CHECK(d[i * 8 + j] == expected);
        }
}

TEST_CASE("PTX mma.sync reads one lane's element of A as A(g + 8, t + 4) for its a[3]",
          "[tensor_cores]") {
    // A is zero but for A(9, 6), B the identity: D is zero but for D(9, 6) = A(9, 6). By the
    // layout, lane 6 (g = 1, t = 2) holds A(9, 6) as its a[3], and lane 7 (g = 1, t = 3) gets
    // D(9, 6) as its d[2]; any other spread would move the 5 elsewhere or lose it.
    std::vector<float> a(16 * 8, 0.0f), b(8 * 8, 0.0f), c(16 * 8, 0.0f);
    a[9 * 8 + 6] = 5.0f;
    for (int k = 0; k < 8; ++k) b[k * 8 + k] = 1.0f;
    const std::vector<float> d = mma_sync_tf32(a, b, c);
    for (int i = 0; i < 16 * 8; ++i) {
        INFO("D(" << i / 8 << ", " << i % 8 << ")");
        CHECK(d[i] == (i == 9 * 8 + 6 ? 5.0f : 0.0f));
    }
}

TEST_CASE("the tensor core reads only the top 19 bits of a TF32 fragment's floats",
          "[tensor_cores]") {
    // A(0, 0) = 1 + 2^-12 and 1 + 2^-11 + 2^-12, below TF32's resolution at 1 (2^-10); B = the
    // identity's first 8 rows. D(0, 0) and D(1, 1) see the inputs truncated: 1 and 1 + 2^-11's
    // truncation, 1.
    std::vector<float> a(16 * 8, 0.0f), b(8 * 16, 0.0f), c(256, 0.0f);
    a[0 * 8 + 0] = 1.0f + 0x1p-12f;
    a[1 * 8 + 1] = 1.0f + 0x1p-11f + 0x1p-12f;
    for (int k = 0; k < 8; ++k) b[k * 8 + k] = 1.0f;  // column-major: B(k, k) at k * 8 + k
    const MmaResult d = tensor_core_tf32(a, b, c);
    CHECK(d.rows[0] == 1.0f);
    CHECK(d.rows[1 * 16 + 1] == 1.0f);
}

TEST_CASE(
    "__float_to_tf32 rounds to nearest with ties away from zero; bfloat16 rounds to nearest "
    "even; infinities and NaN pass",
    "[tensor_cores]") {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> in = {1.0f + 0x1p-12f,
                                   1.0f + 0x1p-11f,
                                   -(1.0f + 0x1p-11f),
                                   1.0f + 3 * 0x1p-12f,
                                   1.0f + 0x1p-8f,
                                   1.0f + 3 * 0x1p-8f,
                                   -inf,
                                   inf,
                                   std::nanf("")};
    const auto [tf32, bf16] = tensor_core_roundings(in);
    CHECK(tf32[0] == 1.0f);                // below half a step: down
    CHECK(tf32[1] == 1.0f + 0x1p-10f);     // a tie: away from zero
    CHECK(tf32[2] == -(1.0f + 0x1p-10f));  // a tie, negative: away from zero
    CHECK(tf32[3] == 1.0f + 0x1p-10f);     // above half a step: up
    CHECK(bf16[4] == 1.0f);                // a tie at an even last bit: stays
    CHECK(bf16[5] == 1.0f + 0x1p-6f);      // a tie at an odd last bit: to the even one
    CHECK(tf32[6] == -inf);
    CHECK(bf16[7] == inf);
    CHECK(std::isnan(tf32[8]));
    CHECK(std::isnan(bf16[8]));
}

TEST_CASE(
    "load_matrix_sync and store_matrix_sync refuse a tile that is not 32-byte aligned, or whose "
    "ldm is not a multiple of 16 bytes, naming the call",
    "[tensor_cores]") {
    using Catch::Matchers::Contains;
    // Within the rules: 8 floats (32 bytes) in, strides of 48 and 80 bytes.
    CHECK_NOTHROW(wmma_tile_rules(0, 8, 16));
    CHECK_NOTHROW(wmma_tile_rules(8, 12, 20));
    CHECK_THAT(message_of<CudaError>([] { wmma_tile_rules(4, 8, 16); }),
               Contains("load_matrix_sync at ") && Contains("tensor_cores.cu:") &&
                   Contains("the tile starts 16 bytes past a 32-byte boundary"));
    CHECK_THAT(message_of<CudaError>([] { wmma_tile_rules(0, 6, 16); }),
               Contains("load_matrix_sync at ") &&
                   Contains("ldm 6 (elements of 4 bytes) is 24 bytes, not a multiple of 16"));
    CHECK_THAT(message_of<CudaError>([] { wmma_tile_rules(0, 8, 18); }),
               Contains("store_matrix_sync at ") &&
                   Contains("ldm 18 (elements of 4 bytes) is 72 bytes, not a multiple of 16"));
}

TEST_CASE("mma_sync in a warp with lanes missing fails the launch, saying it needs all 32",
          "[tensor_cores]") {
    const std::vector<float> a(16 * 8, 1.0f), b(8 * 16, 1.0f), c(256, 0.0f);
    const std::string message =
        message_of<CudaError>([&] { tensor_core_tf32(a, b, c, /*threads=*/16); });
    CHECK_THAT(message,
               Catch::Matchers::Contains("mma_sync") && Catch::Matchers::Contains("needs all 32"));
    const std::string ptx = message_of<CudaError>([&] { mma_sync_tf32(a, b, c, /*threads=*/16); });
    CHECK_THAT(ptx, Catch::Matchers::Contains("mma.sync") &&
                        Catch::Matchers::Contains("a warp of 16 lanes") &&
                        Catch::Matchers::Contains("needs all 32"));
}

}  // namespace triptych::sim_tests
