// IDX: the file format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/), plain or
// gzip-compressed (the Debian package dataset-fashion-mnist ships .gz files).
//
//   bytes 0-1  zero
//   byte  2    the element type: 0x08 = unsigned byte (the only one these datasets use)
//   byte  3    the number of dimensions, d
//   then       d sizes, 32-bit big-endian
//   then       the elements, row-major, as many as the sizes multiply to: no more, no fewer
//
// Anything else is a DataError naming the file and what is wrong with it: a missing or unreadable
// file, a damaged gzip stream, a bad magic number, a truncated file or one with bytes to spare,
// dimensions that are not what the caller expects, a label outside 0-9. Nothing is returned
// half-read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace triptych {

// The content of one IDX file of unsigned bytes.
struct IdxArray {
    std::vector<std::int64_t> dims;
    std::vector<std::uint8_t> values;  // row-major, the product of dims
};

// Reads `path`, plain or gzip (recognised by its first two bytes, 1f 8b).
IdxArray read_idx(const std::filesystem::path& path);

// A labelled image set: `count` images of rows x cols pixels, scaled from 0..255 to [0, 1], and
// their labels (class indices 0-9 held as floats, as the losses take them).
struct ImageSet {
    std::int64_t count = 0, rows = 0, cols = 0;
    std::vector<float> images;  // (count, rows * cols)
    std::vector<float> labels;  // (count)
};

// Reads an images file (3 dimensions: count, rows, cols) and its labels file (1 dimension:
// count, every label in 0-9), keeping the first `limit` images (all when limit <= 0).
ImageSet read_image_set(const std::filesystem::path& images, const std::filesystem::path& labels,
                        std::int64_t limit = 0);

// Fashion-MNIST's four files in `directory`, as Debian's dataset-fashion-mnist installs them
// (train-images-idx3-ubyte.gz, ...), or each uncompressed, without .gz, when only that is there.
struct FashionMnistFiles {
    std::filesystem::path train_images, train_labels, test_images, test_labels;
};
FashionMnistFiles fashion_mnist_files(
    const std::filesystem::path& directory = "/usr/share/datasets/fashion-mnist");

}  // namespace triptych
