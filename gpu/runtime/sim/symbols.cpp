// Source lines for code addresses: the recorder's sites and kernels become "file:line" and a
// function name through addr2line (binutils, which g++ needs anyway), run once per call on this
// program's own file. The instrumented kernels are compiled with -g1, which keeps the line table.
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/runtime/sim/recorder.hpp"
#include "triptych_config.hpp"

namespace triptych::sim {
namespace {

// Where the program's own file is loaded (a position-independent executable moves each run).
std::uintptr_t program_base() {
    std::uintptr_t base = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
            *static_cast<std::uintptr_t*>(out) = info->dlpi_addr;
            return 1;  // the first object is the program itself
        },
        &base);
    return base;
}

std::string hex(std::uintptr_t value) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%zx", std::size_t(value));
    return text;
}

std::string relative_to_source(std::string file) {
    const std::string root = std::string(TRIPTYCH_SOURCE_DIR) + "/";
    if (file.rfind(root, 0) == 0) file = file.substr(root.size());
    return file;
}

}  // namespace

std::vector<SourceLine> source_lines(const std::vector<std::uintptr_t>& sites) {
    std::vector<SourceLine> lines;
    for (std::uintptr_t site : sites) lines.push_back({hex(site), "?"});
    if (sites.empty()) return lines;
    char self[4096];
    const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0) return lines;
    self[length] = '\0';

    const std::uintptr_t base = program_base();
    std::string command = "addr2line -C -f -e '" + std::string(self) + "'";
    for (std::uintptr_t site : sites) command += " " + hex(site - base);
    command += " 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return lines;
    std::string output;
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
    if (pclose(pipe) != 0) return lines;

    // Two lines per address: the function, then file:line (or ??:0 without line information).
    std::istringstream in(output);
    for (SourceLine& line : lines) {
        std::string function, file_line;
        if (!std::getline(in, function) || !std::getline(in, file_line)) break;
        if (const auto note = file_line.find(" ("); note != std::string::npos)
            file_line.erase(note);  // " (discriminator 3)"
        if (file_line.rfind("??", 0) != 0) line.file_line = relative_to_source(file_line);
        if (function != "??") line.function = function;
    }
    return lines;
}

}  // namespace triptych::sim
