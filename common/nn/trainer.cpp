#include "common/nn/trainer.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/errors.hpp"
#include "common/random.hpp"
#include "common/timer.hpp"

namespace triptych::nn {

namespace {
// InvalidArgument naming `op` unless `data` holds count images of rows x cols and count labels.
void require_consistent(const std::string& op, const ImageSet& data) {
    if (data.count < 1 || data.rows < 1 || data.cols < 1 ||
        std::int64_t(data.images.size()) != data.count * data.rows * data.cols ||
        std::int64_t(data.labels.size()) != data.count)
        throw InvalidArgument(op + ": the image set says " + std::to_string(data.count) +
                              " images of " + std::to_string(data.rows) + "x" +
                              std::to_string(data.cols) + " but holds " +
                              std::to_string(data.images.size()) + " pixel values and " +
                              std::to_string(data.labels.size()) + " labels");
}
}  // namespace

Trainer::Trainer(Sequential& model, Optimizer& optimizer, const TrainOptions& options)
    : model_(&model), optimizer_(&optimizer), options_(options) {
    if (options.batch < 1)
        throw InvalidArgument("trainer: batch must be >= 1, got " + std::to_string(options.batch));
}

float Trainer::train_step(std::span<const float> images, std::span<const float> labels,
                          std::int64_t count, std::int64_t rows, std::int64_t cols) {
    if (count < 1 || rows < 1 || cols < 1 || std::int64_t(images.size()) != count * rows * cols ||
        std::int64_t(labels.size()) != count)
        throw InvalidArgument(
            "train_step: " + std::to_string(count) + " images of " + std::to_string(rows) + "x" +
            std::to_string(cols) + " need " + std::to_string(count * rows * cols) +
            " pixel values and " + std::to_string(count) + " labels, got " +
            std::to_string(images.size()) + " and " + std::to_string(labels.size()));
    const Backend& backend = model_->backend();
    Timer phase;
    // The end of a phase: with time_phases, wait until the backend has finished it and add its
    // seconds; then start timing the next.
    const auto end_phase = [&](double& seconds) {
        if (options_.time_phases) {
            backend.synchronize();
            seconds += phase.seconds();
        }
        phase = Timer();
    };

    // Reallocated only when the batch size changes (an epoch's last, smaller batch).
    const Shape shape{count, 1, rows, cols};
    if (images_.shape() != shape) {
        images_ = backend.allocate(shape);
        labels_ = backend.allocate(Shape{count});
    }
    backend.upload(images_, images);
    backend.upload(labels_, labels);
    end_phase(phases_.upload);

    const Tensor& logits = model_->forward(images_);
    end_phase(phases_.forward);

    // The loss is the one value that comes back to the host: on a GPU, the step's only wait.
    if (dlogits_.shape() != logits.shape()) dlogits_ = backend.allocate(logits.shape());
    const float loss = backend.softmax_cross_entropy(logits, labels_, dlogits_);
    end_phase(phases_.loss);

    model_->backward(dlogits_);
    end_phase(phases_.backward);

    optimizer_->step();
    end_phase(phases_.update);
    return loss;
}

EpochResult Trainer::train_epoch(const ImageSet& data, int epoch,
                                 const ProgressCallback& progress) {
    require_consistent("train_epoch", data);
    const std::int64_t pixels = data.rows * data.cols;
    const std::vector<std::int64_t> order = epoch_order(data.count, options_.seed, epoch);
    // One batch gathered from the shuffled order; the last batch uses a prefix of them.
    std::vector<float> batch_images(static_cast<std::size_t>(options_.batch * pixels));
    std::vector<float> batch_labels(static_cast<std::size_t>(options_.batch));

    EpochResult result;
    result.epoch = epoch;
    result.losses.reserve(
        static_cast<std::size_t>((data.count + options_.batch - 1) / options_.batch));
    phases_ = {};
    double loss_sum = 0;  // of loss * images in the batch: the epoch's mean over images
    const Timer timer;
    for (std::int64_t start = 0; start < data.count; start += options_.batch) {
        const std::int64_t count = std::min(options_.batch, data.count - start);
        for (std::int64_t i = 0; i < count; ++i) {
            const std::int64_t image = order[static_cast<std::size_t>(start + i)];
            std::copy_n(data.images.begin() + image * pixels, pixels,
                        batch_images.begin() + i * pixels);
            batch_labels[static_cast<std::size_t>(i)] =
                data.labels[static_cast<std::size_t>(image)];
        }
        const float loss = train_step(std::span(batch_images).first(std::size_t(count * pixels)),
                                      std::span(batch_labels).first(std::size_t(count)), count,
                                      data.rows, data.cols);
        result.losses.push_back(loss);
        loss_sum += double(loss) * double(count);
        if (progress) progress(start + count, data.count, loss);
    }
    result.seconds = timer.seconds();
    result.mean_loss = loss_sum / double(data.count);
    result.images_per_second = double(data.count) / result.seconds;
    result.phases = phases_;
    return result;
}

double Trainer::accuracy(const ImageSet& data, std::int64_t batch) {
    require_consistent("accuracy", data);
    if (batch < 1)
        throw InvalidArgument("accuracy: batch must be >= 1, got " + std::to_string(batch));
    const Backend& backend = model_->backend();
    const std::int64_t pixels = data.rows * data.cols;
    std::int64_t correct = 0;
    Tensor images;
    for (std::int64_t start = 0; start < data.count; start += batch) {
        const std::int64_t count = std::min(batch, data.count - start);
        const Shape shape{count, 1, data.rows, data.cols};
        if (images.shape() != shape) images = backend.allocate(shape);
        backend.upload(images,
                       std::span(data.images)
                           .subspan(std::size_t(start * pixels), std::size_t(count * pixels)));
        // logits is (count, classes); the prediction is each row's largest, the first on a tie.
        const Tensor& logits = model_->forward(images);
        const std::vector<float> values = backend.download(logits);
        const std::int64_t classes = logits.shape().columns();
        for (std::int64_t i = 0; i < count; ++i) {
            const auto row = values.begin() + i * classes;
            const std::int64_t predicted = std::max_element(row, row + classes) - row;
            if (float(predicted) == data.labels[std::size_t(start + i)]) ++correct;
        }
    }
    return double(correct) / double(data.count);
}

std::vector<std::int64_t> epoch_order(std::int64_t count, std::uint64_t seed, int epoch) {
    if (count < 0)
        throw InvalidArgument("epoch_order: count must be >= 0, got " + std::to_string(count));
    std::vector<std::int64_t> order(static_cast<std::size_t>(count));
    std::iota(order.begin(), order.end(), std::int64_t(0));
    // Fisher-Yates: position i swaps with a position drawn uniformly from [0, i]. The draw is
    // next() % (i + 1), whose bias (at most (i + 1) / 2^64) is far below anything measurable, and
    // unlike std::uniform_int_distribution it gives the same order with every standard library.
    Rng rng(derive_seed(seed, static_cast<std::uint64_t>(epoch)));
    for (std::int64_t i = count - 1; i > 0; --i) {
        const auto j = static_cast<std::int64_t>(rng.next() % std::uint64_t(i + 1));
        std::swap(order[std::size_t(i)], order[std::size_t(j)]);
    }
    return order;
}

}  // namespace triptych::nn
