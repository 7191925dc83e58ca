#include "common/kernels.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>

#include "common/errors.hpp"
#include "triptych_config.hpp"

namespace triptych {
namespace {

struct OpFacts {
    Op op;
    std::string_view name;
    bool required;
};

constexpr bool required = true, optional = false;

constexpr OpFacts op_facts[] = {
#define TRIPTYCH_OP_FACTS(name, signature, need) {Op::name, #name, need},
    TRIPTYCH_OPS(TRIPTYCH_OP_FACTS)
#undef TRIPTYCH_OP_FACTS
// (clang-format would indent the list below as a continuation of the macro's braces.)
// clang-format off
#define TRIPTYCH_ACTIVATION_OP_FACTS(name, Type)          \
    {Op::name##_forward, #name "_forward", required},     \
    {Op::name##_backward, #name "_backward", required},
    TRIPTYCH_ACTIVATIONS(TRIPTYCH_ACTIVATION_OP_FACTS)
#undef TRIPTYCH_ACTIVATION_OP_FACTS
    // clang-format on
};
constexpr std::size_t op_count = std::size(op_facts);

constexpr std::array<Op, op_count> op_list = [] {
    std::array<Op, op_count> list{};
    for (std::size_t i = 0; i < op_count; ++i) list[i] = op_facts[i].op;
    return list;
}();

const OpFacts& facts(Op op) { return op_facts[static_cast<std::size_t>(op)]; }

// A function-local static, so that registrations from other translation units' static
// initialisers never see an unconstructed map.
struct Registry {
    std::mutex mutex;
    std::map<std::string, std::array<std::vector<KernelVersion>, op_count>> versions;
};

Registry& registry() {
    static Registry r;
    return r;
}

// "/home/me/triptych/gpu/tiled/gemm.cu" -> "gpu/tiled/gemm.cu".
std::string source_relative(const std::string& path) {
    const std::string root = std::string(TRIPTYCH_SOURCE_DIR) + "/";
    return path.starts_with(root) ? path.substr(root.size()) : path;
}

}  // namespace

std::span<const Op> all_ops() { return op_list; }

std::string to_string(InputPrecision precision) {
    switch (precision) {
        case InputPrecision::fp32:
            return "fp32";
        case InputPrecision::tf32:
            return "tf32";
        case InputPrecision::bf16:
            return "bf16";
    }
    return "?";
}

double input_roundoff(InputPrecision precision) {
    switch (precision) {
        case InputPrecision::fp32:
            return 0.0;
        case InputPrecision::tf32:
            return 0x1p-11;  // 10 stored mantissa bits, rounded to nearest
        case InputPrecision::bf16:
            return 0x1p-8;  // 7 stored mantissa bits, rounded to nearest
    }
    return 0.0;
}

OpKey<kernels::Map> forward_op(Activation activation) {
    switch (activation) {
#define TRIPTYCH_FORWARD_OP(name, Type) \
    case Activation::name:              \
        return ops::name##_forward;
        TRIPTYCH_ACTIVATIONS(TRIPTYCH_FORWARD_OP)
#undef TRIPTYCH_FORWARD_OP
        case Activation::none:
            break;
    }
    throw InvalidArgument("Activation::none has no kernel");
}

OpKey<kernels::MapBackward> backward_op(Activation activation) {
    switch (activation) {
#define TRIPTYCH_BACKWARD_OP(name, Type) \
    case Activation::name:               \
        return ops::name##_backward;
        TRIPTYCH_ACTIVATIONS(TRIPTYCH_BACKWARD_OP)
#undef TRIPTYCH_BACKWARD_OP
        case Activation::none:
            break;
    }
    throw InvalidArgument("Activation::none has no kernel");
}

std::string_view op_name(Op op) { return facts(op).name; }

bool op_required(Op op) { return facts(op).required; }

Op op_named(std::string_view name) {
    std::string known;
    for (const OpFacts& f : op_facts) {
        if (f.name == name) return f.op;
        known += (known.empty() ? "" : ", ") + std::string(f.name);
    }
    throw InvalidArgument("unknown op '" + std::string(name) + "'; known ops: " + known);
}

bool register_kernel_versions(const std::string& variant, Op op,
                              std::vector<KernelVersion> versions, int default_version) {
    const std::string what = variant + " " + std::string(op_name(op));
    bool found_default = false;
    for (KernelVersion& v : versions) {
        v.file = source_relative(v.file);
        v.is_default = v.number == default_version;
        found_default = found_default || v.is_default;
    }
    if (default_version != no_default_version && !found_default)
        throw Error(what + ": the default version " + std::to_string(default_version) +
                    " is not among those registered");
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    std::vector<KernelVersion>& all = r.versions[variant][static_cast<std::size_t>(op)];
    for (const KernelVersion& v : versions) {
        for (const KernelVersion& old : all) {
            if (old.number == v.number)
                throw Error(what + ": version " + std::to_string(v.number) +
                            " is registered twice (" + old.file + " and " + v.file + ")");
            if (old.is_default && v.is_default)
                throw Error(what + ": two default versions (" + old.file + " and " + v.file + ")");
        }
        all.push_back(v);
    }
    std::sort(all.begin(), all.end(),
              [](const KernelVersion& a, const KernelVersion& b) { return a.number < b.number; });
    return true;
}

std::vector<KernelVersion> kernel_versions(const std::string& variant, Op op) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.versions.find(variant);
    if (it == r.versions.end()) return {};
    return it->second[static_cast<std::size_t>(op)];
}

void (*default_kernel_of(const std::string& variant, Op op))() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.versions.find(variant);
    if (it == r.versions.end()) return nullptr;
    for (const KernelVersion& v : it->second[static_cast<std::size_t>(op)])
        if (v.is_default) return v.kernel;
    return nullptr;
}

std::vector<std::string> variants_with_kernels() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    std::vector<std::string> names;
    for (const auto& [name, ops] : r.versions) names.push_back(name);
    return names;
}

}  // namespace triptych
