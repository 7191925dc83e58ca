// What the subcommands share for running other programs and writing their output files:
//
//   run_program(command)                 runs a program, Ctrl-C stopping it rather than us
//   run_python_script("bench/report.py", arguments)
//                                        runs one of the project's Python scripts with the
//                                        interpreter the build found (TRIPTYCH_PYTHON); its
//                                        one-line error becomes a DataError
//   output_file("--out", path)         the file an output option names, refused before any work
//                                        when it cannot be written that way
//   TemporaryFile file(directory, stem, ".csv"); write file.path(); file.keep_as(target);
//                                        a file written under a temporary name and renamed over
//                                        the target only once complete, so an interrupted run
//                                        never leaves a half-written file where a good one was
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace triptych::tools {

// Runs `command` (command[0] is a path) and returns its exit status (128 + signal if a signal
// ended it). Its output goes to ours, except file descriptor `capture_fd` (1 or 2) when `captured`
// is given: that is collected into `captured`; and its stderr is dropped if `quiet`. While it runs
// we only note SIGINT and SIGTERM (the child takes them as usual), so that Ctrl-C stops the child
// and we can still clean up; one that came returns 128 + that signal, however the child ended.
int run_program(const std::vector<std::string>& command, int capture_fd = -1,
                std::string* captured = nullptr, bool quiet = false);

// Runs TRIPTYCH_PYTHON on `script` (a path relative to the source tree, "bench/report.py") with
// `arguments`. A non-zero exit is a DataError carrying the script's last line of error output (its
// one-line message, or a traceback's exception line); one ended by SIGINT or SIGTERM (Ctrl-C) is
// an Error saying so, which no caller takes for a fault of the script's input.
void run_python_script(const std::string& script, const std::vector<std::string>& arguments);

// A temporary file, created empty and removed on destruction unless `keep_as` renamed it.
class TemporaryFile {
public:
    // `<directory>/.<stem>.tmp-XXXXXX<extension>`, readable as a normal file would be. The
    // extension stays last, for programs that choose a format by it (matplotlib's savefig).
    TemporaryFile(const std::filesystem::path& directory, const std::string& stem,
                  const std::string& extension);
    ~TemporaryFile();
    TemporaryFile(const TemporaryFile&) = delete;
    TemporaryFile& operator=(const TemporaryFile&) = delete;

    const std::filesystem::path& path() const { return path_; }
    // Renames the file to `target` (in the same directory, so the rename is atomic).
    void keep_as(const std::filesystem::path& target);

private:
    std::filesystem::path path_;
};

// The file that `option` (--out, --json, --save) names for a command's output, checked before any
// work is done: the file itself, or the file a symbolic link leads to, so that keep_as replaces
// that file and leaves the link. InvalidArgument naming the option if its directory does not
// exist, or if it exists and is not a regular file: a directory, a device such as /dev/null, a
// FIFO, which renaming over would destroy.
std::filesystem::path output_file(const std::string& option, const std::filesystem::path& file);

}  // namespace triptych::tools
