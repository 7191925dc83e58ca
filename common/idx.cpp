#include "common/idx.hpp"

#include "common/files.hpp"

namespace triptych {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
    fail_reading(path, what);
}

std::uint32_t big_endian(const std::uint8_t* p) {
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
           std::uint32_t(p[3]);
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
    std::string text;
    for (std::int64_t d : dims) text += (text.empty() ? "" : " x ") + std::to_string(d);
    return text;
}

}  // namespace

IdxArray read_idx(const std::filesystem::path& path) {
    const std::vector<std::uint8_t> bytes = read_whole_file(path);
    if (bytes.size() < 4)
        fail(path, "too short for an IDX header (" + std::to_string(bytes.size()) + " bytes)");
    if (bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08)
        fail(path, "bad magic number (expected 00 00 08 for unsigned bytes): not an IDX file");
    const int rank = bytes[3];
    if (rank < 1) fail(path, "an IDX header with 0 dimensions");
    const std::size_t header = 4 + 4 * std::size_t(rank);
    if (bytes.size() < header)
        fail(path, "truncated header: " + std::to_string(rank) + " dimensions need " +
                       std::to_string(header) + " bytes, the file has " +
                       std::to_string(bytes.size()));
    IdxArray array;
    std::int64_t elements = 1;
    for (int i = 0; i < rank; ++i) {
        const std::int64_t d = big_endian(&bytes[4 + 4 * std::size_t(i)]);
        if (d == 0) fail(path, "dimension " + std::to_string(i) + " is 0");
        array.dims.push_back(d);
        // Tested before multiplying, so that the product cannot overflow (d < 2^32).
        if (elements > (std::int64_t(1) << 40) / d)
            fail(path, "dimensions " + dims_text(array.dims) + (i + 1 < rank ? " x ..." : "") +
                           ": more than 2^40 values, too many to be real");
        elements *= d;
    }
    const std::int64_t body = std::int64_t(bytes.size() - header);
    if (body != elements)
        fail(path, "the header says " + dims_text(array.dims) + " = " + std::to_string(elements) +
                       " values, the file holds " + std::to_string(body) +
                       (body < elements ? " (truncated)" : " (bytes to spare)"));
    array.values.assign(bytes.begin() + std::ptrdiff_t(header), bytes.end());
    return array;
}

ImageSet read_image_set(const std::filesystem::path& images_path,
                        const std::filesystem::path& labels_path, std::int64_t limit) {
    const IdxArray images = read_idx(images_path);
    const IdxArray labels = read_idx(labels_path);
    if (images.dims.size() != 3)
        fail(images_path,
             "expected images (count x rows x cols), got dimensions " + dims_text(images.dims));
    if (labels.dims.size() != 1)
        fail(labels_path, "expected labels (count), got dimensions " + dims_text(labels.dims));
    if (images.dims[0] != labels.dims[0])
        fail(labels_path, std::to_string(labels.dims[0]) + " labels for " +
                              std::to_string(images.dims[0]) + " images in " +
                              images_path.string());
    for (std::size_t i = 0; i < labels.values.size(); ++i)
        if (labels.values[i] > 9)
            fail(labels_path, "label " + std::to_string(labels.values[i]) + " at index " +
                                  std::to_string(i) + " is not a class in 0-9");

    ImageSet set;
    set.count = limit > 0 ? std::min(limit, images.dims[0]) : images.dims[0];
    set.rows = images.dims[1];
    set.cols = images.dims[2];
    const std::size_t pixels = std::size_t(set.count * set.rows * set.cols);
    set.images.resize(pixels);
    for (std::size_t i = 0; i < pixels; ++i) set.images[i] = float(images.values[i]) / 255.0f;
    set.labels.assign(labels.values.begin(), labels.values.begin() + std::ptrdiff_t(set.count));
    return set;
}

FashionMnistFiles fashion_mnist_files(const std::filesystem::path& directory) {
    // The gzip file when it is there, else the plain one when that is, else the gzip name (which
    // the error on reading it then names).
    const auto file = [&](const std::string& name) {
        const std::filesystem::path gzip = directory / (name + ".gz"), plain = directory / name;
        return !std::filesystem::exists(gzip) && std::filesystem::exists(plain) ? plain : gzip;
    };
    return {file("train-images-idx3-ubyte"), file("train-labels-idx1-ubyte"),
            file("t10k-images-idx3-ubyte"), file("t10k-labels-idx1-ubyte")};
}

}  // namespace triptych
