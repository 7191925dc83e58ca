// Shape: the dimensions of a tensor, outermost first (NCHW for images, [rows, cols] for matrices).
// Tensors are dense and row-major, so the last dimension is contiguous in memory.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace triptych {

class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
    explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

    int rank() const { return static_cast<int>(dims_.size()); }
    std::int64_t operator[](int axis) const { return dims_.at(static_cast<std::size_t>(axis)); }
    const std::vector<std::int64_t>& dims() const { return dims_; }

    // The number of elements: the product of the dimensions (1 for a rank-0 shape).
    // InvalidArgument if the product does not fit in 64 bits.
    std::int64_t elements() const {
        std::int64_t count = 1;
        for (std::int64_t d : dims_)
            if (__builtin_mul_overflow(count, d, &count))
                throw InvalidArgument("shape " + str() + " has more than 2^63 - 1 elements");
        return count;
    }

    // The shape seen as a matrix (rows, columns), as row-wise ops (bias, softmax) see a tensor:
    // columns is the last dimension, rows the product of the others.
    std::int64_t columns() const { return dims_.empty() ? 1 : dims_.back(); }
    std::int64_t rows() const { return elements() / columns(); }

    // "[3, 4]", as error messages print it.
    std::string str() const {
        std::string out = "[";
        for (std::size_t i = 0; i < dims_.size(); ++i) {
            if (i > 0) out += ", ";
            out += std::to_string(dims_[i]);
        }
        return out + "]";
    }

    friend bool operator==(const Shape&, const Shape&) = default;

private:
    std::vector<std::int64_t> dims_;
};

}  // namespace triptych
