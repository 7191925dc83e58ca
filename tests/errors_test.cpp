// Bad input gets a typed exception whose message names the op and the values, on every variant;
// the command line turns it into one line on stderr and a non-zero exit.
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/host_backend.hpp"
#include "common/registry.hpp"

using namespace triptych;
using Catch::Matchers::Contains;

TEST_CASE("gemm rejects non-positive sizes, naming the op and the values", "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        const Tensor t = b.allocate(Shape{1, 1});
        Tensor c = b.allocate(Shape{1, 1});
        CHECK_THROWS_MATCHES(b.gemm(GemmShape{0, 1, 1}, t, t, c), InvalidArgument,
                             Catch::Matchers::Message("gemm: sizes must be >= 1, got M=0, N=1, K=1"));
        CHECK_THROWS_AS(b.gemm(GemmShape{1, -3, 1}, t, t, c), InvalidArgument);
    }
}

TEST_CASE("gemm rejects a tensor whose shape does not match M, N, K", "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        const Tensor A = b.allocate(Shape{3, 4});
        const Tensor B = b.allocate(Shape{4, 2});
        Tensor C = b.allocate(Shape{3, 2});
        CHECK_NOTHROW(b.gemm(GemmShape{3, 2, 4}, A, B, C));
        CHECK_THROWS_WITH(b.gemm(GemmShape{5, 2, 4}, A, B, C),
                          Contains("gemm 5x2x4 NN") && Contains("A has shape [3, 4], expected [5, 4]"));
        // Transposing A changes the shape it must have.
        CHECK_THROWS_WITH(b.gemm(GemmShape{3, 2, 4, true}, A, B, C),
                          Contains("A has shape [3, 4], expected [4, 3]"));
        Tensor wrong_c = b.allocate(Shape{2, 3});
        CHECK_THROWS_WITH(b.gemm(GemmShape{3, 2, 4}, A, B, wrong_c),
                          Contains("C has shape [2, 3], expected [3, 2]"));
    }
}

TEST_CASE("ops reject empty tensors (no buffer)", "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        const Tensor empty;
        Tensor y = b.allocate(Shape{4});
        CHECK_THROWS_MATCHES(b.relu_forward(empty, y), InvalidArgument,
                             Catch::Matchers::Message("relu_forward: x is an empty tensor (no buffer)"));
        Tensor c = b.allocate(Shape{1, 1});
        CHECK_THROWS_WITH(b.gemm(GemmShape{1, 1, 1}, empty, c, c), Contains("A is an empty tensor"));
    }
}

TEST_CASE("ops reject a tensor that lives on another backend", "[errors]") {
    const std::vector<std::string> names = backend_names();
    REQUIRE(names.size() >= 2);
    const Backend& here = backend(names[1]);
    const Backend& elsewhere = backend(names[0]);
    const Tensor x = elsewhere.allocate(Shape{8});
    Tensor y = here.allocate(Shape{8});
    CHECK_THROWS_MATCHES(here.relu_forward(x, y), InvalidArgument,
                         Catch::Matchers::Message("relu_forward: x lives on backend " + names[0] +
                                                  ", not " + names[1] +
                                                  "; move it with upload/download first"));
}

TEST_CASE("ReLU rejects outputs and gradients of another shape", "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        const Tensor x = b.allocate(Shape{2, 3});
        Tensor y = b.allocate(Shape{3, 2});
        CHECK_THROWS_WITH(b.relu_forward(x, y), Contains("relu_forward: y has shape [3, 2], expected [2, 3]"));
        Tensor dx = b.allocate(Shape{2, 3});
        CHECK_THROWS_WITH(b.relu_backward(x, y, dx), Contains("relu_backward: dy has shape [3, 2]"));
    }
}

TEST_CASE("memory calls reject bad sizes", "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        CHECK_THROWS_WITH(b.allocate(Shape{4, 0}), Contains("allocate") && Contains("[4, 0]"));
        Tensor t = b.allocate(Shape{4});
        const std::vector<float> three(3, 1.0f);
        CHECK_THROWS_WITH(b.upload(t, three), Contains("upload: 3 values for a tensor of shape [4]"));
    }
}

TEST_CASE("unknown backends and ops are InvalidArgument listing what exists", "[errors]") {
    CHECK_THROWS_MATCHES(backend("gpu_turbo"), InvalidArgument,
                         Catch::Matchers::Predicate<std::exception>(
                             [](const std::exception& e) {
                                 const std::string m = e.what();
                                 return m.find("gpu_turbo") != std::string::npos &&
                                        m.find("cpu_naive") != std::string::npos;
                             },
                             "names the bad backend and the available ones"));
    CHECK_THROWS_WITH(check::op("conv9d"), Contains("unknown op 'conv9d'") && Contains("gemm"));
    CHECK_THROWS_WITH(check::op("gemm").run(backend("cpu_naive"), "3,4", 1),
                      Contains("gemm: --shape takes M,N,K"));
    CHECK_THROWS_WITH(check::parse_sizes("gemm", "3,x,4"), Contains("'3,x,4'"));
}

TEST_CASE("a variant without an op throws Unsupported naming itself and the op", "[errors]") {
    struct NoOps : HostBackend {
        std::string name() const override { return "no_ops"; }
        DeviceKind device_kind() const override { return DeviceKind::Cpu; }
        std::string device() const override { return "test"; }
    } bare;
    const Tensor x = bare.allocate(Shape{2});
    Tensor y = bare.allocate(Shape{2});
    CHECK_THROWS_MATCHES(bare.relu_forward(x, y), Unsupported,
                         Catch::Matchers::Message("no_ops does not implement relu_forward"));
}

namespace {

struct Run {
    int status;
    std::string stderr_text;
};

// Runs the triptych command line and captures its exit status and standard error.
Run run_cli(const std::string& arguments) {
    const std::string command = std::string(TRIPTYCH_CLI) + " " + arguments + " 2>&1 >/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string text;
    std::array<char, 512> chunk{};
    while (fgets(chunk.data(), chunk.size(), pipe) != nullptr) text += chunk.data();
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

bool one_line(const std::string& text) {
    return !text.empty() && text.find('\n') == text.size() - 1;
}

}  // namespace

TEST_CASE("the CLI turns bad input into one line on stderr and a non-zero exit", "[errors][cli]") {
    const Run bad_shape = run_cli("check --op gemm --shape 0,4,4 --backend cpu_naive");
    CHECK(bad_shape.status != 0);
    CHECK(one_line(bad_shape.stderr_text));
    CHECK_THAT(bad_shape.stderr_text, Contains("gemm") && Contains("M=0"));

    const Run bad_backend = run_cli("check --backend nope");
    CHECK(bad_backend.status != 0);
    CHECK(one_line(bad_backend.stderr_text));
    CHECK_THAT(bad_backend.stderr_text, Contains("unknown backend 'nope'"));

    const Run bad_option = run_cli("check --frobnicate");
    CHECK(bad_option.status != 0);
    CHECK_THAT(bad_option.stderr_text, Contains("unknown option '--frobnicate'"));

    const Run missing_value = run_cli("check --op");
    CHECK(missing_value.status != 0);
    CHECK_THAT(missing_value.stderr_text, Contains("--op needs a value"));
}

TEST_CASE("the CLI's check passes on a valid case and replays a seed exactly", "[cli]") {
    CHECK(run_cli("check --op gemm --shape 17,33,5 --backend cpu_eigen_omp --seed 42").status == 0);
    for (const char* command : {"info", "check", "bench", "report"})
        CHECK(run_cli(std::string(command) + " --help").status == 0);
}
