// The IDX reader (common/idx.hpp) on small files the tests write: plain and gzip files read back
// exactly; every kind of broken file is a DataError naming the file and the fault, never a crash
// or a partial load.
#include <zlib.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/idx.hpp"
#include "common/random.hpp"
#include "tests/seed.hpp"

using namespace triptych;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::uint8_t>;

// An IDX file of unsigned bytes: magic 00 00 08 <rank>, big-endian sizes, then `values`.
Bytes idx_bytes(const std::vector<std::uint32_t>& dims, const Bytes& values) {
    Bytes bytes = {0, 0, 0x08, std::uint8_t(dims.size())};
    for (std::uint32_t d : dims)
        for (int shift : {24, 16, 8, 0}) bytes.push_back(std::uint8_t(d >> shift));
    bytes.insert(bytes.end(), values.begin(), values.end());
    return bytes;
}

// A directory of its own for each test, removed afterwards.
struct TempDir {
    fs::path path;
    TempDir() {
        path = fs::temp_directory_path() / ("triptych-idx-" + std::to_string(testing::seed()) +
                                            "-" + std::to_string(fresh_seed()));
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }

    fs::path write(const std::string& name, const Bytes& bytes) const {
        std::ofstream(path / name, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return path / name;
    }
    fs::path write_gzip(const std::string& name, const Bytes& bytes) const {
        gzFile f = gzopen((path / name).c_str(), "wb");
        REQUIRE(f != nullptr);
        REQUIRE(gzwrite(f, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
        REQUIRE(gzclose(f) == Z_OK);
        return path / name;
    }
};

Bytes random_bytes(std::size_t n, std::uint32_t high) {
    Rng rng(testing::seed());
    Bytes v(n);
    for (auto& b : v) b = std::uint8_t(rng.next() % (high + 1));
    return v;
}

Bytes read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("read_idx reads plain and gzip files back exactly", "[idx]") {
    TempDir dir;
    const Bytes pixels = random_bytes(5 * 3 * 4, 255);
    const Bytes file = idx_bytes({5, 3, 4}, pixels);
    for (const fs::path& p : {dir.write("plain", file), dir.write_gzip("packed.gz", file)}) {
        INFO(p);
        const IdxArray a = read_idx(p);
        CHECK(a.dims == std::vector<std::int64_t>{5, 3, 4});
        CHECK(a.values == pixels);
    }
}

TEST_CASE("read_image_set scales pixels to [0, 1], keeps labels, and honours the limit", "[idx]") {
    TempDir dir;
    const Bytes pixels = random_bytes(6 * 2 * 3, 255), labels = random_bytes(6, 9);
    const fs::path images = dir.write_gzip("images.gz", idx_bytes({6, 2, 3}, pixels));
    const fs::path label_file = dir.write("labels", idx_bytes({6}, labels));
    const ImageSet all = read_image_set(images, label_file);
    REQUIRE(all.count == 6);
    CHECK(all.rows == 2);
    CHECK(all.cols == 3);
    for (std::size_t i = 0; i < pixels.size(); ++i)
        CHECK(all.images[i] == float(pixels[i]) / 255.0f);
    for (std::size_t i = 0; i < labels.size(); ++i) CHECK(all.labels[i] == float(labels[i]));
    const ImageSet first = read_image_set(images, label_file, 4);
    CHECK(first.count == 4);
    CHECK(first.images.size() == 4 * 2 * 3);
    CHECK(first.labels.size() == 4);
}

TEST_CASE("a missing, truncated or corrupt IDX file is a DataError naming the file and the fault",
          "[idx][errors]") {
    TempDir dir;
    const Bytes good = idx_bytes({4, 2, 2}, random_bytes(16, 255));
    const auto fails_with = [](const fs::path& p, const std::string& what) {
        INFO(p);
        CHECK_THROWS_MATCHES(read_idx(p), DataError,
                             Catch::Matchers::Predicate<DataError>(
                                 [&](const DataError& e) {
                                     const std::string m = e.what();
                                     return m.find(p.string()) != std::string::npos &&
                                            m.find(what) != std::string::npos;
                                 },
                                 "names the file and says '" + what + "'"));
    };
    fails_with(dir.path / "absent", "no such file");
    fails_with(dir.write("empty", {}), "too short for an IDX header");
    Bytes bad_magic = good;
    bad_magic[2] = 0x0D;  // floats: a type these datasets never use
    fails_with(dir.write("bad_magic", bad_magic), "bad magic number");
    fails_with(dir.write("header_cut", Bytes(good.begin(), good.begin() + 9)), "truncated header");
    fails_with(dir.write("body_cut", Bytes(good.begin(), good.end() - 1)), "(truncated)");
    Bytes longer = good;
    longer.push_back(7);
    fails_with(dir.write("longer", longer), "(bytes to spare)");
    fails_with(dir.write("zero_dim", idx_bytes({4, 0, 2}, {})), "dimension 1 is 0");
    // Sizes whose product overflows 64 bits (it once wrapped to a small count).
    fails_with(dir.write("huge", idx_bytes({4294967295u, 4294967295u, 4294967295u}, {})),
               "dimensions 4294967295 x 4294967295 x ...: more than 2^40 values");

    // A gzip file cut short, and one whose compressed data is damaged.
    const Bytes packed = read_file(dir.write_gzip("good.gz", good));
    fails_with(dir.write("cut.gz", Bytes(packed.begin(), packed.begin() + packed.size() / 2)),
               "truncated");
    Bytes damaged = packed;
    for (std::size_t i = 12; i < damaged.size() - 8; ++i) damaged[i] ^= 0x5A;
    fails_with(dir.write("damaged.gz", damaged), "damaged gzip");
}

TEST_CASE("read_image_set refuses wrong dimensions, mismatched counts and labels outside 0-9",
          "[idx][errors]") {
    TempDir dir;
    const fs::path images = dir.write("images", idx_bytes({3, 2, 2}, random_bytes(12, 255)));
    const fs::path labels = dir.write("labels", idx_bytes({3}, {1, 2, 3}));
    CHECK_NOTHROW(read_image_set(images, labels));
    CHECK_THROWS_WITH(read_image_set(labels, labels),
                      Contains("labels") && Contains("expected images (count x rows x cols)"));
    CHECK_THROWS_WITH(read_image_set(images, images), Contains("expected labels (count)"));
    CHECK_THROWS_WITH(read_image_set(images, dir.write("two", idx_bytes({2}, {1, 2}))),
                      Contains("2 labels for 3 images"));
    CHECK_THROWS_WITH(read_image_set(images, dir.write("ten", idx_bytes({3}, {1, 10, 3}))),
                      Contains("label 10 at index 1 is not a class in 0-9"));
}

TEST_CASE("fashion_mnist_files takes each file gzipped, or plain when only that is there",
          "[idx]") {
    TempDir dir;
    const Bytes labels = idx_bytes({2}, {1, 2});
    dir.write_gzip("train-labels-idx1-ubyte.gz", labels);
    dir.write("t10k-labels-idx1-ubyte", labels);
    dir.write("t10k-images-idx3-ubyte", idx_bytes({2, 1, 1}, {7, 8}));
    dir.write_gzip("t10k-images-idx3-ubyte.gz", idx_bytes({2, 1, 1}, {7, 8}));
    const FashionMnistFiles files = fashion_mnist_files(dir.path);
    CHECK(files.train_labels == dir.path / "train-labels-idx1-ubyte.gz");
    CHECK(files.test_labels == dir.path / "t10k-labels-idx1-ubyte");
    CHECK(files.test_images == dir.path / "t10k-images-idx3-ubyte.gz");  // both: the gzip file
    // Neither: the gzip name, which reading then reports as missing.
    CHECK(files.train_images == dir.path / "train-images-idx3-ubyte.gz");
    const ImageSet test = read_image_set(files.test_images, files.test_labels);
    CHECK(test.count == 2);
    CHECK(test.labels == std::vector<float>{1, 2});
}
