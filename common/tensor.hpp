// Tensor: a Shape plus a float buffer owned by exactly one backend's memory.
//
// For a CPU backend `data()` is host memory; for a GPU backend it is device memory (on the
// simulator: host memory the simulator knows to be "device"). Tensors never move between backends
// silently: `Backend::upload` and `Backend::download` are the only ways across.
//
// Copying a Tensor shares its buffer (a shared_ptr), and `reshaped` gives the same buffer under
// another shape: a view, no copy (Flatten uses it).
#pragma once

#include <memory>

#include "common/errors.hpp"
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

    // The same buffer seen as `shape`, which must have as many elements (row-major order makes any
    // such shape a valid view). Writes through either tensor are seen by both.
    Tensor reshaped(Shape shape) const {
        if (shape.elements() != elements())
            throw InvalidArgument("reshaped: a tensor of shape " + shape_.str() + " (" +
                                  std::to_string(elements()) + " elements) cannot be viewed as " +
                                  shape.str() + " (" + std::to_string(shape.elements()) +
                                  " elements)");
        return Tensor(std::move(shape), buffer_, owner_);
    }

private:
    Shape shape_;
    std::shared_ptr<float> buffer_;
    const Backend* owner_ = nullptr;
};

}  // namespace triptych
