#include "common/ops.hpp"

#include <cmath>

#include "common/errors.hpp"

namespace triptych {

void GemmShape::validate() const {
    if (M < 1 || N < 1 || K < 1)
        throw InvalidArgument("gemm: sizes must be >= 1, got M=" + std::to_string(M) +
                              ", N=" + std::to_string(N) + ", K=" + std::to_string(K));
    if (!std::isfinite(alpha) || !std::isfinite(beta))
        throw InvalidArgument("gemm: alpha and beta must be finite, got alpha=" +
                              std::to_string(alpha) + ", beta=" + std::to_string(beta));
}

std::string GemmShape::str() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " +
           (trans_a ? "T" : "N") + (trans_b ? "T" : "N");
}

std::string to_string(Activation activation) {
    switch (activation) {
        case Activation::none:
            return "none";
        case Activation::relu:
            return "relu";
        case Activation::sigmoid:
            return "sigmoid";
        case Activation::tanh:
            return "tanh";
    }
    return "?";
}

void DenseShape::validate() const {
    if (batch < 1 || in < 1 || out < 1)
        throw InvalidArgument("dense_forward: sizes must be >= 1, got batch=" +
                              std::to_string(batch) + ", in=" + std::to_string(in) +
                              ", out=" + std::to_string(out));
}

std::string DenseShape::str() const {
    return std::to_string(batch) + "x" + std::to_string(in) + "->" + std::to_string(out) + " " +
           to_string(activation);
}

}  // namespace triptych
