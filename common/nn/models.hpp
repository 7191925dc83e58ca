// The built-in models of `triptych train`, for batches of 28x28 grey images (N, 1, 28, 28) and 10
// classes (Fashion-MNIST); the same models as bench/pytorch_peer.py builds in PyTorch.
//
//   mlp    Flatten, Dense 784->256 ReLU, Dense 256->128 ReLU, Dense 128->10
//          (235,146 weights)
//   lenet  Conv2d 1->6 5x5 pad 2, ReLU, MaxPool 2x2, Conv2d 6->16 5x5, ReLU, MaxPool 2x2,
//          Flatten, Dense 400->120 ReLU, Dense 120->84 ReLU, Dense 84->10 (61,706 weights)
//
// Both end in raw logits: the loss (softmax_cross_entropy) applies the softmax. Every layer's
// weights are drawn from `seed` (layer i from a seed derived from it and i), so one seed gives the
// same initial model on every backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/nn/sequential.hpp"

namespace triptych::nn {

// The side of the square grey images both models take (Fashion-MNIST's).
constexpr std::int64_t model_image_side = 28;

// "mlp" or "lenet" on `backend`; InvalidArgument listing the names otherwise.
std::unique_ptr<Sequential> make_model(const std::string& name, const Backend& backend,
                                       std::uint64_t seed);
std::vector<std::string> model_names();

}  // namespace triptych::nn
