// `triptych train` end to end, on the first 256 images of Fashion-MNIST (the default --data,
// Debian's dataset-fashion-mnist): a bad option fails in one line naming the option and its value;
// a tiny run writes its whole loss curve as CSV and a PNG chart; a run resumed from its checkpoint
// continues the same curve; a damaged checkpoint is refused; Ctrl-C while it draws the chart is a
// failure, not a warning.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli.hpp"

extern char** environ;

using namespace triptych;
using Catch::Matchers::Contains;
using testing::run_cli;
namespace fs = std::filesystem;

namespace {

// 256 images at batch 64: 4 steps an epoch.
const std::string tiny_run = "train --model mlp --backend cpu_eigen_omp --limit 256 --batch 64";
constexpr int steps_per_epoch = 4;

struct CurveRow {
    std::string text;  // the line as written, to compare runs exactly
    int step, epoch;
    double loss;
};

// The rows of a loss curve CSV, after checking its header.
std::vector<CurveRow> read_curve(const fs::path& csv) {
    std::ifstream in(csv);
    REQUIRE(in.good());
    std::string line;
    std::getline(in, line);
    REQUIRE(line == "step,epoch,loss");
    std::vector<CurveRow> rows;
    while (std::getline(in, line)) {
        CurveRow row{line, 0, 0, 0};
        char comma1 = 0, comma2 = 0;
        std::istringstream fields(line);
        fields >> row.step >> comma1 >> row.epoch >> comma2 >> row.loss;
        INFO(csv.string() << ": " << line);
        REQUIRE((fields && comma1 == ',' && comma2 == ','));
        rows.push_back(row);
    }
    return rows;
}

// Whether `rows` are steps 1, 2, ... of `epochs` epochs of steps_per_epoch steps each, with
// losses that a classifier over 10 classes can have (finite and positive).
void check_curve(const std::vector<CurveRow>& rows, int epochs) {
    REQUIRE(rows.size() == std::size_t(epochs * steps_per_epoch));
    for (std::size_t i = 0; i < rows.size(); ++i) {
        INFO(rows[i].text);
        CHECK(rows[i].step == int(i) + 1);
        CHECK(rows[i].epoch == int(i) / steps_per_epoch + 1);
        CHECK(std::isfinite(rows[i].loss));
        CHECK(rows[i].loss > 0);
    }
}

void check_png(const fs::path& png) {
    std::ifstream in(png, std::ios::binary);
    std::string magic(8, '\0');
    in.read(magic.data(), 8);
    CHECK(magic == "\x89PNG\r\n\x1a\n");
    CHECK(fs::file_size(png) > 10'000);  // axes, a curve and labels, not a blank image
}

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

}  // namespace

TEST_CASE("`triptych train` refuses a bad option value in one line naming the option and value",
          "[cli][train]") {
    struct Case {
        std::string arguments, option, value;
    };
    const std::vector<Case> cases = {
        {"--epochs 0", "--epochs", "0"},
        {"--epochs two", "--epochs", "two"},
        {"--batch 0", "--batch", "0"},
        {"--batch 6.4", "--batch", "6.4"},
        {"--model vgg", "--model", "vgg"},
        {"--backend nope", "--backend", "nope"},
        {"--optimizer adagrad", "--optimizer", "adagrad"},
        {"--lr -0.1", "--lr", "-0.1"},
        {"--lr fast", "--lr", "fast"},
        {"--lr 1e-50", "--lr", "1e-50"},  // 0 as a float: the optimizer refused it, unnamed
        {"--seed -1", "--seed", "-1"},
        {"--limit 0", "--limit", "0"},
        {"--overlap yes", "--overlap", "yes"},
        {"--graph 1", "--graph", "1"},
    };
    for (const Case& c : cases) {
        INFO("triptych train " << c.arguments);
        const testing::CliRun run = run_cli("train " + c.arguments);
        CHECK(run.status != 0);
        CHECK(testing::one_line(run.stderr_text));
        CHECK_THAT(run.stderr_text, Contains(c.option) && Contains("'" + c.value + "'"));
    }
    // A batch larger than the training set only took memory: 23 GB for a batch of 7,500,000.
    const testing::CliRun large_batch = run_cli("train --limit 64 --batch 100");
    CHECK(large_batch.status != 0);
    CHECK(testing::one_line(large_batch.stderr_text));
    CHECK_THAT(large_batch.stderr_text,
               Contains("--batch 100 is more than the 64 training images (--limit 64)"));
    const testing::CliRun unknown = run_cli("train --frobnicate");
    CHECK(unknown.status != 0);
    CHECK_THAT(unknown.stderr_text, Contains("unknown option '--frobnicate'"));
    CHECK(run_cli("train --help").status == 0);
}

TEST_CASE(
    "a tiny `triptych train` run writes its loss curve as CSV and PNG, and a run resumed "
    "from its checkpoint continues the same curve",
    "[cli][train]") {
    const testing::ScratchDirectory dir("train-cli");
    const fs::path checkpoint = dir.path / "run.ckpt";

    const testing::CliRun first =
        run_cli(tiny_run + " --epochs 2 --out " + quoted(dir.path / "first") + " --save " +
                quoted(checkpoint));
    REQUIRE(first.status == 0);
    CHECK(first.stderr_text.empty());  // no progress bar when stderr is not a terminal
    const std::vector<CurveRow> two_epochs = read_curve(dir.path / "first/mlp_cpu_eigen_omp.csv");
    check_curve(two_epochs, 2);
    check_png(dir.path / "first/mlp_cpu_eigen_omp.png");
    REQUIRE(fs::exists(checkpoint));

    // --epochs counts the checkpoint's two: one more epoch, and the CSV holds all three.
    const testing::CliRun resumed = run_cli(tiny_run + " --epochs 3 --load " + quoted(checkpoint) +
                                            " --out " + quoted(dir.path / "resumed"));
    REQUIRE(resumed.status == 0);
    const std::vector<CurveRow> three_epochs =
        read_curve(dir.path / "resumed/mlp_cpu_eigen_omp.csv");
    check_curve(three_epochs, 3);
    check_png(dir.path / "resumed/mlp_cpu_eigen_omp.png");
    for (std::size_t i = 0; i < two_epochs.size(); ++i)
        CHECK(three_epochs[i].text == two_epochs[i].text);

    // On half the images the curve cannot continue: the checkpoint's steps say so.
    const testing::CliRun other_set = run_cli(
        "train --model mlp --backend cpu_eigen_omp --limit 128 --batch 64 --epochs 3 "
        "--load " +
        quoted(checkpoint) + " --out " + quoted(dir.path / "other"));
    CHECK(other_set.status != 0);
    CHECK(testing::one_line(other_set.stderr_text));
    CHECK_THAT(other_set.stderr_text,
               Contains("holds 8 steps over 2 epochs, but 2 epochs of these 128 training images "
                        "at batch 64 are 4 steps: it was trained on another training set"));

    // The third epoch is the one an unbroken three-epoch run trains: same weights, optimizer
    // state and batch order. Tolerance 1e-5 relative: cpu_eigen_omp may split a sum between its
    // OpenMP threads differently from one process to the next, which moves the last bits.
    const testing::CliRun unbroken =
        run_cli(tiny_run + " --epochs 3 --out " + quoted(dir.path / "unbroken"));
    REQUIRE(unbroken.status == 0);
    const std::vector<CurveRow> reference = read_curve(dir.path / "unbroken/mlp_cpu_eigen_omp.csv");
    check_curve(reference, 3);
    for (std::size_t i = 0; i < reference.size(); ++i) {
        INFO("step " << i + 1 << ": resumed " << three_epochs[i].loss << ", unbroken "
                     << reference[i].loss);
        CHECK(std::abs(three_epochs[i].loss - reference[i].loss) <= 1e-5 * reference[i].loss);
    }
}

TEST_CASE("`triptych train --save` may name a file in the --out folder the run makes",
          "[cli][train]") {
    const testing::ScratchDirectory dir("train-cli-save-in-out");
    const fs::path out = dir.path / "fresh";
    // It used to be refused: "directory .../fresh does not exist", checked before --out was made.
    const testing::CliRun run =
        run_cli(tiny_run + " --out " + quoted(out) + " --save " + quoted(out / "run.ckpt"));
    CHECK(run.status == 0);
    CHECK(fs::is_regular_file(out / "run.ckpt"));
    CHECK(fs::is_regular_file(out / "mlp_cpu_eigen_omp.csv"));
}

// A plain IDX file of unsigned bytes, all `value`: magic 00 00 08 <rank>, big-endian sizes.
void write_idx(const fs::path& path, const std::vector<std::uint32_t>& dims, char value) {
    std::string bytes = {0, 0, 0x08, char(dims.size())};
    std::size_t count = 1;
    for (std::uint32_t d : dims) {
        for (int shift : {24, 16, 8, 0}) bytes.push_back(char(d >> shift));
        count *= d;
    }
    bytes.append(count, value);
    std::ofstream(path, std::ios::binary) << bytes;
}

TEST_CASE(
    "`triptych train` refuses, before it trains or makes --out, outputs it cannot write, a "
    "--save onto its own loss curve, and images the models do not take",
    "[cli][train]") {
    const testing::ScratchDirectory dir("train-cli-refusals");
    const auto refuses = [](const std::string& arguments, const std::string& why) {
        INFO("triptych " << arguments);
        const testing::CliRun run = run_cli(arguments);
        CHECK(run.status != 0);
        CHECK(testing::one_line(run.stderr_text));
        CHECK_THAT(run.stderr_text, Contains(why));
    };
    // A checkpoint where nothing can be created: it trained an epoch, then failed.
    refuses(tiny_run + " --save /proc/triptych.ckpt",
            "--save /proc/triptych.ckpt: cannot create a file in /proc");
    // The checkpoint over the run's own CSV: it replaced the loss curve, and exited 0.
    const fs::path out = dir.path / "out";
    fs::create_directories(out);
    refuses(tiny_run + " --out " + quoted(out) + " --save " + quoted(out / "mlp_cpu_eigen_omp.csv"),
            "is a file this run writes its loss curve to");
    CHECK(fs::is_empty(out));
    // A setting refused after --out was made left an empty folder behind.
    refuses(tiny_run + " --overlap on --out " + quoted(dir.path / "never"),
            "overlapped uploads need a GPU backend");
    CHECK(!fs::exists(dir.path / "never"));
    // Test images of another size failed after a whole epoch, in the dense layer's words.
    const fs::path data = dir.path / "data";
    fs::create_directories(data);
    write_idx(data / "train-images-idx3-ubyte", {8, 28, 28}, 7);
    write_idx(data / "train-labels-idx1-ubyte", {8}, 3);
    write_idx(data / "t10k-images-idx3-ubyte", {8, 14, 14}, 7);
    write_idx(data / "t10k-labels-idx1-ubyte", {8}, 3);
    refuses("train --batch 4 --data " + quoted(data) + " --out " + quoted(dir.path / "never"),
            "the test images are 14x14; the models take 28x28 images");
    CHECK(!fs::exists(dir.path / "never"));
    refuses("train --data " + quoted(data / "t10k-labels-idx1-ubyte"), "a file, not a directory");
}

TEST_CASE("`triptych train --load` refuses a damaged or truncated checkpoint in one line",
          "[cli][train]") {
    const testing::ScratchDirectory dir("train-cli");
    const fs::path good = dir.path / "good.ckpt";
    REQUIRE(run_cli(tiny_run + " --epochs 1 --out " + quoted(dir.path / "out") + " --save " +
                    quoted(good))
                .status == 0);
    std::ifstream in(good, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    REQUIRE(bytes.size() > 1000);

    std::string flipped = bytes;
    flipped[flipped.size() / 2] ^= 0x01;  // one bit of a weight: only the checksum can tell
    const fs::path damaged = dir.path / "damaged.ckpt";
    std::ofstream(damaged, std::ios::binary) << flipped;
    const fs::path truncated = dir.path / "truncated.ckpt";
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() - 100);

    for (const fs::path& bad : {damaged, truncated}) {
        INFO(bad.filename().string());
        const testing::CliRun run = run_cli(tiny_run + " --epochs 2 --load " + quoted(bad) +
                                            " --out " + quoted(dir.path / "out"));
        CHECK(run.status != 0);
        CHECK(testing::one_line(run.stderr_text));
        CHECK_THAT(run.stderr_text, Contains(bad.string()));
    }
}

TEST_CASE(
    "`triptych train --overlap on --graph on` writes the plain run's loss curve on a GPU "
    "backend, and refuses a CPU backend in one line",
    "[cli][train][streams]") {
    const testing::CliRun cpu = run_cli(tiny_run + " --overlap on");
    CHECK(cpu.status != 0);
    CHECK(testing::one_line(cpu.stderr_text));
    CHECK_THAT(cpu.stderr_text, Contains("overlapped uploads need a GPU backend"));

    // A GPU backend (the simulator's, in a sim build): lenet, 3 steps of 16 and one of 4.
    const std::string gpu_run = "train --model lenet --backend gpu_tiled --limit 52 --batch 16";
    const testing::ScratchDirectory dir("train-cli-streams");
    const testing::CliRun plain = run_cli(gpu_run + " --out " + quoted(dir.path / "plain"));
    if (plain.status != 0 && plain.stderr_text.find("--backend:") != std::string::npos)
        return;  // no gpu_tiled in this build, or no GPU for it
    REQUIRE(plain.status == 0);
    const testing::CliRun both =
        run_cli(gpu_run + " --overlap on --graph on --out " + quoted(dir.path / "both"));
    REQUIRE(both.status == 0);
    const auto text = [](const fs::path& path) {
        std::ifstream file(path);
        std::stringstream content;
        content << file.rdbuf();
        return content.str();
    };
    const std::string curve = text(dir.path / "plain/lenet_gpu_tiled.csv");
    CHECK(std::count(curve.begin(), curve.end(), '\n') == 5);  // the header and 4 steps
    CHECK(text(dir.path / "both/lenet_gpu_tiled.csv") == curve);
}

TEST_CASE(
    "`triptych train` stops at the end of an epoch whose loss became NaN or infinite, says where, "
    "and keeps the last checkpoint",
    "[cli][train]") {
    const testing::ScratchDirectory dir("train-cli-diverged");
    const fs::path out = dir.path / "out", checkpoint = dir.path / "mlp.ckpt";
    // A good epoch first, saved...
    REQUIRE(run_cli(tiny_run + " --out " + quoted(out) + " --save " + quoted(checkpoint)).status ==
            0);
    const auto saved = fs::last_write_time(checkpoint);
    const std::uintmax_t saved_bytes = fs::file_size(checkpoint);
    // ...then a learning rate no training survives: it used to run on with a NaN loss, write the
    // NaN weights over the checkpoint, and exit 0.
    const testing::CliRun run =
        run_cli(tiny_run + " --lr 1e20 --out " + quoted(out) + " --save " + quoted(checkpoint));
    CHECK(run.status != 0);
    CHECK(testing::one_line(run.stderr_text));
    CHECK_THAT(run.stderr_text, Contains("the loss became") && Contains("of epoch 1") &&
                                    Contains("a smaller --lr than 1e+20 may help") &&
                                    Contains("mlp.ckpt was not written for this epoch"));
    CHECK(fs::last_write_time(checkpoint) == saved);
    CHECK(fs::file_size(checkpoint) == saved_bytes);
    // The curve is written, with the step that diverged, to show where.
    std::ifstream csv(out / "mlp_cpu_eigen_omp.csv");
    std::string line, last;
    int lines = 0;
    for (; std::getline(csv, line); ++lines) last = line;
    CHECK(lines == 1 + steps_per_epoch);  // the header and every step of the epoch
    CHECK_THAT(last, Contains("nan") || Contains("inf"));
}

TEST_CASE(
    "Ctrl-C while `triptych train` draws its chart ends it with a non-zero status and no chart",
    "[cli][train]") {
    const testing::ScratchDirectory dir("train-cli-interrupt");
    const fs::path out = dir.path / "out";
    const fs::path csv = out / "mlp_cpu_eigen_omp.csv", png = out / "mlp_cpu_eigen_omp.png";
    const std::string log = (dir.path / "stderr.txt").string();
    std::vector<std::string> arguments = {TRIPTYCH_CLI, "train",     "--model", "mlp",
                                          "--limit",    "256",       "--batch", "64",
                                          "--out",      out.string()};
    std::vector<char*> argv;
    for (std::string& a : arguments) argv.push_back(a.data());
    argv.push_back(nullptr);

    // In a process group of its own, as a shell runs a command: Ctrl-C reaches the whole group,
    // triptych and the python drawing the chart.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);

    // The CSV is complete before the chart starts (about half a second of python and
    // matplotlib here): the interrupt comes 100 ms after the CSV appears.
    int status = 0;
    bool exited = false;
    while (!fs::exists(csv) && !exited) {
        exited = waitpid(pid, &status, WNOHANG) == pid;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    REQUIRE_FALSE(exited);  // it trained and wrote its CSV
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(-pid, SIGINT);
    REQUIRE(waitpid(pid, &status, 0) == pid);

    std::ifstream in(log);
    const std::string errors{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    INFO("stderr: " << errors);
    CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));  // it used to exit 0
    CHECK_FALSE(fs::exists(png));
    if (WIFEXITED(status)) {  // it cleaned up: the chart's temporary file is gone too
        CHECK_THAT(errors, Contains("interrupted while plot_training.py ran"));
        std::vector<fs::path> left;
        for (const fs::directory_entry& entry : fs::directory_iterator(out))
            left.push_back(entry.path());
        CHECK(left == std::vector<fs::path>{csv});
    }
}

TEST_CASE(
    "`triptych train --profile` on a CPU backend ends with the cache line's round trip between "
    "two CPUs before and after the steps, where the run may use two",
    "[cli][train]") {
    const testing::ScratchDirectory dir("train-cli-profile");
    const std::string out = " --out " + quoted(dir.path);
    const std::string profiled = testing::cli_output(tiny_run + " --profile" + out);
    CHECK_THAT(profiled, Contains("\nper step, ms (mean over 4 steps):\n"));
    // A busy machine may give up on either measurement (ctest runs two tests at once).
    const std::regex round_trip(
        R"(\nCPU [0-9]+ <-> CPU [0-9]+, a cache line's round trip: ([0-9]+ ns|not measured )"
        R"(\([^()\n]+\)) before the steps, ([0-9]+ ns|not measured \([^()\n]+\)) after\n)"
        R"(\(tens of ns: the two cores share an L3 cache; hundreds: they do not)");
    CHECK(std::regex_search(profiled, round_trip));
    // Limited to one CPU (as the run inherits this thread's) it has no pair to measure, and says
    // nothing of one.
    cpu_set_t allowed, one;
    REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0);
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE && CPU_COUNT(&one) == 0; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) CPU_SET(cpu, &one);
    REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
    const std::string alone = testing::cli_output(tiny_run + " --profile" + out);
    REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0);
    CHECK_THAT(alone, Contains("\nper step, ms (mean over 4 steps):\n"));
    CHECK_THAT(alone, !Contains("round trip"));
    CHECK_THAT(testing::cli_output(tiny_run + out), !Contains("round trip"));
}
