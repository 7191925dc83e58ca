// The activations as formulas for one element, host and device code: the one place each is
// written. cpu_naive loops over them (in double they are the reference), gpu_naive and gpu_tiled
// apply them in their kernels and in the fused GEMM epilogue; cpu_eigen_omp writes the same
// formulas as Eigen array expressions, so that they vectorise.
//
// Each activation has forward(x) and backward(in, dy) = dy * act'(...), where `in` is the
// forward's input x (ReLU, GELU) or its output y (sigmoid, tanh: their derivatives are functions of
// y, so the backward pass needs no exponential): backward_takes_output says which.
// backward_works_from_output says whether the output is enough: true where the backward takes y,
// and for ReLU, whose mask y > 0 is the mask x > 0 (a dense layer then keeps only y); false for
// GELU, which a layer must keep x for.
//
// TRIPTYCH_ACTIVATIONS lists them once; the Activation enum, the names, the ops of
// common/kernels.hpp (relu_forward, relu_backward, ...), every panel's kernels, the fused dense
// layer's epilogues, the checks and the benchmark rows are made from it. Adding an activation is a
// struct here, a line in the list, and the Eigen expression of cpu_eigen_omp (README: "Adding an
// op").
//
// NaN and infinities: a NaN input gives a NaN output, as in PyTorch; a NaN that an activation
// silently turned into a number would hide a diverging run. Infinities follow the formulas' limits:
// relu(+inf) = +inf, relu(-inf) = 0, sigmoid(+-inf) = 1 and 0, tanh(+-inf) = +-1.
#pragma once

#include <cmath>

#include <string>
#include <string_view>

#include "common/host_device.hpp"

namespace triptych {

// name (as the ops and the command line spell it), struct
#define TRIPTYCH_ACTIVATIONS(X) \
    X(relu, Relu)               \
    X(sigmoid, Sigmoid)         \
    X(tanh, Tanh)               \
    X(gelu, Gelu)

// The activation a layer applies (none: the identity, for a layer without one).
enum class Activation {
    none,
#define TRIPTYCH_ACTIVATION_ENUM(name, type) name,
    TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_ENUM)
#undef TRIPTYCH_ACTIVATION_ENUM
};

// y = max(x, 0); written x < 0 ? 0 : x so that NaN, which fails every comparison, stays NaN
// (max(x, 0) as fmaxf would return 0). dx = dy where x > 0, 0 where x <= 0 (at exactly 0 the
// gradient is taken as 0, as PyTorch does), and NaN where x is NaN (it fails both tests; PyTorch
// passes dy there).
struct Relu {
    static constexpr Activation kind = Activation::relu;
    static constexpr bool backward_takes_output = false;
    static constexpr bool backward_works_from_output = true;
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T forward(T x) {
        return x < T(0) ? T(0) : x;
    }
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T backward(T x, T dy) {
        return x > T(0) ? dy : x <= T(0) ? T(0) : x;
    }
};

// y = 1 / (1 + e^-x). For x below about -88 (float), e^-x overflows to +inf and y = 1 / inf = 0,
// the right limit: no NaN. dx = dy * y * (1 - y), from the output.
struct Sigmoid {
    static constexpr Activation kind = Activation::sigmoid;
    static constexpr bool backward_takes_output = true;
    static constexpr bool backward_works_from_output = true;
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T forward(T x) {
        using std::exp;
        return T(1) / (T(1) + exp(-x));
    }
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T backward(T y, T dy) {
        return dy * y * (T(1) - y);
    }
};

// y = tanh(x); dx = dy * (1 - y^2), from the output.
struct Tanh {
    static constexpr Activation kind = Activation::tanh;
    static constexpr bool backward_takes_output = true;
    static constexpr bool backward_works_from_output = true;
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T forward(T x) {
        using std::tanh;
        return tanh(x);
    }
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T backward(T y, T dy) {
        return dy * (T(1) - y * y);
    }
};

// GELU, the Gaussian error linear unit of BERT and GPT-2, in the tanh approximation GPT-2 uses
// (Hendrycks and Gimpel 2016; PyTorch's gelu(x, approximate='tanh')):
//   y = x/2 (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
//   dy/dx = (1 + tanh(u))/2 + x/2 (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
// The backward pass takes x. Beyond |x| = 30 tanh(u) is exactly +-1 in float and in double, so y is
// x or 0 and the slope 1 or 0: those are returned directly, which gives the limits at +-inf as
// well (the formulas would give -inf * 0 = NaN at -inf, and overflow x^2 for |x| > 1.8e19).
struct Gelu {
    static constexpr Activation kind = Activation::gelu;
    static constexpr bool backward_takes_output = false;
    static constexpr bool backward_works_from_output = false;
    static constexpr double sqrt_2_over_pi = 0.79788456080286535588;
    static constexpr double cubic = 0.044715;

    template <typename T>
    TRIPTYCH_HOST_DEVICE static T forward(T x) {
        using std::tanh;
        if (x > T(30)) return x;
        if (x < T(-30)) return T(0);
        const T u = T(sqrt_2_over_pi) * (x + T(cubic) * x * x * x);
        return T(0.5) * x * (T(1) + tanh(u));
    }
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T backward(T x, T dy) {
        using std::tanh;
        if (x > T(30)) return dy;
        if (x < T(-30)) return T(0) * dy;
        const T u = T(sqrt_2_over_pi) * (x + T(cubic) * x * x * x);
        const T t = tanh(u);
        const T slope = T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * T(sqrt_2_over_pi) *
                                                  (T(1) + T(3 * cubic) * x * x);
        return dy * slope;
    }
};

// The identity, for Activation::none (a dense layer without an activation).
struct NoActivation {
    static constexpr Activation kind = Activation::none;
    static constexpr bool backward_takes_output = false;
    static constexpr bool backward_works_from_output = true;
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T forward(T x) {
        return x;
    }
    template <typename T>
    TRIPTYCH_HOST_DEVICE static T backward(T, T dy) {
        return dy;
    }
};

// The struct of an activation known at compile time: ActivationOf<Activation::relu> is Relu.
template <Activation activation>
struct ActivationOfT {
    using type = NoActivation;
};
#define TRIPTYCH_ACTIVATION_OF(name, Type)   \
    template <>                              \
    struct ActivationOfT<Activation::name> { \
        using type = Type;                   \
    };
TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_OF)
#undef TRIPTYCH_ACTIVATION_OF
template <Activation activation>
using ActivationOf = typename ActivationOfT<activation>::type;

// act(v) for an activation known at compile time, so that a kernel templated on it (the fused
// dense layer's epilogue) has no branch.
template <Activation activation, typename T>
TRIPTYCH_HOST_DEVICE T activate(T v) {
    return ActivationOf<activation>::forward(v);
}

// Calls f(Act{}) with the struct of `activation` (NoActivation for none): a run-time choice turned
// into a compile-time one, for launchers that instantiate a kernel per activation. Host code.
template <typename F>
decltype(auto) with_activation(Activation activation, F&& f) {
    switch (activation) {
#define TRIPTYCH_ACTIVATION_CASE(name, Type) \
    case Activation::name:                   \
        return f(Type{});
        TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_CASE)
#undef TRIPTYCH_ACTIVATION_CASE
        case Activation::none:
            break;
    }
    return f(NoActivation{});
}

// Calls f(Act{}) for every activation of the list, in its order. Host code.
template <typename F>
void for_each_activation(F&& f) {
#define TRIPTYCH_ACTIVATION_CALL(name, Type) f(Type{});
    TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_CALL)
#undef TRIPTYCH_ACTIVATION_CALL
}

// The facts of the activation's struct, at run time.
inline bool backward_takes_output(Activation activation) {
    return with_activation(activation,
                           [](auto act) { return decltype(act)::backward_takes_output; });
}
inline bool backward_works_from_output(Activation activation) {
    return with_activation(activation,
                           [](auto act) { return decltype(act)::backward_works_from_output; });
}

// "relu", "none"; the activation named `name`, or false when there is none of that name.
std::string to_string(Activation activation);
bool activation_named(std::string_view name, Activation& activation);
// Every activation but none, in the list's order.
inline constexpr Activation all_activations[] = {
#define TRIPTYCH_ACTIVATION_VALUE(name, Type) Activation::name,
    TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_VALUE)
#undef TRIPTYCH_ACTIVATION_VALUE
};

}  // namespace triptych
