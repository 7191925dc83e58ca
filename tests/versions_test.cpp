// Kernels and versions (common/kernels.hpp): every hand-written variant implements every op, each
// op's versions are numbered along its ladder, and "<variant>@<N>" runs version N.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/kernels.hpp"
#include "common/registry.hpp"
#include "tests/cli.hpp"
#include "tests/seed.hpp"
#include "tests/variants.hpp"
#include "triptych_config.hpp"

using namespace triptych;
using Catch::Matchers::Contains;

TEST_CASE(
    "every hand-written variant (cpu_naive, cpu_eigen_omp, gpu_naive, gpu_tiled) registers a "
    "kernel for every required op",
    "[versions]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        if (!testing::hand_written(b)) continue;
        for (Op op : all_ops()) {
            if (!op_required(op)) continue;
            INFO(variant << " " << op_name(op));
            CHECK(b.implements(op));
            CHECK_FALSE(kernel_versions(variant, op).empty());
        }
    }
}

TEST_CASE(
    "each op a variant implements has exactly one default version, and every version names an "
    "existing source file",
    "[versions]") {
    for (const std::string& variant : variants_with_kernels())
        for (Op op : all_ops()) {
            const std::vector<KernelVersion> versions = kernel_versions(variant, op);
            if (versions.empty()) continue;
            INFO(variant << " " << op_name(op));
            int defaults = 0;
            for (const KernelVersion& v : versions) {
                defaults += v.is_default;
                CHECK(v.number >= 1);
                CHECK_FALSE(v.name.empty());
                CHECK_FALSE(v.change.empty());
                INFO("file " << v.file);
                CHECK(std::filesystem::exists(std::filesystem::path(TRIPTYCH_SOURCE_DIR) / v.file));
            }
            CHECK(defaults == 1);
        }
}

TEST_CASE(
    "versions are numbered along each side's ladder: a number belongs to one hand-written "
    "variant, and a later variant of the ladder has higher numbers",
    "[versions]") {
    // The ladders in registry order: the CPU variants, then the GPU ones (the simulator's too).
    std::map<bool, std::vector<std::string>> ladders;
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        if (testing::hand_written(b))
            ladders[b.device_kind() == DeviceKind::Cpu].push_back(variant);
    }
    for (Op op : all_ops())
        for (const auto& [cpu, variants] : ladders) {
            int highest = 0;
            std::string previous = "(none)";
            for (const std::string& variant : variants) {
                const std::vector<KernelVersion> versions = kernel_versions(variant, op);
                if (versions.empty()) continue;
                INFO(op_name(op) << ": " << variant << " after " << previous);
                CHECK(versions.front().number > highest);
                highest = versions.back().number;
                previous = variant;
            }
        }
}

TEST_CASE("<variant>@<N> runs version N of the ops that have one and the default of the others",
          "[versions]") {
    for (const std::string& variant : backend_names())
        for (const KernelVersion& v : kernel_versions(variant, Op::gemm)) {
            const std::string name = variant + "@" + std::to_string(v.number);
            const Backend& pinned = backend(name);
            INFO(name);
            CHECK(pinned.name() == name);
            CHECK(pinned.variant() == variant);
            CHECK(pinned.version_of(Op::gemm)->number == v.number);
            CHECK(pinned.version_of(Op::gemm)->name == v.name);
            // An op without a version N runs its default.
            if (const KernelVersion* relu = backend(variant).version_of(Op::relu_forward);
                relu != nullptr && relu->number != v.number)
                CHECK(pinned.version_of(Op::relu_forward)->number == relu->number);
            // Tensors pass between the variant and its versions: the same memory.
            const GemmShape s{3, 4, 5};
            const Tensor A = backend(variant).upload(s.a_shape(), std::vector<float>(15, 1.0f));
            const Tensor B = pinned.upload(s.b_shape(), std::vector<float>(20, 2.0f));
            Tensor C = pinned.allocate(s.c_shape());
            pinned.gemm(s, A, B, C);
            CHECK(backend(variant).download(C) == std::vector<float>(12, 10.0f));
        }
}

TEST_CASE("a version that no op has, or a malformed one, is an InvalidArgument naming it",
          "[versions][errors]") {
    CHECK_THROWS_MATCHES(backend("cpu_naive@9"), InvalidArgument,
                         Catch::Matchers::Message("backend 'cpu_naive@9': cpu_naive has no "
                                                  "version 9 of any op (triptych versions lists "
                                                  "them)"));
    for (const char* bad : {"cpu_naive@", "cpu_naive@x", "cpu_naive@0", "cpu_naive@-1"})
        CHECK_THROWS_WITH(backend(bad), Contains("is written <variant>@<number>"));
    CHECK_THROWS_WITH(backend("cpu_nave@1"), Contains("unknown backend 'cpu_nave'"));
}

TEST_CASE("every version the cross-check knows of is one the registry can make", "[versions]") {
    for (const check::OpDescription& op : check::ops()) {
        CHECK_FALSE(op.kernels.empty());
        for (const std::string& variant : backend_names())
            for (const std::string& name : check::versions_to_check(op, variant)) {
                INFO(op.name << " " << name);
                CHECK(backend(name).variant() == variant);
            }
    }
}

TEST_CASE("every op's profile shape is one of its check's shapes, not the one-element edge case",
          "[profile]") {
    for (const check::OpDescription& op : check::ops()) {
        INFO(op.name << ": " << op.profile_shape);
        const auto& shapes = op.default_shapes;
        CHECK(std::find(shapes.begin(), shapes.end(), op.profile_shape) != shapes.end());
        CHECK(op.profile_shape != shapes.front());
    }
}

TEST_CASE("`triptych versions --op` takes the kernel ops' names and those of `triptych check`",
          "[versions][cli]") {
    // conv2d, as triptych check names it: the ladders of its three kernels, and no other op's.
    const std::string conv2d = testing::cli_output("versions --op conv2d");
    for (const char* kernel :
         {"conv2d_forward ", "conv2d_backward_data ", "conv2d_backward_weights "})
        CHECK_THAT(conv2d, Contains(kernel));
    CHECK_THAT(conv2d, !Contains("max_pool2d") && !Contains("gemm "));
    const std::string forward = testing::cli_output("versions --op conv2d_forward");
    CHECK_THAT(forward, Contains("conv2d_forward ") && !Contains("conv2d_backward_data "));
    CHECK_THAT(testing::cli_output("versions --op adam"), Contains("optimizer_step "));

    const testing::CliRun unknown = testing::run_cli("versions --op nope");
    CHECK(unknown.status != 0);
    CHECK(testing::one_line(unknown.stderr_text));
    CHECK_THAT(unknown.stderr_text, Contains("unknown op 'nope'") && Contains("conv2d_forward"));
}
