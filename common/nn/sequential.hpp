// Sequential: layers applied one after the other, itself a Layer (lessons 13 and 14).
//
//   nn::Sequential model(backend);
//   model.add<nn::Flatten>();
//   model.add<nn::Dense>(784, 256, Activation::relu, seed);
//   const Tensor& logits = model.forward(images);   // each layer's output feeds the next
//   model.backward(dlogits);                         // the gradients flow back in reverse order
//
// The first layer's input gradient is never needed (nothing comes before it), nor is that of any
// layer with only parameter-free layers before it: Sequential tells the layers up to and including
// the first with parameters to skip it (Layer::set_input_gradient), and backward stops at that
// layer and returns its empty tensor. For LeNet that saves the first convolution's backward-data
// pass; for the MLP (Flatten first) the first Dense layer's dx GEMM.
//
// add() names each of the layer's parameters "<layer index>.<its name>" ("1.dense.W"), so that
// names are unique within the model: an optimizer's state and a checkpoint are named after them.
//
// Per-layer timing (lesson 14): with timing on, forward and backward synchronize the backend after
// every layer and add the layer's seconds to layer_times(). Off by default, since the
// synchronization itself costs time on a GPU.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/nn/layer.hpp"
#include "common/nn/optimizer.hpp"

namespace triptych::nn {

class Sequential final : public Layer {
public:
    explicit Sequential(const Backend& backend) : Layer(backend) {}

    // Appends a layer of type L, built on this model's backend with `args` after the backend;
    // returns it.
    template <typename L, typename... Args>
    L& add(Args&&... args) {
        auto layer = std::make_unique<L>(backend(), std::forward<Args>(args)...);
        L& added = *layer;
        append(std::move(layer));
        return added;
    }

    std::string name() const override { return "sequential"; }
    const Tensor& forward(const Tensor& x) override;
    const Tensor& backward(const Tensor& dy) override;
    // Every layer's parameters, first layer first.
    std::vector<Parameter*> parameters() override;
    // The parameters' values by name ("1.dense.W", see above), in the order of parameters():
    // what a checkpoint stores.
    std::vector<NamedTensor> named_parameters();

    const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
    // One line per layer (index, name, output shape of the last forward, parameter count), then
    // the total: printed by `triptych train`.
    std::string summary() const;

    struct LayerTime {
        std::string layer;  // "2 conv2d 6->16 5x5 ..."
        double forward_seconds = 0, backward_seconds = 0;
        std::int64_t calls = 0;  // forward passes timed
    };
    void set_timing(bool on);
    bool timing() const { return timing_; }
    const std::vector<LayerTime>& layer_times() const { return times_; }
    void reset_layer_times();

private:
    void append(std::unique_ptr<Layer> layer);

    std::vector<std::unique_ptr<Layer>> layers_;
    bool learning_before_ = false;      // whether a layer added so far has parameters
    std::vector<Shape> output_shapes_;  // of each layer in the last forward, for summary()
    bool timing_ = false;
    std::vector<LayerTime> times_;
};

}  // namespace triptych::nn
