// Source lines for code addresses: the recorder's sites and kernels become "file:line" and a
// function name through addr2line (binutils, which g++ needs anyway), run once per call on this
// program's own file. The instrumented kernels are compiled with -g1, which keeps the line table.
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
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

// Where the simulator's own headers are, relative to the source directory.
constexpr const char* simulator_headers = "gpu/runtime/sim/";

std::string relative_to_source(std::string file) {
    const std::string root = std::string(TRIPTYCH_SOURCE_DIR) + "/";
    if (file.rfind(root, 0) == 0) file = file.substr(root.size());
    return file;
}

// The frame that names a site: the innermost with line information that is not in the simulator's
// own headers. An access that those headers make for a kernel (__ldg, a WMMA fragment load) is
// inlined into it, and the caller's frame is the kernel's line that asked for it. `frames` are
// addr2line's, innermost first: a function, and file:line or "??:0" without line information.
SourceLine site_in_kernel(const std::vector<SourceLine>& frames, const SourceLine& unknown) {
    std::optional<SourceLine> innermost;
    for (const auto& [file_line, function] : frames) {
        if (file_line.rfind("??", 0) == 0) continue;  // no line information
        // "file:line (discriminator 3)" -> "file:line"
        SourceLine frame{relative_to_source(file_line.substr(0, file_line.find(" ("))),
                         function == "??" ? unknown.function : function};
        if (frame.file_line.rfind(simulator_headers, 0) != 0) return frame;
        if (!innermost) innermost = frame;
    }
    return innermost.value_or(unknown);
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
    std::string command = "addr2line -C -f -i -a -e '" + std::string(self) + "'";
    for (std::uintptr_t site : sites) command += " " + hex(site - base);
    command += " 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return lines;
    std::string output;
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
    if (pclose(pipe) != 0) return lines;

    // Per address, -a prints the address; then -f -i print a function and its file:line for the
    // code there and, where that code was inlined, for each caller it was inlined into,
    // innermost first.
    std::istringstream in(output);
    std::string text;
    std::getline(in, text);  // the first address
    for (SourceLine& line : lines) {
        std::vector<SourceLine> frames;
        std::string function;
        while (std::getline(in, text) && text.rfind("0x", 0) != 0) {
            if (function.empty()) {
                function = text;
                continue;
            }
            frames.push_back({text, function});
            function.clear();
        }
        line = site_in_kernel(frames, line);
    }
    return lines;
}

}  // namespace triptych::sim
