#include "common/nn/sequential.hpp"

#include <cstdio>

#include "common/errors.hpp"
#include "common/timer.hpp"

namespace triptych::nn {

void Sequential::append(std::unique_ptr<Layer> layer) {
    const std::string index = std::to_string(layers_.size());
    std::vector<Parameter*> parameters = layer->parameters();
    for (Parameter* p : parameters) p->name = index + "." + p->name;
    // dLoss/dInput of this layer is needed only if a layer before it has parameters to learn.
    layer->set_input_gradient(learning_before_);
    learning_before_ = learning_before_ || !parameters.empty();
    times_.push_back({index + " " + layer->name()});
    output_shapes_.emplace_back();
    layers_.push_back(std::move(layer));
}

const Tensor& Sequential::forward(const Tensor& x) {
    if (layers_.empty())
        throw InvalidArgument("sequential: forward through a model with no layers");
    if (timing_) backend().synchronize();  // so the first layer is not charged for earlier work
    const Tensor* y = &x;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
        const Timer timer;
        y = &layers_[i]->forward(*y);
        if (timing_) {
            backend().synchronize();
            times_[i].forward_seconds += timer.seconds();
            ++times_[i].calls;
        }
        output_shapes_[i] = y->shape();
    }
    return *y;
}

const Tensor& Sequential::backward(const Tensor& dy) {
    if (layers_.empty())
        throw InvalidArgument("sequential: backward through a model with no layers");
    if (timing_) backend().synchronize();
    const Tensor* dx = &dy;
    for (std::size_t i = layers_.size(); i-- > 0;) {
        const Timer timer;
        dx = &layers_[i]->backward(*dx);
        if (timing_) {
            backend().synchronize();
            times_[i].backward_seconds += timer.seconds();
        }
        // The layers before this one have nothing to learn and this one passed no gradient on.
        if (!layers_[i]->input_gradient()) break;
    }
    return *dx;
}

std::vector<Parameter*> Sequential::parameters() {
    std::vector<Parameter*> all;
    for (const auto& layer : layers_)
        for (Parameter* p : layer->parameters()) all.push_back(p);
    return all;
}

std::vector<NamedTensor> Sequential::named_parameters() {
    std::vector<NamedTensor> named;
    for (Parameter* p : parameters()) named.push_back({p->name, &p->value});
    return named;
}

std::string Sequential::summary() const {
    char line[160];
    std::snprintf(line, sizeof line, "%3s  %-44s %-18s %10s\n", "#", "layer", "output",
                  "parameters");
    std::string out = line;
    std::int64_t total = 0;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
        std::int64_t count = 0;
        for (const Parameter* p : layers_[i]->parameters()) count += p->value.elements();
        total += count;
        // "-" until the first forward.
        const std::string shape = output_shapes_[i].rank() == 0 ? "-" : output_shapes_[i].str();
        std::snprintf(line, sizeof line, "%3zu  %-44s %-18s %10lld\n", i,
                      layers_[i]->name().c_str(), shape.c_str(), static_cast<long long>(count));
        out += line;
    }
    std::snprintf(line, sizeof line, "     %-44s %-18s %10lld\n", "total", "",
                  static_cast<long long>(total));
    return out + line;
}

void Sequential::set_timing(bool on) { timing_ = on; }

void Sequential::reset_layer_times() {
    for (LayerTime& t : times_) t = LayerTime{t.layer};
}

}  // namespace triptych::nn
