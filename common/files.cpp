#include "common/files.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/errors.hpp"

namespace triptych {

void fail_reading(const std::filesystem::path& path, const std::string& what) {
    throw DataError(path.string() + ": " + what);
}

void require_regular_file(const std::filesystem::path& path) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) fail_reading(path, "no such file");
    if (!std::filesystem::is_regular_file(status)) fail_reading(path, "not a regular file");
}

std::vector<std::uint8_t> read_whole_file(const std::filesystem::path& path) {
    require_regular_file(path);
    struct Closer {
        void operator()(gzFile f) const { gzclose(f); }
    };
    std::unique_ptr<gzFile_s, Closer> file(gzopen(path.c_str(), "rb"));
    if (!file) fail_reading(path, std::string("cannot open: ") + std::strerror(errno));
    std::vector<std::uint8_t> bytes;
    std::uint8_t chunk[1 << 16];
    for (;;) {
        const int n = gzread(file.get(), chunk, sizeof chunk);
        if (n < 0) {
            int code = 0;
            const char* message = gzerror(file.get(), &code);
            fail_reading(path, std::string("cannot read (damaged gzip data?): ") + message);
        }
        if (n == 0) break;
        bytes.insert(bytes.end(), chunk, chunk + n);
    }
    // gzread stops quietly at a gzip stream that ends early; zlib flags it as Z_BUF_ERROR.
    int code = Z_OK;
    gzerror(file.get(), &code);
    if (code != Z_OK) fail_reading(path, "the gzip data ends early (truncated file)");
    return bytes;
}

}  // namespace triptych
