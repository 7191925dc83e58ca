// Kernels and their versions: which function each variant runs for each op.
//
// A kernel is a plain function with its op's signature (the list below): raw pointers into the
// backend's memory and the op's parameters, every one of them already checked by Backend
// (common/backend.hpp). A variant registers its kernels in the file that holds them, once per op,
// so nothing else restates an op's signature:
//
//   [[maybe_unused]] const bool registered = register_kernels(
//       "gpu_tiled", ops::gemm,
//       {{3, "shared_tiles", "32 x 32 tiles of op(A) and op(B) staged in shared memory",
//         gemm_shared_tiles},
//        {5, "2d_blocktile", "each thread keeps an 8 x 8 block of C in registers", gemm_2d}},
//       /*default_version=*/5);
//
// Versions are the steps of an op's optimisation ladder, each a kernel a learner can run, check,
// time and diff against the step before. They are numbered along the ladder of a side, so that a
// number names one kernel: the GPU ladder runs through gpu_naive and then gpu_tiled (GEMM:
// versions 1-2 in gpu_naive, 3-8 in gpu_tiled), the CPU ladder through cpu_naive and then
// cpu_eigen_omp; gpu_vendor's library calls are version 1 of their own. A variant runs its
// default version (its best) unless a version is asked for by name: "gpu_tiled@5"
// (common/registry.hpp).
#pragma once

#include <cstdint>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/ops.hpp"
#include "common/optimizer_rule.hpp"

namespace triptych {

// The signature of each kind of kernel. n: elements; rows, cols: a matrix seen row by row.
namespace kernels {
using Gemm = void(const GemmShape& shape, const float* A, const float* B, float* C);
// y = f(x), elementwise; y may be x.
using Map = void(std::int64_t n, const float* x, float* y);
// out = f(in, dy), elementwise, a backward pass from the forward's input or output; out may be dy.
using MapBackward = void(std::int64_t n, const float* in, const float* dy, float* out);
using BiasAdd = void(std::int64_t rows, std::int64_t cols, const float* x, const float* bias,
                     float* y);
using ColumnSums = void(std::int64_t rows, std::int64_t cols, const float* dy, float* dbias);
using RowsMap = void(std::int64_t rows, std::int64_t cols, const float* x, float* y);
using RowsBackward = void(std::int64_t rows, std::int64_t cols, const float* y, const float* dy,
                          float* dx);
// The mean loss, returned; the gradient written to grad.
using Loss = float(std::int64_t n, const float* prediction, const float* target, float* grad);
// The mean loss and the first row whose label is not a class index (is_class_index), written to
// *result in the backend's memory (nothing waits for them). With a bad label the loss may be
// anything, but the kernel must not index by the label.
using CrossEntropy = void(std::int64_t rows, std::int64_t classes, const float* logits,
                          const float* labels, float* grad, CrossEntropyResult* result);
using Sum = float(std::int64_t n, const float* x, Reduction mode);
using Dense = void(const DenseShape& shape, const float* X, const float* W, const float* b,
                   float* Y);
using ConvForward = void(const Conv2dShape& shape, ConvAlgorithm algorithm, const float* x,
                         const float* w, const float* b, float* y);
using ConvBackwardData = void(const Conv2dShape& shape, ConvAlgorithm algorithm, const float* dy,
                              const float* w, float* dx);
using ConvBackwardWeights = void(const Conv2dShape& shape, ConvAlgorithm algorithm, const float* x,
                                 const float* dy, float* dw, float* db);
using MaxPoolForward = void(const Pool2dShape& shape, const float* x, float* y, float* argmax);
using MaxPoolBackward = void(const Pool2dShape& shape, const float* dy, const float* argmax,
                             float* dx);
using PoolForward = void(const Pool2dShape& shape, const float* x, float* y);
using PoolBackward = void(const Pool2dShape& shape, const float* dy, float* dx);
// One step of `rule` over every tensor of the list (how it is launched is the variant's choice).
using OptimizerStep = void(const OptimizerRule<float>& rule,
                           std::span<const OptimizerSlot> tensors);
}  // namespace kernels

// Every op, once: its name, its kernel's signature, and whether every hand-written variant must
// implement it (`required`) or may leave it to Backend's default (`optional`: dense_forward runs
// gemm, bias_add and the activation one after the other where a variant has no fused kernel).
// Each activation of TRIPTYCH_ACTIVATIONS (common/activations.hpp) adds two more, required:
// <name>_forward (kernels::Map) and <name>_backward (kernels::MapBackward). The enum Op, the names
// and the typed keys in `ops::` below are made from these lists.
#define TRIPTYCH_OPS(OP)                                                \
    OP(gemm, kernels::Gemm, required)                                   \
    OP(bias_add, kernels::BiasAdd, required)                            \
    OP(bias_backward, kernels::ColumnSums, required)                    \
    OP(softmax_forward, kernels::RowsMap, required)                     \
    OP(softmax_backward, kernels::RowsBackward, required)               \
    OP(mse_loss, kernels::Loss, required)                               \
    OP(softmax_cross_entropy, kernels::CrossEntropy, required)          \
    OP(sum, kernels::Sum, required)                                     \
    OP(dense_forward, kernels::Dense, optional)                         \
    OP(conv2d_forward, kernels::ConvForward, required)                  \
    OP(conv2d_backward_data, kernels::ConvBackwardData, required)       \
    OP(conv2d_backward_weights, kernels::ConvBackwardWeights, required) \
    OP(max_pool2d_forward, kernels::MaxPoolForward, required)           \
    OP(max_pool2d_backward, kernels::MaxPoolBackward, required)         \
    OP(avg_pool2d_forward, kernels::PoolForward, required)              \
    OP(avg_pool2d_backward, kernels::PoolBackward, required)            \
    OP(optimizer_step, kernels::OptimizerStep, required)

enum class Op {
#define TRIPTYCH_OP_ENUM(name, signature, need) name,
    TRIPTYCH_OPS(TRIPTYCH_OP_ENUM)
#undef TRIPTYCH_OP_ENUM
// clang-format off
#define TRIPTYCH_ACTIVATION_OP_ENUM(name, Type) name##_forward, name##_backward,
    TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_OP_ENUM)
#undef TRIPTYCH_ACTIVATION_OP_ENUM
    // clang-format on
};

// Every op, in the order of the list.
std::span<const Op> all_ops();
std::string_view op_name(Op op);
// Whether every hand-written variant must implement `op` (see TRIPTYCH_OPS).
bool op_required(Op op);
// The op named `name`; InvalidArgument naming the known ops otherwise.
Op op_named(std::string_view name);

// An op together with its kernel's signature, so that registering or calling a kernel of the
// wrong type does not compile: ops::gemm, ops::relu_forward, ...
template <typename Signature>
struct OpKey {
    Op op;
};

namespace ops {
#define TRIPTYCH_OP_KEY(name, signature, need) inline constexpr OpKey<signature> name{Op::name};
TRIPTYCH_OPS(TRIPTYCH_OP_KEY)
#undef TRIPTYCH_OP_KEY
#define TRIPTYCH_ACTIVATION_OP_KEYS(name, Type)                              \
    inline constexpr OpKey<kernels::Map> name##_forward{Op::name##_forward}; \
    inline constexpr OpKey<kernels::MapBackward> name##_backward{Op::name##_backward};
TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_OP_KEYS)
#undef TRIPTYCH_ACTIVATION_OP_KEYS
}  // namespace ops

// The ops of an activation (not Activation::none): relu -> ops::relu_forward, ops::relu_backward.
OpKey<kernels::Map> forward_op(Activation activation);
OpKey<kernels::MapBackward> backward_op(Activation activation);

// The order in which a kernel's float additions into one element happen. Float addition is not
// associative, so the order decides the last bits: `fixed` gives the same bits on every run (the
// order depends on the shape only); `arrival` means threads add with atomics in whatever order
// they arrive (a sum's fast mode, gpu_naive's pooling backward), on a GPU and in the simulator
// alike, and the last bits may change from run to run.
enum class AdditionOrder { fixed, arrival };

// What a kernel's multiplies see of float inputs: the floats themselves, or the inputs rounded to
// a tensor core's TF32 (10 bits of mantissa, unit roundoff 2^-11) or BF16 (8 bits, 2^-8), with
// products added in float. The checks widen their tolerance by the inputs' rounding
// (check/crosscheck.cpp, check_gemm).
enum class InputPrecision { fp32, tf32, bf16 };
std::string to_string(InputPrecision precision);
// The unit roundoff of one input rounded to `precision` (0 for fp32: inputs are used as they are).
double input_roundoff(InputPrecision precision);

// A registered kernel, as `triptych versions` lists it.
struct KernelVersion {
    int number = 0;      // its step on the op's ladder (see the top of this file)
    std::string name;    // short, for tables: "shared_tiles", "2d_blocktile"
    std::string change;  // one line: what changed from the version before
    std::string file;    // where it is written, relative to the source tree: "gpu/tiled/gemm.cu"
    bool is_default = false;     // the variant's best: what it runs unless another is asked for
    void (*kernel)() = nullptr;  // the function, its type erased (OpKey restores it)
    AdditionOrder additions = AdditionOrder::fixed;
    InputPrecision inputs = InputPrecision::fp32;
};

// One version as a registration lists it; `kernel` must have the op's signature.
template <typename Signature>
struct VersionOf {
    int number;
    std::string name;
    std::string change;
    Signature* kernel;
    AdditionOrder additions = AdditionOrder::fixed;  // arrival where it adds with float atomics
    InputPrecision inputs = InputPrecision::fp32;    // tf32 or bf16 on tensor cores
};

// Records the versions of `op` that `variant` implements, with the one it runs by default
// (no_default_version when another registration of the same op names it). Returns true, so it can
// initialise a namespace-scope constant. Throws (at start-up) if the default is not among them, or
// a number or a default is registered twice.
inline constexpr int no_default_version = 0;
bool register_kernel_versions(const std::string& variant, Op op,
                              std::vector<KernelVersion> versions, int default_version);

template <typename Signature>
bool register_kernels(const std::string& variant, OpKey<Signature> key,
                      std::vector<VersionOf<Signature>> versions, int default_version,
                      std::source_location where = std::source_location::current()) {
    std::vector<KernelVersion> erased;
    for (VersionOf<Signature>& v : versions)
        erased.push_back({v.number, std::move(v.name), std::move(v.change), where.file_name(),
                          false, reinterpret_cast<void (*)()>(v.kernel), v.additions, v.inputs});
    return register_kernel_versions(variant, key.op, std::move(erased), default_version);
}

// A variant with a single version of an op.
template <typename Signature>
bool register_kernel(const std::string& variant, OpKey<Signature> key, VersionOf<Signature> version,
                     std::source_location where = std::source_location::current()) {
    const int number = version.number;
    return register_kernels(variant, key, {std::move(version)}, number, where);
}

// The versions of `op` that `variant` registered, in number order; empty if none.
std::vector<KernelVersion> kernel_versions(const std::string& variant, Op op);
// The kernel `variant` runs by default for `key`, or null: for a panel's code that calls its own
// kernel of another op (cpu_eigen_omp's dense layer applies its activation kernels). A lookup,
// with no copy: cheap enough to make once per call of an op.
void (*default_kernel_of(const std::string& variant, Op op))();
template <typename Signature>
Signature* default_kernel(const std::string& variant, OpKey<Signature> key) {
    return reinterpret_cast<Signature*>(default_kernel_of(variant, key.op));
}
// The variants that registered any kernel, in no particular order.
std::vector<std::string> variants_with_kernels();

}  // namespace triptych
