// Running the `triptych` command line from a test (its path is TRIPTYCH_CLI, set by
// tests/CMakeLists.txt): the exit status and what it printed on standard error; and a scratch
// directory for the files a command writes.
#pragma once

#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "common/random.hpp"

namespace triptych::testing {

struct CliRun {
    int status;               // the exit status, -1 if a signal ended it
    std::string stderr_text;  // standard output is dropped
};

// Runs `triptych <arguments> <redirections>` through the shell (quote arguments that need it):
// the exit status, -1 if a signal ended it, and what reached the pipe.
inline std::pair<int, std::string> run_cli_piped(const std::string& arguments,
                                                 const std::string& redirections) {
    const std::string command = std::string(TRIPTYCH_CLI) + " " + arguments + " " + redirections;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string text;
    std::array<char, 512> chunk{};
    while (fgets(chunk.data(), chunk.size(), pipe) != nullptr) text += chunk.data();
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

// Runs `triptych <arguments>`: its exit status and standard error.
inline CliRun run_cli(const std::string& arguments) {
    const auto [status, stderr_text] = run_cli_piped(arguments, "2>&1 >/dev/null");
    return {status, stderr_text};
}

// Runs `triptych <arguments>`: its standard output, after REQUIREing a zero exit status.
inline std::string cli_output(const std::string& arguments) {
    const auto [status, stdout_text] = run_cli_piped(arguments, "2>/dev/null");
    REQUIRE(status == 0);
    return stdout_text;
}

// Whether `text` is exactly one line: how the command line reports an error.
inline bool one_line(const std::string& text) {
    return !text.empty() && text.find('\n') == text.size() - 1;
}

// A new directory under the system's temporary directory, removed with everything in it when the
// test ends.
struct ScratchDirectory {
    std::filesystem::path path;
    explicit ScratchDirectory(const std::string& name)
        : path(std::filesystem::temp_directory_path() /
               ("triptych-" + name + "-" + std::to_string(fresh_seed()))) {
        std::filesystem::create_directories(path);
    }
    ~ScratchDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    ScratchDirectory(const ScratchDirectory&) = delete;
    ScratchDirectory& operator=(const ScratchDirectory&) = delete;
};

}  // namespace triptych::testing
