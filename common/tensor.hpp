// Tensor: a Shape plus a float buffer owned by exactly one backend's memory.
//
// For a CPU backend `data()` is host memory; for a GPU backend it is device memory (on the
// simulator: host memory the simulator knows to be "device"). Tensors never move between backends
// silently: `Backend::upload` and `Backend::download` are the only ways across.
#pragma once

#include <memory>

#include "common/shape.hpp"

namespace triptych {

class Backend;

class Tensor {
public:
    Tensor() = default;
    Tensor(Shape shape, std::shared_ptr<float> buffer, const Backend* owner)
        : shape_(std::move(shape)), buffer_(std::move(buffer)), owner_(owner) {}

    const Shape& shape() const { return shape_; }
    std::int64_t elements() const { return shape_.elements(); }
    float* data() { return buffer_.get(); }
    const float* data() const { return buffer_.get(); }
    // The backend whose memory holds the buffer (null for an empty tensor).
    const Backend* owner() const { return owner_; }

private:
    Shape shape_;
    std::shared_ptr<float> buffer_;
    const Backend* owner_ = nullptr;
};

}  // namespace triptych
