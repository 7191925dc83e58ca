// Reading a whole file, for the loaders of data (common/idx.cpp) and checkpoints
// (common/nn/checkpoint.cpp): every failure is a DataError that starts with the file's path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace triptych {

// Throws DataError("<path>: <what>").
[[noreturn]] void fail_reading(const std::filesystem::path& path, const std::string& what);

// DataError("<path>: no such file") or ("<path>: not a regular file") unless `path` is a file
// one can read.
void require_regular_file(const std::filesystem::path& path);

// Every byte of the file, through zlib's gzread, which passes plain files through unchanged and
// inflates gzip ones (recognised by their first two bytes, 1f 8b). A missing file, one that is not
// a regular file, one that cannot be opened or read, and a damaged or truncated gzip stream are
// DataErrors naming the file; nothing is returned half-read.
std::vector<std::uint8_t> read_whole_file(const std::filesystem::path& path);

}  // namespace triptych
