#include "common/nn/models.hpp"

#include "common/errors.hpp"
#include "common/nn/conv.hpp"
#include "common/nn/dense.hpp"
#include "common/nn/flatten.hpp"
#include "common/nn/pool.hpp"

namespace triptych::nn {

namespace {
// The seed of the next layer added to `model`: derived from the model's seed and the layer's index.
std::uint64_t next_layer_seed(const Sequential& model, std::uint64_t seed) {
    return derive_seed(seed, model.layers().size());
}

// Flatten, Dense 784->256 ReLU, Dense 256->128 ReLU, Dense 128->10. The ReLUs are fused into the
// dense layers' forward pass.
void add_mlp(Sequential& m, std::uint64_t seed) {
    m.add<Flatten>();
    m.add<Dense>(784, 256, Activation::relu, next_layer_seed(m, seed));
    m.add<Dense>(256, 128, Activation::relu, next_layer_seed(m, seed));
    m.add<Dense>(128, 10, Activation::none, next_layer_seed(m, seed));
}

// (N, 1, 28, 28) -> conv 6@5x5 pad 2 -> (N, 6, 28, 28) -> pool -> (N, 6, 14, 14)
//                -> conv 16@5x5      -> (N, 16, 10, 10) -> pool -> (N, 16, 5, 5) = 400 features
//                -> Dense 400->120 ReLU -> Dense 120->84 ReLU -> Dense 84->10.
// Conv2d has no fused activation: a ReLU layer follows each convolution.
void add_lenet(Sequential& m, std::uint64_t seed) {
    m.add<Conv2d>(Conv2dOptions{.in_channels = 1,
                                .out_channels = 6,
                                .kernel_h = 5,
                                .kernel_w = 5,
                                .pad_h = 2,
                                .pad_w = 2},
                  next_layer_seed(m, seed));
    m.add<ActivationLayer>(Activation::relu);
    m.add<MaxPool2d>();
    m.add<Conv2d>(Conv2dOptions{.in_channels = 6, .out_channels = 16, .kernel_h = 5, .kernel_w = 5},
                  next_layer_seed(m, seed));
    m.add<ActivationLayer>(Activation::relu);
    m.add<MaxPool2d>();
    m.add<Flatten>();
    m.add<Dense>(400, 120, Activation::relu, next_layer_seed(m, seed));
    m.add<Dense>(120, 84, Activation::relu, next_layer_seed(m, seed));
    m.add<Dense>(84, 10, Activation::none, next_layer_seed(m, seed));
}

struct ModelRecipe {
    const char* name;
    void (*add_layers)(Sequential&, std::uint64_t seed);
};
constexpr ModelRecipe recipes[] = {{"mlp", add_mlp}, {"lenet", add_lenet}};
}  // namespace

std::unique_ptr<Sequential> make_model(const std::string& name, const Backend& backend,
                                       std::uint64_t seed) {
    for (const ModelRecipe& recipe : recipes)
        if (name == recipe.name) {
            auto model = std::make_unique<Sequential>(backend);
            recipe.add_layers(*model, seed);
            return model;
        }
    std::string names;
    for (const std::string& known : model_names()) names += (names.empty() ? "" : ", ") + known;
    throw InvalidArgument("model: unknown model '" + name + "'; the models are: " + names);
}

std::vector<std::string> model_names() {
    std::vector<std::string> names;
    for (const ModelRecipe& recipe : recipes) names.push_back(recipe.name);
    return names;
}

}  // namespace triptych::nn
