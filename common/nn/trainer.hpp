// Trainer: mini-batch training and evaluation of a Sequential classifier (lessons 13 and 14).
//
// One step: the batch's images and labels go up to the backend (upload), forward gives the logits,
// softmax_cross_entropy gives the mean loss (the one number that comes back down) and dlogits,
// backward fills every parameter's gradient, the optimizer updates the parameters. On a GPU backend
// everything but the batch and the loss stays in device memory.
//
// Each epoch visits the images in an order shuffled from (seed, epoch) alone, so that a run
// resumed from a checkpoint after epoch e sees exactly the batches an unbroken run would have.
// The last batch of an epoch may be smaller than the others.
//
// On a GPU backend two options take the host out of the device's way (lesson 16), and neither
// changes a bit of the losses: the same kernels run on the same values in the same order.
//   overlap: the next batch goes up on a copy stream, from pinned memory, while this one computes;
//     two sets of input buffers are taken in turn (double buffering), and events order each
//     set's upload before its step and its step before its next upload.
//   graph:   a step's forward, loss, backward and update are captured once as a CUDA graph and
//     replayed: one launch instead of one per kernel. A graph replays the arguments it was
//     captured with, and Adam's bias corrections change every step, so the captured update reads
//     them from device memory (Optimizer::issue_update), where the host puts each step's with a
//     copy of 8 bytes on the compute stream before the launch. A graph is captured after one step
//     of its batch size has run as usual
//     (which allocated every buffer the step needs, since a capture may not allocate), and
//     captured again after anything that may have changed the model's buffers: a new epoch, a
//     batch of another size.
// With either, the loss of a step is read after its update is issued, so the host waits once per
// step, and a bad label is reported at the end of its step rather than before the backward pass.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/idx.hpp"
#include "common/nn/optimizer.hpp"
#include "common/nn/sequential.hpp"

namespace triptych::nn {

struct TrainOptions {
    std::int64_t batch = 64;
    std::uint64_t seed = 1;  // of the shuffling
    // Synchronize after each phase of a step and add its time to EpochResult::phases (costs some
    // speed on a GPU, where the phases would otherwise overlap with the host's work).
    bool time_phases = false;
    // GPU backends only (see the top of this file): upload the next batch while this one computes,
    // and replay each step's forward, loss, backward and update as a captured graph.
    bool overlap = false;
    bool graph = false;
};

// Seconds spent in each phase of the steps of an epoch (only with TrainOptions::time_phases).
struct PhaseTimes {
    double upload = 0;  // host -> backend: the batch's images and labels (with overlap, what of
                        // it the step feels: the host gathering the batch and issuing its
                        // copies, and the wait for any part of the copy not yet done)
    double forward = 0;
    double loss = 0;  // softmax_cross_entropy, its loss coming back to the host
    double backward = 0;
    double update = 0;  // the optimizer step
    double graph = 0;   // forward, loss, backward and update replayed as one graph
                        // (TrainOptions::graph), with the copy of the update's corrections
};

struct EpochResult {
    int epoch = 0;              // counting from 1
    std::vector<float> losses;  // every step's mean batch loss, in order
    double mean_loss = 0;       // over the epoch's images
    double seconds = 0;         // wall time of the training steps
    double images_per_second = 0;
    PhaseTimes phases;
};

// Called after every step: images done so far this epoch, the epoch's total, the step's loss.
using ProgressCallback = std::function<void(std::int64_t done, std::int64_t total, float loss)>;

class Trainer {
public:
    // `model` and `optimizer` must outlive the trainer and share one backend. overlap and graph
    // need a backend with streams (Backend::async()); InvalidArgument otherwise.
    Trainer(Sequential& model, Optimizer& optimizer, const TrainOptions& options);
    ~Trainer();

    // One pass over `data` (images of data.rows x data.cols, one channel) in epoch `epoch`'s order.
    EpochResult train_epoch(const ImageSet& data, int epoch, const ProgressCallback& progress = {});
    // One step on `count` images (count * rows * cols values) and their labels; returns the loss.
    // Always the plain step (a blocking upload, then the ops), whatever overlap and graph say.
    float train_step(std::span<const float> images, std::span<const float> labels,
                     std::int64_t count, std::int64_t rows, std::int64_t cols);
    // The fraction of `data` whose largest logit is at its label, in batches of `batch`.
    double accuracy(const ImageSet& data, std::int64_t batch = 1000);

private:
    struct Pipeline;  // the streams, events and buffers of overlap and graph (trainer.cpp)
    struct Slot;
    EpochResult train_epoch_pipelined(const ImageSet& data, int epoch,
                                      const ProgressCallback& progress);
    void stage(Slot& slot, const ImageSet& data, const std::vector<std::int64_t>& order,
               std::int64_t start, std::int64_t count);
    void issue_step(Slot& slot, std::int64_t count);

    Sequential* model_;
    Optimizer* optimizer_;
    TrainOptions options_;
    Tensor images_, labels_, dlogits_;  // reused from step to step
    Tensor loss_result_;                // softmax_cross_entropy's loss, on the backend
    PhaseTimes phases_;
    std::unique_ptr<Pipeline> pipeline_;  // with overlap or graph
};

// The order in which epoch `epoch` (from 1) visits `count` items: a permutation of 0..count-1
// drawn from (seed, epoch) only.
std::vector<std::int64_t> epoch_order(std::int64_t count, std::uint64_t seed, int epoch);

}  // namespace triptych::nn
