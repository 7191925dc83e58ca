// Checkpoints: a training run's whole state in one file, so `triptych train --load` continues the
// same loss curve (lesson 13).
//
// The file: a text header, then the tensors' float32 values (little-endian, in header order), then
// a CRC-32 (zlib's) of everything before it:
//
//   triptych-checkpoint 1                      the format and its version
//   model lenet
//   optimizer adam lr=0.001 betas=0.9,0.999 eps=1e-08
//   steps 1876 epochs 2 seed 1 batch 64        optimizer steps taken, epochs done, run settings
//   curve 1876                                 how many per-step losses follow the tensors
//   tensors 20
//   0.conv2d.W 6 1 5 5                         each tensor: name and shape, parameters first,
//   ...                                        then the optimizer's state
//   data
//   <values of every tensor><the loss curve's floats><crc32, 4 bytes little-endian>
//
// save_checkpoint writes to a temporary file beside the target and renames it over the target only
// once complete, so an interrupted save never leaves a half-written checkpoint. load_checkpoint
// checks everything before it changes anything: a missing file, another format or version, another
// model or optimizer, a tensor of another name or shape, a short or long file, a checksum that
// does not match, or a value no run saves (a NaN or infinite weight, state or loss, a negative mean
// of squares, a negative count) is a DataError naming the file and what is wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/nn/optimizer.hpp"
#include "common/nn/sequential.hpp"

namespace triptych::nn {

// What a checkpoint records besides the tensors.
struct TrainingState {
    std::string model{};  // "mlp", "lenet"
    int epochs_done = 0;
    std::uint64_t seed = 0;           // of the run (initialisation and shuffling)
    std::int64_t batch = 64;          // images per step, at least 1 (TrainOptions' default)
    std::vector<float> loss_curve{};  // every step's loss so far
};

void save_checkpoint(const std::filesystem::path& path, const TrainingState& state,
                     Sequential& model, Optimizer& optimizer);

// Fills `model`'s parameters and `optimizer`'s state and step count from `path`, which must hold
// a checkpoint of a model named `model_name` with the same tensors and of an optimizer with the
// same configuration; returns the rest of the state.
TrainingState load_checkpoint(const std::filesystem::path& path, const std::string& model_name,
                              Sequential& model, Optimizer& optimizer);

}  // namespace triptych::nn
