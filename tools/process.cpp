// Running other programs and writing files safely; see process.hpp.
#include "tools/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/errors.hpp"
#include "triptych_config.hpp"

extern char** environ;

namespace triptych::tools {
namespace {

namespace fs = std::filesystem;

// The SIGINT or SIGTERM that arrived while a child ran, or 0.
volatile std::sig_atomic_t interruption = 0;

extern "C" void note_interruption(int signal) { interruption = signal; }

// While a child runs, Ctrl-C must stop the child, not us: we still have temporary files to remove.
// So the signal is only noted; the child gets default signal handling back (see run_program) and
// stops. Noted, not ignored: a child may not die of the signal (Python turns a KeyboardInterrupt
// raised during an import into another error, and exits 1), and we must still know it came.
class DeferInterrupts {
public:
    DeferInterrupts() {
        interruption = 0;
        old_int_ = std::signal(SIGINT, note_interruption);
        old_term_ = std::signal(SIGTERM, note_interruption);
    }
    ~DeferInterrupts() {
        std::signal(SIGINT, old_int_);
        std::signal(SIGTERM, old_term_);
    }
    DeferInterrupts(const DeferInterrupts&) = delete;
    DeferInterrupts& operator=(const DeferInterrupts&) = delete;

private:
    void (*old_int_)(int);
    void (*old_term_)(int);
};

std::string read_all(int fd) {
    std::string text;
    char buffer[4096];
    for (;;) {
        const ssize_t n = read(fd, buffer, sizeof buffer);
        if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
        if (n == 0 || (n < 0 && errno != EINTR)) return text;
    }
}

// The last non-empty line of a program's error output: a script's one-line message, or the
// exception line of a Python traceback.
std::string last_line(const std::string& text) {
    std::istringstream lines(text);
    std::string line, last;
    while (std::getline(lines, line))
        if (!line.empty()) last = line;
    return last;
}

}  // namespace

int run_program(const std::vector<std::string>& command, int capture_fd, std::string* captured,
                bool quiet) {
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);

    int pipe_fds[2] = {-1, -1};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (captured != nullptr) {
        if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error("pipe: " + std::string(strerror(errno)));
        posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], capture_fd);
    }
    if (quiet) posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);

    DeferInterrupts defer;
    std::fflush(stdout);  // our lines first, then the child's
    pid_t pid = 0;
    const int failed = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (captured != nullptr) close(pipe_fds[1]);
    if (failed != 0) {
        if (captured != nullptr) close(pipe_fds[0]);
        throw DataError("cannot run " + command[0] + ": " + strerror(failed));
    }
    if (captured != nullptr) {
        *captured = read_all(pipe_fds[0]);
        close(pipe_fds[0]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw Error("waitpid: " + std::string(strerror(errno)));
    if (interruption != 0) return 128 + interruption;  // however the child ended
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void run_python_script(const std::string& script, const std::vector<std::string>& arguments) {
    if (access(TRIPTYCH_PYTHON, X_OK) != 0)
        throw DataError("python " TRIPTYCH_PYTHON " (with matplotlib) not found; see README");
    std::vector<std::string> command{TRIPTYCH_PYTHON, TRIPTYCH_SOURCE_DIR "/" + script};
    command.insert(command.end(), arguments.begin(), arguments.end());
    std::string errors;
    const int status = run_program(command, STDERR_FILENO, &errors);
    // Stopped by Ctrl-C or a kill: the user's, not a fault of the script's input, so not a
    // DataError that a caller may turn into a warning and exit 0.
    if (status == 128 + SIGINT || status == 128 + SIGTERM)
        throw Error("interrupted while " + fs::path(script).filename().string() + " ran (signal " +
                    std::to_string(status - 128) + ")");
    if (status != 0) {
        const std::string message = last_line(errors);
        const std::string name = fs::path(script).filename().string();
        throw DataError(message.empty()
                            ? name + " failed (exit status " + std::to_string(status) + ")"
                            : message);
    }
}

TemporaryFile::TemporaryFile(const fs::path& directory, const std::string& stem,
                             const std::string& extension) {
    std::string name = (directory / ("." + stem + ".tmp-XXXXXX" + extension)).string();
    const int fd = mkstemps(name.data(), static_cast<int>(extension.size()));
    if (fd < 0)
        throw DataError("cannot create a file in " + directory.string() + ": " + strerror(errno));
    const mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    close(fd);
    path_ = name;
}

TemporaryFile::~TemporaryFile() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove(path_, ignored);
}

void TemporaryFile::keep_as(const fs::path& target) {
    fs::rename(path_, target);
    path_.clear();
}

namespace {

// output_file, but for the file system's own errors.
fs::path output_file_checked(const std::string& option, const fs::path& file) {
    const std::string named = option + " " + file.string();
    fs::path target = fs::absolute(file);
    for (int links = 0; fs::is_symlink(target); ++links) {
        if (links == 40) throw InvalidArgument(named + ": too many symbolic links");
        const fs::path next = fs::read_symlink(target);
        target = next.is_absolute() ? next : target.parent_path() / next;
    }
    const std::string where =
        target == fs::absolute(file) ? named : named + " (" + target.string() + ")";
    const fs::file_status status = fs::status(target);
    if (fs::is_directory(status)) throw InvalidArgument(where + " is a directory, not a file");
    if (fs::exists(status) && !fs::is_regular_file(status))
        throw InvalidArgument(where +
                              " is not a regular file (a device? a FIFO?): the output is "
                              "written to a temporary file and renamed over it, which would "
                              "replace it");
    if (!fs::is_directory(target.parent_path()))
        throw InvalidArgument(
            where + ": " +
            (fs::exists(target.parent_path())
                 ? target.parent_path().string() + " is not a directory"
                 : "directory " + target.parent_path().string() + " does not exist"));
    // The output is written beside the target and renamed: a directory where nothing may be
    // created (read-only, or /proc) is refused now, not after the work, by making (and, at the end
    // of this scope, removing) a temporary file there.
    try {
        const TemporaryFile probe(target.parent_path(), "triptych-probe", "");
    } catch (const DataError& e) {
        throw InvalidArgument(where + ": " + e.what());
    }
    return target;
}

}  // namespace

fs::path output_file(const std::string& option, const fs::path& file) {
    // A path the file system refuses outright (a name too long, a loop of links): named as the
    // option's, not as a bare filesystem error.
    try {
        return output_file_checked(option, file);
    } catch (const fs::filesystem_error& e) {
        throw InvalidArgument(option + " " + file.string() + ": " + e.code().message());
    }
}

}  // namespace triptych::tools
