// `triptych train`: trains a built-in model (common/nn/models.hpp) on Fashion-MNIST on one
// backend, the whole loop of lessons 13 and 14 from the command line.
//
//   triptych train --model lenet --backend cpu_eigen_omp --epochs 15 --save lenet.ckpt
//
// Per epoch: a progress bar on stderr (when stderr is a terminal), then one line on stdout with the
// epoch's mean training loss, the test accuracy, the seconds and images/s of its training steps.
// OUT/<model>_<backend>.csv holds every step's loss (rewritten after each epoch) and
// OUT/<model>_<backend>.png its chart (tools/plot_training.py, drawn at the end); both are written
// under a temporary name and renamed. --save writes a checkpoint after every epoch, --load
// resumes one: the run and its loss curve continue where the checkpoint stopped. --profile adds
// where a step's time goes, per layer and per phase (and, on a CPU backend, how long a cache line
// took between two CPUs before and after the steps: it changes those times). Under
// TRIPTYCH_LESSON_OUTPUT=marked the times, and the losses and accuracies (whose last digits depend
// on the machine), are marked (common/output_marks.hpp), so that the outputs lessons 13 and 14
// quote are checked.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "common/idx.hpp"
#include "common/machine.hpp"
#include "common/nn/checkpoint.hpp"
#include "common/nn/models.hpp"
#include "common/nn/optimizer.hpp"
#include "common/nn/trainer.hpp"
#include "common/output_marks.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "common/timer.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"
#include "tools/process.hpp"

namespace triptych::tools {
namespace {

namespace fs = std::filesystem;

const char* const default_data = "/usr/share/datasets/fashion-mnist";

void print_help() {
    std::printf(
        "usage: triptych train [--model mlp|lenet] [--backend NAME] [--epochs E] [--batch B]\n"
        "                      [--optimizer sgd|adam|rmsprop] [--lr X] [--seed S] [--limit N]\n"
        "                      [--data DIR] [--out DIR] [--save FILE] [--load FILE] [--profile]\n"
        "                      [--overlap on|off] [--graph on|off]\n"
        "\n"
        "Trains a built-in model on Fashion-MNIST (60,000 training and 10,000 test images of\n"
        "28x28 clothes in 10 classes) on one backend: a progress bar per epoch, then the epoch's\n"
        "mean training loss, test accuracy, seconds and images/s. Writes\n"
        "OUT/<model>_<backend>.csv (step, epoch, loss: every step's mean batch loss, the whole\n"
        "curve) and OUT/<model>_<backend>.png, its chart. A loss that becomes NaN or infinite\n"
        "(the training diverged: too large a --lr) ends the run after its epoch, exit status\n"
        "1, with the curve written and no checkpoint of that epoch.\n"
        "\n"
        "  --model NAME      mlp (784-256-128-10, ReLU) or lenet (two 5x5 convolutions with max\n"
        "                    pooling, then 400-120-84-10); default mlp\n"
        "  --backend NAME    the variant to train on (`triptych info` lists them); default\n"
        "                    cpu_eigen_omp\n"
        "  --epochs E        the total number of epochs, those of a --load checkpoint included;\n"
        "                    default 1\n"
        "  --batch B         images per step; default 64\n"
        "  --optimizer NAME  sgd (with momentum 0.9), adam or rmsprop; default adam\n"
        "  --lr X            the learning rate; default 0.001 for adam and rmsprop, 0.01 for sgd\n"
        "  --seed S          the seed of the initial weights and of the shuffling; default 1.\n"
        "                    The same seed gives the same run on every backend, up to rounding\n"
        "  --limit N         train on the first N training images only, and test on the first\n"
        "                    min(N, 10000) test images; default: all 60,000 and all 10,000\n"
        "  --data DIR        the four IDX files, plain or gzip; default %s\n"
        "                    (Debian's dataset-fashion-mnist, see README)\n"
        "  --out DIR         where the CSV and the chart go, created if missing; default training\n"
        "  --save FILE       write a checkpoint to FILE after every epoch (to a temporary file,\n"
        "                    then renamed, so an interrupted save keeps the previous one)\n"
        "  --load FILE       resume from a checkpoint: its weights, optimizer state and loss\n"
        "                    curve. Training continues with the epoch after the checkpoint's "
        "last,\n"
        "                    up to --epochs. --model, --optimizer and --lr must be the run's;\n"
        "                    --seed and --batch default to the run's\n"
        "  --profile         after training, where a step's time goes: per layer (forward and\n"
        "                    backward ms per batch) and per phase (upload, forward, loss,\n"
        "                    backward, update). Every layer and phase is synchronized for it,\n"
        "                    which slows a GPU run a little. On a CPU backend, also how long\n"
        "                    a cache line took between two CPUs before and after the steps\n"
        "  --overlap on|off  GPU backends: upload the next batch on a copy stream, from pinned\n"
        "                    memory, while this one computes (lesson 16); default off\n"
        "  --graph on|off    GPU backends: capture a whole step (forward, loss, backward,\n"
        "                    update) as a CUDA graph and replay it every step, one launch\n"
        "                    instead of one per kernel (lesson 16); default off. Neither option\n"
        "                    changes a bit of the losses\n",
        default_data);
}

// --- the options -------------------------------------------------------------------------------

struct Settings {
    std::string model;
    std::string backend;
    int epochs = 1;  // the total, a loaded checkpoint's epochs included
    std::int64_t batch = 64;
    OptimizerConfig optimizer;
    std::uint64_t seed = 1;
    std::int64_t limit = 0;  // 0: every image
    fs::path data, out, save, load;
    // --save into the --out folder this run is still to make: checked once it is made.
    fs::path save_in_new_out;
    bool profile = false;
    bool overlap = false, graph = false;
};

// Option `name` as an integer from `minimum` to `maximum`, or `fallback` if it was not given.
std::int64_t integer_option(const Options& options, const std::string& name, std::int64_t fallback,
                            std::int64_t minimum,
                            std::int64_t maximum = std::numeric_limits<std::int64_t>::max()) {
    if (!options.has(name)) return fallback;
    const std::string text = options.get(name);
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < minimum ||
        value > maximum)
        throw InvalidArgument(name + " takes an integer >= " + std::to_string(minimum) +
                              (maximum < std::numeric_limits<std::int64_t>::max()
                                   ? " and <= " + std::to_string(maximum)
                                   : "") +
                              ", got '" + text + "'");
    return value;
}

// The learning rate: a positive, finite number, or the optimizer's usual one.
float learning_rate(const Options& options, OptimizerKind kind) {
    if (!options.has("--lr")) return kind == OptimizerKind::sgd ? 0.01f : 1e-3f;
    const std::string text = options.get("--lr");
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !(value > 0) ||
        !std::isfinite(float(value)))
        throw InvalidArgument("--lr takes a positive number, got '" + text + "'");
    if (float(value) == 0.0f)
        throw InvalidArgument("--lr takes a positive number a float can hold, got '" + text +
                              "' (0 as a float)");
    return float(value);
}

// Option `name` as on (true) or off (false, also when it was not given).
bool on_off_option(const Options& options, const std::string& name) {
    const std::string value = options.get(name, "off");
    if (value != "on" && value != "off")
        throw InvalidArgument(name + " takes on or off, got '" + value + "'");
    return value == "on";
}

// Every option, checked before any data is read or any time spent.
Settings read_settings(const Options& options) {
    Settings s;
    s.model = options.get("--model", "mlp");
    const std::vector<std::string> models = nn::model_names();
    if (std::find(models.begin(), models.end(), s.model) == models.end()) {
        std::string names;
        for (const std::string& name : models) names += (names.empty() ? "" : ", ") + name;
        throw InvalidArgument("--model '" + s.model + "' is not a model; the models are " + names);
    }
    s.backend = options.get("--backend", "cpu_eigen_omp");
    s.epochs = int(integer_option(options, "--epochs", 1, 1, std::numeric_limits<int>::max()));
    s.batch = integer_option(options, "--batch", 64, 1);
    const std::string optimizer = options.get("--optimizer", "adam");
    try {
        s.optimizer.kind = nn::optimizer_kind(optimizer);
    } catch (const InvalidArgument&) {
        throw InvalidArgument("--optimizer takes sgd, adam or rmsprop, got '" + optimizer + "'");
    }
    // SGD gets momentum 0.9, the common choice for these models (plain SGD learns them slowly);
    // the other fields keep OptimizerConfig's defaults, which are PyTorch's.
    if (s.optimizer.kind == OptimizerKind::sgd) s.optimizer.momentum = 0.9f;
    s.optimizer.lr = learning_rate(options, s.optimizer.kind);
    s.seed = options.has("--seed") ? parse_seed("--seed", options.get("--seed")) : 1;
    s.limit = integer_option(options, "--limit", 0, 1);
    s.data = options.get("--data", default_data);
    s.out = options.get("--out", "training");
    std::error_code unreadable;  // a name too long, say: refused where the folder is made
    const fs::file_status out = fs::status(s.out, unreadable);
    if (fs::exists(out) && !fs::is_directory(out))
        throw InvalidArgument("--out " + s.out.string() + " exists and is not a directory");
    // The file the checkpoint replaces (where a link to it leads), refused now if it cannot be;
    // in the --out folder that does not exist yet, once the folder is made.
    if (options.has("--save")) {
        const fs::path save = options.get("--save");
        const auto folder = [](const fs::path& p) {
            return (fs::absolute(p) / "").lexically_normal();
        };
        if (!fs::exists(out) && folder(save.parent_path()) == folder(s.out))
            s.save_in_new_out = save;
        else
            s.save = output_file("--save", save);
    }
    s.load = options.get("--load");
    s.profile = options.has("--profile");
    s.overlap = on_off_option(options, "--overlap");
    s.graph = on_off_option(options, "--graph");
    return s;
}

const Backend& backend_option(const std::string& name) {
    try {
        return backend(name);
    } catch (const InvalidArgument& e) {
        throw InvalidArgument("--backend: " + std::string(e.what()));
    } catch (const Unsupported& e) {
        throw Unsupported("--backend: " + std::string(e.what()));
    }
}

// --- the data ----------------------------------------------------------------------------------

struct Data {
    ImageSet train, test;
};

Data read_data(const Settings& s) {
    if (fs::exists(s.data) && !fs::is_directory(s.data))
        throw DataError("--data " + s.data.string() +
                        ": a file, not a directory; point --data at the directory of the four "
                        "IDX files");
    if (!fs::is_directory(s.data))
        throw DataError("--data " + s.data.string() +
                        ": no such directory; install Debian's dataset-fashion-mnist (see "
                        "README) or point --data at the four IDX files");
    const FashionMnistFiles files = fashion_mnist_files(s.data);
    Data data{read_image_set(files.train_images, files.train_labels, s.limit),
              read_image_set(files.test_images, files.test_labels, s.limit)};
    // Refused now, not after an epoch of training when the test set is first used.
    for (const auto& [set, what] : {std::pair{&data.train, "training"}, {&data.test, "test"}})
        if (set->rows != nn::model_image_side || set->cols != nn::model_image_side)
            throw DataError("--data " + s.data.string() + ": the " + what + " images are " +
                            std::to_string(set->rows) + "x" + std::to_string(set->cols) +
                            "; the models take " + std::to_string(nn::model_image_side) + "x" +
                            std::to_string(nn::model_image_side) + " images, as Fashion-MNIST's");
    return data;
}

std::int64_t steps_per_epoch(const ImageSet& train, std::int64_t batch) {
    return (train.count + batch - 1) / batch;  // the last batch may be smaller
}

// --- resuming ----------------------------------------------------------------------------------

// Loads `s.load` into the model and the optimizer, and settles the run's settings with it: the
// seed (of the shuffling) and the batch must be the checkpoint's for the curve to continue, and
// the training set must be as large, which the number of steps in its curve tells.
nn::TrainingState resume(Settings& s, const Options& options, const ImageSet& train,
                         nn::Sequential& model, nn::Optimizer& optimizer) {
    nn::TrainingState state = nn::load_checkpoint(s.load, s.model, model, optimizer);
    const std::string from = " (the checkpoint " + s.load.string() + " was trained with ";
    if (options.has("--seed") && state.seed != s.seed)
        throw InvalidArgument("--seed " + std::to_string(s.seed) + " differs from the run's" +
                              from + "--seed " + std::to_string(state.seed) +
                              "); leave --seed out to continue it");
    if (options.has("--batch") && state.batch != s.batch)
        throw InvalidArgument("--batch " + std::to_string(s.batch) + " differs from the run's" +
                              from + "--batch " + std::to_string(state.batch) +
                              "); leave --batch out to continue it");
    s.seed = state.seed;
    s.batch = state.batch;
    const std::int64_t expected = state.epochs_done * steps_per_epoch(train, s.batch);
    if (std::int64_t(state.loss_curve.size()) != expected)
        throw InvalidArgument("--limit: the checkpoint " + s.load.string() + " holds " +
                              std::to_string(state.loss_curve.size()) + " steps over " +
                              std::to_string(state.epochs_done) + " epochs, but " +
                              std::to_string(state.epochs_done) + " epochs of these " +
                              std::to_string(train.count) + " training images at batch " +
                              std::to_string(s.batch) + " are " + std::to_string(expected) +
                              " steps: it was trained on another training set; resume on the "
                              "run's (its --data and --limit)");
    if (state.epochs_done >= s.epochs)
        throw InvalidArgument("--epochs " + std::to_string(s.epochs) + ": the checkpoint " +
                              s.load.string() + " already holds " +
                              std::to_string(state.epochs_done) +
                              " epochs, and --epochs counts them; ask for more");
    return state;
}

// --- output ------------------------------------------------------------------------------------

// The progress bar of one epoch on stderr, redrawn in place at most ten times a second:
//   epoch 2/15 [=========>          ]  28160/60000   5123 images/s  loss 0.4312  ETA 6 s
// "loss" is the mean over the epoch's images so far. Drawn only on a terminal: in a log file the
// redraws would be noise.
class ProgressBar {
public:
    ProgressBar(int epoch, int epochs)
        : epoch_(epoch), epochs_(epochs), shown_(isatty(STDERR_FILENO) != 0) {}

    void update(std::int64_t done, std::int64_t total, float loss) {
        loss_sum_ += double(loss) * double(done - done_);  // the step's mean, times its images
        done_ = done;
        const double now = clock_.seconds();
        if (!shown_ || (done < total && now - drawn_at_ < 0.1)) return;
        drawn_at_ = now;
        constexpr int width = 20;
        const int filled = int(width * done / total);
        std::string bar(std::size_t(width), ' ');
        std::fill(bar.begin(), bar.begin() + filled, '=');
        if (filled < width) bar[std::size_t(filled)] = '>';
        const double rate = done / std::max(now, 1e-9);
        std::fprintf(stderr, "\repoch %d/%d [%s] %6lld/%lld %7.0f images/s  loss %.4f  ETA %.0f s ",
                     epoch_, epochs_, bar.c_str(), (long long)done, (long long)total, rate,
                     loss_sum_ / double(done), double(total - done) / rate);
        drawn_ = true;
    }
    // Wipes the bar, so the epoch's line is printed where it was.
    void clear() const {
        if (drawn_) std::fprintf(stderr, "\r%110s\r", "");
    }

private:
    int epoch_, epochs_;
    bool shown_;
    bool drawn_ = false;
    Timer clock_;
    double drawn_at_ = -1;
    std::int64_t done_ = 0;
    double loss_sum_ = 0;
};

// OUT/<model>_<backend>.csv: "step,epoch,loss", one line per step of the whole curve. The losses
// are printed with 9 significant digits, enough to read back the exact float.
void write_curve(const fs::path& csv, const std::vector<float>& curve, std::int64_t steps) {
    TemporaryFile file(csv.parent_path(), csv.filename().string(), ".csv");
    {
        std::ofstream out(file.path());
        out << "step,epoch,loss\n";
        char line[64];
        for (std::size_t i = 0; i < curve.size(); ++i) {
            std::snprintf(line, sizeof line, "%zu,%lld,%.9g\n", i + 1,
                          (long long)(std::int64_t(i) / steps + 1), double(curve[i]));
            out << line;
        }
        out.close();
        if (!out) throw DataError("cannot write " + file.path().string());
    }
    file.keep_as(csv);
}

// OUT/<model>_<backend>.png, drawn from the CSV by tools/plot_training.py.
void draw_curve(const fs::path& csv, const fs::path& png, const std::string& title) {
    TemporaryFile file(png.parent_path(), png.filename().string(), ".png");
    run_python_script("tools/plot_training.py",
                      {"--csv", csv.string(), "--out", file.path().string(), "--title", title});
    file.keep_as(png);
}

// Every layer's forward and backward milliseconds per batch, the mean over the timed steps.
void print_layer_times(const nn::Sequential& model, std::int64_t batch) {
    const auto per_batch = [](const nn::Sequential::LayerTime& t, double seconds) {
        return seconds / double(std::max<std::int64_t>(t.calls, 1));
    };
    double total = 0;
    for (const nn::Sequential::LayerTime& t : model.layer_times())
        total += per_batch(t, t.forward_seconds + t.backward_seconds);
    std::printf("\nper layer, ms per batch of %lld (mean over the training steps):\n",
                (long long)batch);
    std::printf("%-46s %10s %10s %8s\n", "layer", "forward", "backward", "share");
    for (const nn::Sequential::LayerTime& t : model.layer_times()) {
        const double forward = per_batch(t, t.forward_seconds);
        const double backward = per_batch(t, t.backward_seconds);
        std::printf("%-46s %10s %10s %7s%%\n", t.layer.c_str(),
                    measured_number("%.3f", forward * 1e3).c_str(),
                    measured_number("%.3f", backward * 1e3).c_str(),
                    measured_number("%.1f", 100 * (forward + backward) / total).c_str());
    }
    std::printf("%-46s %21s\n", "total", measured_number("%.3f", total * 1e3).c_str());
}

// The phases of a step, milliseconds per step, the mean over `steps`. With --graph, most steps
// replay their forward, loss, backward and update as one graph, timed as a phase of its own.
void print_phase_times(const nn::PhaseTimes& p, std::int64_t steps) {
    struct Phase {
        const char* name;
        double seconds;
    };
    std::vector<Phase> phases = {{"upload (the batch, host -> backend)", p.upload},
                                 {"forward", p.forward},
                                 {"loss (and the loss back to the host)", p.loss},
                                 {"backward", p.backward},
                                 {"update (the optimizer step)", p.update}};
    if (p.graph > 0) phases.push_back({"graph (the whole step replayed)", p.graph});
    double total = 0;
    for (const Phase& phase : phases) total += phase.seconds;
    std::printf("\nper step, ms (mean over %lld steps):\n", (long long)steps);
    std::printf("%-46s %10s %8s\n", "phase", "ms", "share");
    for (const Phase& phase : phases)
        std::printf("%-46s %10s %7s%%\n", phase.name,
                    measured_number("%.3f", phase.seconds / double(steps) * 1e3).c_str(),
                    measured_number("%.1f", 100 * phase.seconds / total).c_str());
    std::printf("%-46s %10s\n", "total",
                measured_number("%.3f", total / double(steps) * 1e3).c_str());
}

// The CPUs' cache-line round trip before and after the steps (common/machine.hpp), where the run
// may use two CPUs. On a virtual machine the host may move two CPUs that shared a cache onto
// different dies, or back, while a run trains; a profile taken across such a move has layers
// that took longer for it.
void print_round_trips(const RoundTrip& before, const RoundTrip& after) {
    if (before.first < 0) return;
    const auto time = [](const RoundTrip& trip) {
        return trip.nanoseconds < 0 ? "not measured (" + trip.why_not + ")"
                                    : measured_number("%.0f", trip.nanoseconds) + " ns";
    };
    std::printf(
        "\nCPU %d <-> CPU %d, a cache line's round trip: %s before the steps, %s after\n"
        "(tens of ns: the two cores share an L3 cache; hundreds: they do not, and a layer\n"
        "whose threads read what the other wrote takes longer; lesson 14)\n",
        before.first, before.second, time(before).c_str(), time(after).c_str());
}

void add(nn::PhaseTimes& sum, const nn::PhaseTimes& p) {
    sum.upload += p.upload;
    sum.forward += p.forward;
    sum.loss += p.loss;
    sum.backward += p.backward;
    sum.update += p.update;
    sum.graph += p.graph;
}

}  // namespace

int train_main(const Args& args) {
    const Options options(
        "train", args,
        {"--model", "--backend", "--epochs", "--batch", "--optimizer", "--lr", "--seed", "--limit",
         "--data", "--out", "--save", "--load", "--overlap", "--graph"},
        {"--help", "--profile"});
    if (options.has("--help")) {
        print_help();
        return 0;
    }
    Settings s = read_settings(options);
    const Backend& b = backend_option(s.backend);
    const Data data = read_data(s);
    // Every tensor of a step is the batch's size: a batch past the training set would only take
    // memory (a batch of 7,500,000 took 23 GB to train 64 images).
    if (s.batch > data.train.count)
        throw InvalidArgument("--batch " + std::to_string(s.batch) + " is more than the " +
                              std::to_string(data.train.count) + " training images" +
                              (s.limit > 0 ? " (--limit " + std::to_string(s.limit) + ")" : ""));
    std::unique_ptr<nn::Sequential> model = nn::make_model(s.model, b, s.seed);
    nn::Optimizer optimizer(b, model->parameters(), s.optimizer);
    nn::TrainingState state;
    if (!s.load.empty()) {
        state = resume(s, options, data.train, *model, optimizer);
    } else {
        state.model = s.model;
        state.seed = s.seed;
        state.batch = s.batch;
    }
    nn::Trainer trainer(*model, optimizer,
                        {.batch = s.batch,
                         .seed = s.seed,
                         .time_phases = s.profile,
                         .overlap = s.overlap,
                         .graph = s.graph});

    // The output folder, made only now that every setting has been accepted, and the files it
    // will hold, refused before training if they cannot be written (a directory there).
    try {
        if (!fs::exists(s.out)) fs::create_directories(s.out);
    } catch (const fs::filesystem_error& e) {
        throw InvalidArgument("--out " + s.out.string() + ": cannot create the directory (" +
                              e.code().message() + ")");
    }
    if (!s.save_in_new_out.empty()) s.save = output_file("--save", s.save_in_new_out);
    const std::string name = s.model + "_" + s.backend;
    const fs::path csv = s.out / (name + ".csv"), png = s.out / (name + ".png");
    const fs::path csv_file = output_file("--out", csv), png_file = output_file("--out", png);
    if (!s.save.empty() && (fs::weakly_canonical(s.save) == fs::weakly_canonical(csv_file) ||
                            fs::weakly_canonical(s.save) == fs::weakly_canonical(png_file)))
        throw InvalidArgument("--save " + s.save.string() +
                              " is a file this run writes its loss curve to (--out " +
                              s.out.string() + "); choose another");

    // One forward pass of a batch, so that the summary can show each layer's output shape.
    const std::int64_t pixels = data.train.rows * data.train.cols;
    const std::int64_t first = std::min(s.batch, data.train.count);
    model->forward(b.upload(Shape{first, 1, data.train.rows, data.train.cols},
                            std::span(data.train.images).first(std::size_t(first * pixels))));
    std::printf("%s on %s (%s)\n%s", s.model.c_str(), b.name().c_str(), b.device().c_str(),
                model->summary().c_str());
    std::printf("optimizer %s, batch %lld, seed %llu, overlap %s, graph %s\n",
                s.optimizer.str().c_str(), (long long)s.batch, (unsigned long long)s.seed,
                s.overlap ? "on" : "off", s.graph ? "on" : "off");
    std::printf("data: %lld training and %lld test images from %s\n", (long long)data.train.count,
                (long long)data.test.count, s.data.c_str());
    if (!s.load.empty())
        std::printf("resumed from %s after epoch %d\n", s.load.c_str(), state.epochs_done);
    if (b.device_kind() == DeviceKind::Simulator)
        std::printf(
            "%s runs on the CUDA simulator, on the CPU: its times are not GPU times, and a full\n"
            "epoch takes hours there (try --limit 512)\n",
            b.name().c_str());

    const std::int64_t steps = steps_per_epoch(data.train, s.batch);
    const bool round_trips = s.profile && b.device_kind() == DeviceKind::Cpu;
    const RoundTrip before = round_trips ? cache_line_round_trip() : RoundTrip{};
    nn::PhaseTimes phases;
    std::int64_t steps_timed = 0;
    std::printf("\n%-7s %11s %14s %9s %10s\n", "epoch", "train loss", "test accuracy", "seconds",
                "images/s");
    for (int epoch = state.epochs_done + 1; epoch <= s.epochs; ++epoch) {
        ProgressBar bar(epoch, s.epochs);
        // Sequential's timing covers the training steps only, not the evaluation's forward passes.
        model->set_timing(s.profile);
        const nn::EpochResult result = trainer.train_epoch(
            data.train, epoch, [&bar](std::int64_t done, std::int64_t total, float loss) {
                bar.update(done, total, loss);
            });
        model->set_timing(false);
        bar.clear();
        const double accuracy = trainer.accuracy(data.test);
        // The loss and accuracy are the same on every run of one machine kind; their last digits
        // may differ on another (lesson 13: the backends' rounding). The times differ every run.
        std::printf("%3d/%-3d %11s %13s%% %9s %10s\n", epoch, s.epochs,
                    machine_number("%.4f", result.mean_loss).c_str(),
                    machine_number("%.2f", 100 * accuracy).c_str(),
                    measured_number("%.2f", result.seconds).c_str(),
                    measured_number("%.0f", result.images_per_second).c_str());
        std::fflush(stdout);

        state.loss_curve.insert(state.loss_curve.end(), result.losses.begin(), result.losses.end());
        state.epochs_done = epoch;
        add(phases, result.phases);
        steps_timed += std::int64_t(result.losses.size());
        write_curve(csv_file, state.loss_curve, steps);
        // A NaN or infinite loss spreads to every weight within a step or two, and nothing after
        // it is training: stop, with the curve written to show where, and keep the last
        // checkpoint's good weights rather than overwrite them.
        const auto diverged = std::find_if(result.losses.begin(), result.losses.end(),
                                           [](float loss) { return !std::isfinite(loss); });
        if (diverged != result.losses.end()) {
            char lr[32];
            std::snprintf(lr, sizeof lr, "%g", double(s.optimizer.lr));
            throw Error(
                "the loss became " + std::string(std::isnan(*diverged) ? "NaN" : "infinite") +
                " at step " + std::to_string(diverged - result.losses.begin() + 1) + " of epoch " +
                std::to_string(epoch) + ": the training diverged (" + csv_file.string() +
                " shows where); a smaller --lr than " + lr + " may help" +
                (s.save.empty() ? "" : "; " + s.save.string() + " was not written for this epoch"));
        }
        if (!s.save.empty()) nn::save_checkpoint(s.save, state, *model, optimizer);
    }
    if (s.profile) {
        std::printf(
            "\nwhere the time of a training step goes (--profile: the backend is\n"
            "synchronized after every layer and phase, so these add up to a little more\n"
            "than an unprofiled step)\n");
        if (b.device_kind() == DeviceKind::Simulator)
            std::printf("(simulator times: the CPU running the kernels, not a GPU)\n");
        print_layer_times(*model, s.batch);
        if (s.graph)
            std::printf(
                "(--graph: only the steps that ran layer by layer are in this table; the others\n"
                "replayed a graph, timed below as one phase)\n");
        print_phase_times(phases, steps_timed);
        if (round_trips) print_round_trips(before, cache_line_round_trip());
    }
    if (!s.save.empty()) std::printf("\ncheckpoint: %s\n", s.save.c_str());
    // The chart last: the training, its CSV and its checkpoint are complete whether or not a
    // python with matplotlib is there to draw it, so a missing one is a warning, not a failure.
    try {
        draw_curve(csv_file, png_file,
                   s.model + " on " + s.backend + ", batch " + std::to_string(s.batch) + ", " +
                       s.optimizer.str());
        std::printf("\nloss curve: %s and %s\n", csv.c_str(), png.c_str());
    } catch (const DataError& error) {
        std::printf("\nloss curve: %s\n", csv.c_str());
        std::fprintf(stderr, "triptych train: warning: no chart drawn (%s)\n", error.what());
    }
    return 0;
}

}  // namespace triptych::tools
