#include "common/nn/trainer.hpp"

#include <algorithm>
#include <array>
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

// Copies images order[start], ..., order[start + count - 1] of `data` and their labels into
// `images` and `labels`, one after the other.
void gather(const ImageSet& data, const std::vector<std::int64_t>& order, std::int64_t start,
            std::int64_t count, float* images, float* labels) {
    const std::int64_t pixels = data.rows * data.cols;
    for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t image = order[static_cast<std::size_t>(start + i)];
        std::copy_n(data.images.begin() + image * pixels, pixels, images + i * pixels);
        labels[i] = data.labels[static_cast<std::size_t>(image)];
    }
}
}  // namespace

// One set of a batch's buffers for the pipelined steps: pinned host memory the batch is gathered
// into, its device copy, the events that order the set's reuse, and its captured step.
struct Trainer::Slot {
    std::shared_ptr<float> host_images, host_labels;  // pinned, a full batch each
    Tensor images, labels;                            // on the device, this batch's size
    std::unique_ptr<AsyncDevice::Event> uploaded;     // after its last upload
    std::unique_ptr<AsyncDevice::Event> consumed;     // after the last step that read it
    std::unique_ptr<AsyncDevice::Graph> graph;        // its forward, loss, backward and update
};

struct Trainer::Pipeline {
    const AsyncDevice* device = nullptr;
    std::unique_ptr<AsyncDevice::Stream> compute, copy;  // copy only with overlap
    std::vector<Slot> slots;                             // two with overlap, else one
    std::unique_ptr<AsyncDevice::Event> phase_end;       // for time_phases
    // With graph: the step's Adam bias corrections, which the captured update reads on the device,
    // and the pinned floats the host writes them into before each launch.
    Tensor corrections;
    std::shared_ptr<float> host_corrections;
    // The batch size the model's buffers have (that of the last step): a step of the same size
    // allocates nothing, so it may be captured.
    std::int64_t model_batch = 0;
    std::int64_t pixels = 0;  // an image's, in the slots' pinned buffers

    const AsyncDevice::Stream& copy_stream() const { return copy ? *copy : *compute; }
};

Trainer::Trainer(Sequential& model, Optimizer& optimizer, const TrainOptions& options)
    : model_(&model), optimizer_(&optimizer), options_(options) {
    if (options.batch < 1)
        throw InvalidArgument("trainer: batch must be >= 1, got " + std::to_string(options.batch));
    loss_result_ = model.backend().allocate(Shape{cross_entropy_result_floats});
    if (!options.overlap && !options.graph) return;
    const Backend& backend = model.backend();
    const AsyncDevice* device = backend.async();
    if (device == nullptr)
        throw InvalidArgument(std::string("trainer: ") +
                              (options.overlap ? "overlapped uploads need" : "graph replay needs") +
                              " a GPU backend, with streams; " + backend.name() +
                              " runs each op on the CPU before it returns");
    pipeline_ = std::make_unique<Pipeline>();
    Pipeline& p = *pipeline_;
    p.device = device;
    p.compute = device->stream("compute");
    if (options.overlap) p.copy = device->stream("copy");
    p.slots.resize(options.overlap ? 2 : 1);
    for (Slot& slot : p.slots) {
        slot.uploaded = device->event();
        slot.consumed = device->event();
    }
    p.phase_end = device->event();
    if (options.graph) {
        p.corrections = backend.allocate(Shape{2});
        p.host_corrections = device->pinned(2);
    }
}

Trainer::~Trainer() = default;

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

    // The loss is the one result that comes back to the host: on a GPU, the step waits for it, as
    // it waited at the uploads above (blocking copies, gpu/runtime/device.cpp).
    if (dlogits_.shape() != logits.shape()) dlogits_ = backend.allocate(logits.shape());
    backend.softmax_cross_entropy(logits, labels_, dlogits_, loss_result_);
    const float loss = backend.cross_entropy_loss(loss_result_, labels_, logits.shape().columns());
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
    if (pipeline_) return train_epoch_pipelined(data, epoch, progress);
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
        gather(data, order, start, count, batch_images.data(), batch_labels.data());
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

// ---- the pipelined steps (TrainOptions::overlap and graph) ----------------------------------

EpochResult Trainer::train_epoch_pipelined(const ImageSet& data, int epoch,
                                           const ProgressCallback& progress) {
    Pipeline& p = *pipeline_;
    const std::int64_t pixels = data.rows * data.cols;
    // The streams start after everything issued before the epoch (on the legacy default stream,
    // say, a forward pass of the model's), which nothing else orders them after.
    model_->backend().synchronize();
    // Anything since the last epoch (an evaluation's larger batch) may have reallocated the
    // buffers the graphs were captured with: capture again.
    for (Slot& slot : p.slots) slot.graph.reset();
    p.model_batch = 0;
    // The pinned buffers hold a full batch of this image set's images: allocated at the first
    // epoch, and again for an image set of another size (whose images the model may refuse, but
    // only after they are gathered).
    if (p.pixels != pixels) {
        for (Slot& slot : p.slots) {
            if (slot.host_images) p.device->synchronize(*slot.uploaded);  // read by its upload
            slot.host_images = p.device->pinned(options_.batch * pixels);
            slot.host_labels = p.device->pinned(options_.batch);
        }
        p.pixels = pixels;
    }

    const std::vector<std::int64_t> order = epoch_order(data.count, options_.seed, epoch);
    const std::int64_t steps = (data.count + options_.batch - 1) / options_.batch;
    const auto batch_size = [&](std::int64_t step) {
        return std::min(options_.batch, data.count - step * options_.batch);
    };
    EpochResult result;
    result.epoch = epoch;
    result.losses.reserve(static_cast<std::size_t>(steps));
    phases_ = {};
    double loss_sum = 0;
    const Timer timer;
    const auto slot_of = [&](std::int64_t step) -> Slot& {
        return p.slots[std::size_t(step) % p.slots.size()];
    };
    stage(slot_of(0), data, order, 0, batch_size(0));
    for (std::int64_t step = 0; step < steps; ++step) {
        const std::int64_t count = batch_size(step);
        // The step is issued first, so that the next batch is gathered and sent while it runs;
        // then the host waits for the step's loss, its one wait. Timed phases wait for the device
        // after each phase, so the step would be over before the next batch's copy began: there
        // the batch is sent first, for its copy to run beside the step as it does untimed.
        const bool stage_first = options_.time_phases && p.copy;
        const auto stage_next = [&] {
            if (step + 1 < steps)
                stage(slot_of(step + 1), data, order, (step + 1) * options_.batch,
                      batch_size(step + 1));
        };
        if (stage_first) stage_next();
        issue_step(slot_of(step), count);
        if (!stage_first) stage_next();
        const Timer wait;
        float loss = 0;
        p.device->run_on(*p.compute, [&] {
            loss = model_->backend().cross_entropy_loss(loss_result_, slot_of(step).labels,
                                                        dlogits_.shape().columns());
        });
        if (options_.time_phases) phases_.loss += wait.seconds();
        result.losses.push_back(loss);
        loss_sum += double(loss) * double(count);
        if (progress) progress(step * options_.batch + count, data.count, loss);
    }
    result.seconds = timer.seconds();
    result.mean_loss = loss_sum / double(data.count);
    result.images_per_second = double(data.count) / result.seconds;
    result.phases = phases_;
    return result;
}

// Gathers a batch into the slot's pinned buffers and sends it up on the copy stream, once the
// slot's previous upload has read them and its previous step has finished with its device copy.
void Trainer::stage(Slot& slot, const ImageSet& data, const std::vector<std::int64_t>& order,
                    std::int64_t start, std::int64_t count) {
    Pipeline& p = *pipeline_;
    const Backend& backend = model_->backend();
    const Timer timer;
    p.device->synchronize(*slot.uploaded);
    gather(data, order, start, count, slot.host_images.get(), slot.host_labels.get());
    const Shape shape{count, 1, data.rows, data.cols};
    if (slot.images.shape() != shape) {
        // The step that last read the old buffers must be done before they are freed. (cudaFree
        // happens to wait for the whole device; a stream-ordered cudaFreeAsync would not.)
        if (slot.images.data() != nullptr) p.device->synchronize(*slot.consumed);
        slot.images = backend.allocate(shape);
        slot.labels = backend.allocate(Shape{count});
    }
    const AsyncDevice::Stream& copy = p.copy_stream();
    p.device->wait(copy, *slot.consumed);
    p.device->upload(slot.images, slot.host_images.get(), copy);
    p.device->upload(slot.labels, slot.host_labels.get(), copy);
    p.device->record(*slot.uploaded, copy);
    if (options_.time_phases) {
        // Without overlap the copy is part of the step; with it, the host's share here, and in
        // issue_step the wait for whatever of the copy the step before did not hide.
        if (!p.copy) p.device->synchronize(*slot.uploaded);
        phases_.upload += timer.seconds();
    }
}

// Issues a step on the compute stream, after the slot's upload: its forward, loss, backward and
// update, as a graph where one is captured (or captured now), after the copy of the update's bias
// corrections. Nothing waits, unless time_phases asks.
void Trainer::issue_step(Slot& slot, std::int64_t count) {
    Pipeline& p = *pipeline_;
    const Backend& backend = model_->backend();
    const AsyncDevice& device = *p.device;
    Timer phase;
    const auto end_phase = [&](double& seconds) {
        if (!options_.time_phases) return;
        device.record(*p.phase_end, *p.compute);
        device.synchronize(*p.phase_end);
        seconds += phase.seconds();
        phase = Timer();
    };

    if (count != p.model_batch)
        for (Slot& s : p.slots) s.graph.reset();  // captured with buffers of another size
    if (options_.graph && !slot.graph && count == p.model_batch) {
        // Sequential's per-layer timing waits for the device, which a capture refuses.
        const bool timing = model_->timing();
        model_->set_timing(false);
        try {
            slot.graph = device.capture(*p.compute, [&] {
                backend.softmax_cross_entropy(model_->forward(slot.images), slot.labels, dlogits_,
                                              loss_result_);
                model_->backward(dlogits_);
                optimizer_->issue_update(p.corrections);
            });
        } catch (...) {
            model_->set_timing(timing);
            throw;
        }
        model_->set_timing(timing);
    }
    device.wait(*p.compute, *slot.uploaded);
    if (options_.time_phases && p.copy) {
        // The part of the batch's copy that the step before did not hide: the step waits for it.
        const Timer wait;
        device.synchronize(*slot.uploaded);
        phases_.upload += wait.seconds();
    }
    device.run_on(*p.compute, [&] {
        phase = Timer();
        if (slot.graph) {
            // The host last wrote these floats a step ago, and has waited for that step's loss
            // since, which came after their copy.
            const std::array<float, 2> corrections = optimizer_->next_step();
            std::copy(corrections.begin(), corrections.end(), p.host_corrections.get());
            device.upload(p.corrections, p.host_corrections.get(), *p.compute);
            device.launch(*slot.graph, *p.compute);
            end_phase(phases_.graph);
        } else {
            const Tensor& logits = model_->forward(slot.images);
            end_phase(phases_.forward);
            if (dlogits_.shape() != logits.shape()) dlogits_ = backend.allocate(logits.shape());
            backend.softmax_cross_entropy(logits, slot.labels, dlogits_, loss_result_);
            end_phase(phases_.loss);
            model_->backward(dlogits_);
            end_phase(phases_.backward);
            optimizer_->step();
            end_phase(phases_.update);
        }
    });
    device.record(*slot.consumed, *p.compute);
    p.model_batch = count;
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
