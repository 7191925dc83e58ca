// Checkpoints (common/nn/checkpoint.hpp): a save and a load give back every parameter and
// optimizer state bit for bit, a run resumed from a checkpoint continues the same loss curve, and
// every damaged or mismatched file is a DataError naming the file and the fault, with the model
// left as it was.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "common/nn/checkpoint.hpp"
#include "common/nn/dense.hpp"
#include "common/nn/flatten.hpp"
#include "common/nn/models.hpp"
#include "common/nn/trainer.hpp"
#include "common/registry.hpp"
#include "tests/image_sets.hpp"
#include "tests/seed.hpp"
#include "tests/variants.hpp"

using namespace triptych;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const OptimizerConfig adam{.kind = OptimizerKind::adam, .lr = 1e-3f};

// A fresh directory for one test's files, removed with everything in it at the end.
struct TemporaryDirectory {
    fs::path path;
    explicit TemporaryDirectory(const std::string& name)
        : path(fs::temp_directory_path() / ("triptych-" + name + "-" + std::to_string(::getpid()) +
                                            "-" + std::to_string(testing::seed()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TemporaryDirectory() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
    }
};

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A model, its optimizer and a trainer, on one backend.
struct Run {
    std::unique_ptr<nn::Sequential> model;
    nn::Optimizer optimizer;
    nn::Trainer trainer;

    Run(const Backend& b, const std::string& name, std::uint64_t seed,
        const OptimizerConfig& config = adam, std::int64_t batch = 16)
        : model(nn::make_model(name, b, seed)),
          optimizer(b, model->parameters(), config),
          trainer(*model, optimizer, {.batch = batch, .seed = testing::seed()}) {}

    // Every value a checkpoint holds: the parameters, then the optimizer's state.
    std::vector<std::vector<float>> tensors() {
        std::vector<std::vector<float>> values;
        for (const nn::NamedTensor& t : model->named_parameters())
            values.push_back(model->backend().download(*t.tensor));
        for (const nn::NamedTensor& t : optimizer.state())
            values.push_back(model->backend().download(*t.tensor));
        return values;
    }
};

// Equal bit for bit (a NaN equals the same NaN; 0 and -0 differ).
bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].size() != b[i].size() ||
            std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
            return false;
    return true;
}

}  // namespace

TEST_CASE(
    "A checkpoint saved and loaded into a fresh model and optimizer gives back every "
    "parameter, every optimizer state and the training state bit for bit, on every variant",
    "[checkpoint]") {
    const TemporaryDirectory dir("checkpoint-roundtrip");
    const ImageSet data = testing::pattern_image_set(8, testing::seed() + 10);
    testing::for_every_variant([&](const Backend& b) {
        // Two steps, so that the parameters have moved and Adam's state is not zero.
        Run trained(b, "lenet", testing::seed(), adam, 4);
        const nn::EpochResult epoch = trained.trainer.train_epoch(data, 1);
        const nn::TrainingState saved{.model = "lenet",
                                      .epochs_done = 1,
                                      .seed = testing::seed(),
                                      .batch = 4,
                                      .loss_curve = epoch.losses};
        const fs::path path = dir.path / (b.name() + ".ckpt");
        nn::save_checkpoint(path, saved, *trained.model, trained.optimizer);

        Run fresh(b, "lenet", testing::seed() + 1, adam, 4);  // other weights, zero state
        REQUIRE_FALSE(same_bits(fresh.tensors(), trained.tensors()));
        const nn::TrainingState loaded =
            nn::load_checkpoint(path, "lenet", *fresh.model, fresh.optimizer);
        INFO(b.name());
        CHECK(same_bits(fresh.tensors(), trained.tensors()));
        CHECK(fresh.optimizer.steps_taken() == 2);
        CHECK(loaded.model == "lenet");
        CHECK(loaded.epochs_done == 1);
        CHECK(loaded.seed == testing::seed());
        CHECK(loaded.batch == 4);
        CHECK(loaded.loss_curve == epoch.losses);
    });
    // The header says what the file holds, in words.
    const std::string bytes = read_bytes(dir.path / "cpu_naive.ckpt");
    CHECK_THAT(bytes, Contains("triptych-checkpoint 1\nmodel lenet\noptimizer " + adam.str() +
                               "\nsteps 2 epochs 1 seed " + std::to_string(testing::seed()) +
                               " batch 4\ncurve 2\ntensors 30\n0.conv2d.W 6 1 5 5\n"));
    CHECK_THAT(bytes, Contains("\n9.dense.b.adam_v 10\ndata\n"));
}

TEST_CASE(
    "Training 2 epochs straight and 1 epoch, save, load into fresh objects, 1 epoch give the "
    "same loss curve bit for bit on the CPU variants",
    "[checkpoint]") {
    const TemporaryDirectory dir("checkpoint-resume");
    const ImageSet data = testing::pattern_image_set(96, testing::seed() + 11);  // 6 steps of 16
    for (const std::string variant : {"cpu_naive", "cpu_eigen_omp"}) {
        const Backend& b = backend(variant);
        Run straight(b, "mlp", testing::seed());
        std::vector<float> straight_curve = straight.trainer.train_epoch(data, 1).losses;
        const std::vector<float> second = straight.trainer.train_epoch(data, 2).losses;
        straight_curve.insert(straight_curve.end(), second.begin(), second.end());

        const fs::path path = dir.path / (variant + ".ckpt");
        {
            Run first(b, "mlp", testing::seed());
            const std::vector<float> curve = first.trainer.train_epoch(data, 1).losses;
            nn::save_checkpoint(path,
                                {.model = "mlp",
                                 .epochs_done = 1,
                                 .seed = testing::seed(),
                                 .batch = 16,
                                 .loss_curve = curve},
                                *first.model, first.optimizer);
        }
        Run resumed(b, "mlp", testing::seed() + 1);
        const nn::TrainingState state =
            nn::load_checkpoint(path, "mlp", *resumed.model, resumed.optimizer);
        std::vector<float> resumed_curve = state.loss_curve;
        const std::vector<float> rest =
            resumed.trainer.train_epoch(data, state.epochs_done + 1).losses;
        resumed_curve.insert(resumed_curve.end(), rest.begin(), rest.end());
        INFO(variant << ", seed " << testing::seed());
        CHECK(resumed_curve == straight_curve);
        CHECK(same_bits(resumed.tensors(), straight.tensors()));
    }
}

TEST_CASE(
    "A missing, damaged or mismatched checkpoint is a DataError naming the file and the "
    "fault, and leaves the model and optimizer unchanged",
    "[checkpoint][errors]") {
    const TemporaryDirectory dir("checkpoint-faults");
    const Backend& b = backend("cpu_naive");
    const ImageSet data = testing::pattern_image_set(8, testing::seed() + 12);
    Run saved(b, "mlp", testing::seed(), adam, 4);
    saved.trainer.train_epoch(data, 1);
    const fs::path good = dir.path / "good.ckpt";
    const nn::TrainingState state{
        .model = "mlp", .epochs_done = 1, .seed = 1, .batch = 4, .loss_curve = {2.5f, 2.25f}};
    nn::save_checkpoint(good, state, *saved.model, saved.optimizer);
    const std::string bytes = read_bytes(good);

    // A checkpoint of an MLP with 9 classes instead of 10: the same tensors, one shape off.
    const fs::path nine_classes = dir.path / "nine-classes.ckpt";
    {
        nn::Sequential model(b);
        model.add<nn::Flatten>();
        model.add<nn::Dense>(784, 256, Activation::relu);
        model.add<nn::Dense>(256, 128, Activation::relu);
        model.add<nn::Dense>(128, 9);
        nn::Optimizer optimizer(b, model.parameters(), adam);
        optimizer.set_steps_taken(2);  // state's loss curve has 2 steps
        nn::save_checkpoint(nine_classes, state, model, optimizer);
    }
    // One written by a lenet.
    const fs::path lenet = dir.path / "lenet.ckpt";
    {
        Run other(b, "lenet", 1);
        nn::save_checkpoint(lenet, {.model = "mlp"}, *other.model, other.optimizer);
    }

    // Whole checkpoints, checksum and all, whose header holds what no run writes: a batch of 0
    // (a division by zero once), a negative epoch count, a step count that cannot go up by one a
    // step, a model name of binary bytes (shown escaped, not echoed raw).
    // `change` may then set values no run saves: a NaN weight, a negative mean of squares.
    const auto written = [&](
                             const std::string& name, nn::TrainingState odd, std::int64_t steps,
                             const std::function<void(Run&)>& change = [](Run&) {}) {
        const fs::path path = dir.path / name;
        Run other(b, "mlp", 1, adam, 4);
        other.optimizer.set_steps_taken(steps);
        change(other);
        nn::save_checkpoint(path, odd, *other.model, other.optimizer);
        return path;
    };
    // Sets element `index` of tensor `t` to `value`.
    const auto set_value = [&](const nn::NamedTensor& t, std::size_t index, float value) {
        std::vector<float> values = b.download(*t.tensor);
        values.at(index) = value;
        b.upload(*t.tensor, values);
    };
    const fs::path batch_0 =
        written("batch-0.ckpt", nn::TrainingState{.model = "mlp", .batch = 0}, 3);
    const fs::path epochs_negative =
        written("epochs.ckpt", nn::TrainingState{.model = "mlp", .epochs_done = -2, .batch = 4}, 3);
    const fs::path steps_huge = written("steps.ckpt", nn::TrainingState{.model = "mlp", .batch = 4},
                                        std::numeric_limits<std::int64_t>::max());
    const fs::path binary_name =
        written("binary.ckpt", nn::TrainingState{.model = "m\x01\xff", .batch = 4}, 0);
    const nn::TrainingState plain{.model = "mlp", .batch = 4};
    const fs::path nan_weight = written("nan-weight.ckpt", plain, 0, [&](Run& run) {
        set_value(run.model->named_parameters().at(2), 5, std::nanf(""));
    });
    const fs::path negative_mean_square = written("negative-v.ckpt", plain, 0, [&](Run& run) {
        set_value(run.optimizer.state().at(1), 0, -0.5f);  // 1.dense.W.adam_v
    });
    const fs::path infinite_loss =
        written("infinite-loss.ckpt",
                nn::TrainingState{.model = "mlp",
                                  .epochs_done = 1,
                                  .batch = 4,
                                  .loss_curve = {2.5f, std::numeric_limits<float>::infinity()}},
                2);

    // The good file with one header line changed, and its checksum made right again (zlib's
    // CRC-32 of everything before the last 4 bytes, little-endian): only the values are wrong.
    const auto edited = [&](const std::string& from, const std::string& to) {
        std::string changed = bytes;
        changed.replace(changed.find(from), from.size(), to);
        const std::uint32_t crc = static_cast<std::uint32_t>(
            crc32_z(0, reinterpret_cast<const Bytef*>(changed.data()), changed.size() - 4));
        for (int i = 0; i < 4; ++i)
            changed[changed.size() - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
        return changed;
    };

    struct Fault {
        std::string what;
        std::string file_bytes;  // written to the file; empty: use `path` as it is
        fs::path path;
        std::string expected;  // in the message
        std::string model = "mlp";
        OptimizerConfig optimizer = adam;
    };
    std::string version_2 = bytes, flipped = bytes, bad_count = bytes;
    version_2.replace(0, 21, "triptych-checkpoint 2");
    flipped[bytes.size() / 2] = char(flipped[bytes.size() / 2] ^ 0x10);
    bad_count.replace(bad_count.find("tensors 18"), 10, "tensors 1x");
    const Fault faults[] = {
        {"a missing file", "", dir.path / "missing.ckpt", "no such file"},
        {"not a checkpoint", "P5\n28 28\n255\n", {}, "not a triptych checkpoint"},
        {"another format version",
         version_2,
         {},
         "checkpoint format version 2, this build reads version 1"},
        {"a file cut inside the header", bytes.substr(0, 40), {}, "ends inside the header"},
        {"a file cut inside the data", bytes.substr(0, bytes.size() - 100), {}, "truncated"},
        {"a byte too many", bytes + "x", {}, "bytes to spare"},
        {"a flipped bit", flipped, {}, "checksum mismatch"},
        {"a malformed header", bad_count, {}, "header line 6: unexpected 'x'"},
        {"another model", "", good, "a checkpoint of model 'mlp', not 'lenet'", "lenet"},
        {"another optimizer", "", good, "saved with optimizer '" + adam.str() + "'", "mlp",
         OptimizerConfig{.kind = OptimizerKind::sgd, .momentum = 0.9f}},
        {"a tensor of another shape", "", nine_classes,
         "tensor 4 is '3.dense.W 9 128', expected '3.dense.W 10 128'"},
        {"other tensors", "", lenet, "holds 30 tensors, the model and optimizer have 18"},
        {"a batch of 0", "", batch_0, "a batch size of 0 (it is at least 1)"},
        {"a negative epoch count", "", epochs_negative, "a negative count of epochs done, -2"},
        {"a step count at the top of int64", "", steps_huge,
         "a step count of 9223372036854775807 (damaged?)"},
        {"a binary model name", "", binary_name, "a checkpoint of model 'm\\x01\\xff', not 'mlp'"},
        {"a negative seed",
         edited(" seed 1 ", " seed -1 "),
         {},
         "header line 4: the seed is negative"},
        {"a negative dimension",
         edited("\n1.dense.W 256 784\n", "\n1.dense.W -256 784\n"),
         {},
         "a dimension of tensor 0 ('1.dense.W') is negative, -256"},
        {"a loss curve longer than the file",
         edited("\ncurve 2\n", "\ncurve 99999999\n"),
         {},
         "the loss curve's length, 99999999 floats, cannot fit in a file of"},
        {"a NaN weight", "", nan_weight, "tensor '2.dense.W' holds nan at index 5"},
        {"a negative mean of squares", "", negative_mean_square,
         "tensor '1.dense.W.adam_v' holds -0.5 at index 0, below 0"},
        {"an infinite loss", "", infinite_loss, "the loss curve holds inf at index 1"},
        {"more steps taken than losses",
         edited("\nsteps 2 ", "\nsteps 3 "),
         {},
         "a loss curve of 2 steps, but 3 steps taken (damaged?)"},
        {"steps without an epoch",
         edited(" epochs 1 ", " epochs 0 "),
         {},
         "2 steps taken in 0 epochs done (damaged?)"},
    };
    for (const Fault& fault : faults) {
        fs::path path = fault.path;
        if (!fault.file_bytes.empty()) {
            path = dir.path / "damaged.ckpt";
            write_bytes(path, fault.file_bytes);
        }
        Run target(b, "mlp", testing::seed() + 1, fault.optimizer, 4);
        target.optimizer.set_steps_taken(5);
        const std::vector<std::vector<float>> before = target.tensors();
        INFO(fault.what);
        CHECK_THROWS_MATCHES(
            nn::load_checkpoint(path, fault.model, *target.model, target.optimizer), DataError,
            Catch::Matchers::Predicate<DataError>(
                [&](const DataError& e) {
                    const std::string message = e.what();
                    return message.starts_with(path.string() + ": ") &&
                           message.find(fault.expected) != std::string::npos;
                },
                "names " + path.string() + " and '" + fault.expected + "'"));
        CHECK(same_bits(target.tensors(), before));
        CHECK(target.optimizer.steps_taken() == 5);
    }
}

TEST_CASE(
    "save_checkpoint replaces the target only once complete and leaves no temporary file; "
    "a directory that does not exist is a DataError",
    "[checkpoint][errors]") {
    const TemporaryDirectory dir("checkpoint-save");
    const Backend& b = backend("cpu_naive");
    const fs::path path = dir.path / "run.ckpt";
    Run first(b, "mlp", 1), second(b, "mlp", 2);
    nn::save_checkpoint(path, {.model = "mlp", .seed = 1}, *first.model, first.optimizer);
    nn::save_checkpoint(path, {.model = "mlp", .seed = 2}, *second.model, second.optimizer);
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir.path))
        files.push_back(entry.path());
    CHECK(files == std::vector<fs::path>{path});

    Run loaded(b, "mlp", 3);
    CHECK(nn::load_checkpoint(path, "mlp", *loaded.model, loaded.optimizer).seed == 2);
    CHECK(same_bits(loaded.tensors(), second.tensors()));

    const fs::path nowhere = dir.path / "no-such-directory" / "run.ckpt";
    CHECK_THROWS_MATCHES(
        nn::save_checkpoint(nowhere, {.model = "mlp"}, *first.model, first.optimizer), DataError,
        Catch::Matchers::Predicate<DataError>(
            [&](const DataError& e) {
                return std::string(e.what()).starts_with(nowhere.string() + ".tmp: cannot create");
            },
            "names the temporary file and says it cannot be created"));
    CHECK_THROWS_AS(
        nn::save_checkpoint(path, {.model = "two words"}, *first.model, first.optimizer),
        InvalidArgument);
}
