// Bad input gets a typed exception whose message names the op and the values, on every variant;
// the command line turns it into one line on stderr and a non-zero exit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/kernels.hpp"
#include "common/registry.hpp"
#include "tests/cli.hpp"
#include "tests/test_backend.hpp"

using namespace triptych;
using Catch::Matchers::Contains;

TEST_CASE("gemm rejects non-positive sizes, naming the op and the values", "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        const Tensor t = b.allocate(Shape{1, 1});
        Tensor c = b.allocate(Shape{1, 1});
        CHECK_THROWS_MATCHES(
            b.gemm(GemmShape{0, 1, 1}, t, t, c), InvalidArgument,
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
        CHECK_THROWS_WITH(
            b.gemm(GemmShape{5, 2, 4}, A, B, C),
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
        CHECK_THROWS_MATCHES(
            b.activation_forward(Activation::relu, empty, y), InvalidArgument,
            Catch::Matchers::Message("relu_forward: x is an empty tensor (no buffer)"));
        Tensor c = b.allocate(Shape{1, 1});
        CHECK_THROWS_WITH(b.gemm(GemmShape{1, 1, 1}, empty, c, c),
                          Contains("A is an empty tensor"));
    }
}

TEST_CASE("ops reject a tensor that lives on another backend", "[errors]") {
    const std::vector<std::string> names = backend_names();
    REQUIRE(names.size() >= 2);
    const Backend& here = backend(names[1]);
    const Backend& elsewhere = backend(names[0]);
    const Tensor x = elsewhere.allocate(Shape{8});
    Tensor y = here.allocate(Shape{8});
    CHECK_THROWS_MATCHES(
        here.activation_forward(Activation::relu, x, y), InvalidArgument,
        Catch::Matchers::Message("relu_forward: x lives on backend " + names[0] + ", not " +
                                 names[1] + "; move it with upload/download first"));
}

TEST_CASE("ReLU rejects outputs and gradients of another shape", "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        const Tensor x = b.allocate(Shape{2, 3});
        Tensor y = b.allocate(Shape{3, 2});
        CHECK_THROWS_WITH(b.activation_forward(Activation::relu, x, y),
                          Contains("relu_forward: y has shape [3, 2], expected [2, 3]"));
        Tensor dx = b.allocate(Shape{2, 3});
        CHECK_THROWS_WITH(b.activation_backward(Activation::relu, x, y, dx),
                          Contains("relu_backward: dy has shape [3, 2]"));
    }
}

TEST_CASE("memory calls reject bad sizes", "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        CHECK_THROWS_WITH(b.allocate(Shape{4, 0}), Contains("allocate") && Contains("[4, 0]"));
        Tensor t = b.allocate(Shape{4});
        const std::vector<float> three(3, 1.0f);
        CHECK_THROWS_WITH(b.upload(t, three),
                          Contains("upload: 3 values for a tensor of shape [4]"));
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
    struct NoOps : testing::TestBackend {
        NoOps() : TestBackend("no_ops") {}
    } bare;
    const Tensor x = bare.allocate(Shape{2});
    Tensor y = bare.allocate(Shape{2});
    CHECK_THROWS_MATCHES(bare.activation_forward(Activation::relu, x, y), Unsupported,
                         Catch::Matchers::Message("no_ops does not implement relu_forward"));
}

using testing::one_line;
using testing::run_cli;
using Run = testing::CliRun;

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
    // Half of the fresh seeds a run prints are 2^63 or more: each must replay.
    CHECK(run_cli("check --op relu_forward --shape 7,5 --backend cpu_naive "
                  "--seed 18446744073709551615")
              .status == 0);
    for (const char* command : {"check --op relu_forward", "profile --op relu_forward",
                                "train --data /nonexistent/triptych"})
        for (const char* seed : {"-1", "18446744073709551616", "12x"}) {
            const Run bad_seed = run_cli(std::string(command) + " --seed " + seed);
            CHECK(bad_seed.status != 0);
            CHECK(one_line(bad_seed.stderr_text));
            CHECK_THAT(bad_seed.stderr_text, Contains("--seed takes an integer from 0 to"));
        }
    for (const char* command : {"info", "check", "bench", "report"})
        CHECK(run_cli(std::string(command) + " --help").status == 0);
    // -h is --help in every subcommand, as it is for triptych itself.
    for (const char* command :
         {"info", "check", "profile", "versions", "train", "bench", "report"}) {
        INFO(command);
        CHECK(testing::cli_output(std::string(command) + " -h") ==
              testing::cli_output(std::string(command) + " --help"));
    }
}

TEST_CASE("the dense-layer ops reject tensors of the wrong shape, naming the op and the tensor",
          "[errors]") {
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        INFO(variant);
        const Tensor x = b.allocate(Shape{2, 3});
        const Tensor bias4 = b.allocate(Shape{4});
        Tensor y = b.allocate(Shape{2, 3});
        Tensor y32 = b.allocate(Shape{3, 2});
        CHECK_THROWS_WITH(b.bias_add(x, bias4, y),
                          Contains("bias_add: bias has shape [4], expected [3]"));
        Tensor dbias = b.allocate(Shape{2});
        CHECK_THROWS_WITH(b.bias_backward(x, dbias),
                          Contains("bias_backward: dbias has shape [2], expected [3]"));
        CHECK_THROWS_WITH(b.activation_forward(Activation::sigmoid, x, y32),
                          Contains("sigmoid_forward: y has shape [3, 2], expected [2, 3]"));
        CHECK_THROWS_WITH(b.activation_backward(Activation::tanh, x, y32, y),
                          Contains("tanh_backward: dy has shape [3, 2]"));
        CHECK_THROWS_WITH(b.activation_backward(Activation::gelu, x, x, y32),
                          Contains("gelu_backward: dx has shape [3, 2], expected [2, 3]"));
        CHECK_THROWS_WITH(b.activation_forward(Activation::none, x, y),
                          Contains("Activation::none has no kernel"));
        CHECK_THROWS_WITH(b.softmax_forward(x, y32),
                          Contains("softmax_forward: y has shape [3, 2]"));
        CHECK_THROWS_WITH(b.softmax_backward(x, x, y32),
                          Contains("softmax_backward: dx has shape [3, 2]"));
        CHECK_THROWS_WITH(b.mse_loss(x, y32, y), Contains("mse_loss: target has shape [3, 2]"));
        CHECK_THROWS_WITH(b.sum(Tensor{}), Contains("sum: x is an empty tensor"));
        CHECK_THROWS_WITH(b.mean(Tensor{}), Contains("mean: x is an empty tensor"));

        const Tensor labels3 = b.allocate(Shape{3});
        CHECK_THROWS_WITH(b.softmax_cross_entropy(x, labels3, y),
                          Contains("softmax_cross_entropy: labels has shape [3], expected [2]"));
        const Tensor logits3d = b.allocate(Shape{2, 3, 1});
        Tensor grad3d = b.allocate(Shape{2, 3, 1});
        CHECK_THROWS_WITH(b.softmax_cross_entropy(logits3d, labels3, grad3d),
                          Contains("softmax_cross_entropy: logits must be (rows, classes)"));

        // X (2, 3), W (4, 3): Y must be (2, 4), b (4).
        const Tensor W = b.allocate(Shape{4, 3});
        Tensor Y = b.allocate(Shape{2, 4});
        CHECK_THROWS_WITH(b.dense_forward(x, W, x, Activation::relu, Y),
                          Contains("dense_forward 2x3->4 relu") && Contains("b has shape [2, 3]"));
        const Tensor bias2 = b.allocate(Shape{2});
        CHECK_THROWS_WITH(b.dense_forward_unfused(x, x, bias2, Activation::none, Y),
                          Contains("dense_forward_unfused 2x3->2 none") &&
                              Contains("Y has shape [2, 4], expected [2, 2]"));
    }
}

TEST_CASE("`triptych check --op NAME --shape ...` runs every dense-layer op and rejects bad shapes",
          "[cli]") {
    const std::pair<const char*, const char*> valid[] = {
        {"bias_add", "5,7"},
        {"bias_backward", "5,7"},
        {"sigmoid_forward", "13"},
        {"sigmoid_backward", "3,4"},
        {"tanh_forward", "13"},
        {"tanh_backward", "3,4"},
        {"softmax_forward", "3,17"},
        {"softmax_backward", "2,3,5"},
        {"mse_loss", "9"},
        {"softmax_cross_entropy", "4,10"},
        {"sum", "1000"},
        {"mean", "7,7"},
        {"dense_forward", "3,5,7"},
        {"dense_forward_unfused", "3,5,7,tanh"},
    };
    for (const auto& [op, shape] : valid)
        for (const char* variant : {"cpu_naive", "cpu_eigen_omp"}) {
            const std::string arguments =
                std::string("check --op ") + op + " --shape " + shape + " --backend " + variant;
            INFO(arguments);
            CHECK(run_cli(arguments).status == 0);
        }

    const Run bad_activation = run_cli("check --op dense_forward --shape 2,3,4,swish");
    CHECK(bad_activation.status != 0);
    CHECK(one_line(bad_activation.stderr_text));
    CHECK_THAT(bad_activation.stderr_text,
               Contains("unknown activation 'swish'") && Contains("gelu"));

    const Run bad_rank = run_cli("check --op softmax_cross_entropy --shape 12");
    CHECK(bad_rank.status != 0);
    CHECK_THAT(bad_rank.stderr_text, Contains("ROWS,CLASSES"));

    const Run bad_size = run_cli("check --op softmax_forward --shape 4,0");
    CHECK(bad_size.status != 0);
    CHECK_THAT(bad_size.stderr_text, Contains("softmax_forward") && Contains("'4,0'"));

    // Sizes whose tensors would have more elements than 64 bits count: refused before any input
    // is made (gemm once filled 32 GB of A and B before it found C too large).
    const std::pair<const char*, const char*> too_large[] = {
        {"check --op gemm --shape 4294967296,4294967296,1",
         "C of 4294967296 x 4294967296 has more than 2^63 - 1 elements"},
        {"check --op dense_forward --shape 3037000500,3037000500,1",
         "X of 3037000500 x 3037000500 has more than 2^63 - 1 elements"},
        {"check --op softmax_cross_entropy --shape 3037000500,3037000500",
         "[3037000500, 3037000500] has more than 2^63 - 1 elements"},
        // Sizes are plain integers: no sign, no spaces.
        {"check --op gemm --shape +4,4,4", "not a list of integers"},
        {"check --op gemm --shape '4,4,4 '", "not a list of integers ('4 ' is not one)"},
        {"check --op gemm --shape 9223372036854775808,4,4",
         "the size 9223372036854775808 is beyond 2^63 - 1"},
        // A transposition in lower case, a second activation: named as what they are.
        {"check --op gemm --shape 4,4,4,nt", "ends in 'nt', which is not one of NN, NT, TN, TT"},
        {"check --op dense_forward --shape 4,4,4,relu,relu",
         "one activation at most, got '4,4,4,relu,relu'"},
    };
    for (const auto& [arguments, why] : too_large) {
        INFO(arguments);
        const Run run = run_cli(std::string(arguments) + " --backend cpu_naive");
        CHECK(run.status != 0);
        CHECK(one_line(run.stderr_text));
        CHECK_THAT(run.stderr_text, Contains(why));
        // Nothing on standard output: no seed, no table header above an error.
        CHECK(testing::run_cli_piped(std::string(arguments) + " --backend cpu_naive", "2>/dev/null")
                  .second.empty());
    }
}

TEST_CASE(
    "conv2d rejects stride 0, negative padding and a filter larger than the padded input, in "
    "every pass, naming the values",
    "[errors][conv]") {
    const Conv2dShape s{1, 2, 5, 5, 3, 3, 3};  // valid: x (1, 2, 5, 5), w (3, 2, 3, 3)
    Conv2dShape zero_stride = s, negative_padding = s, large_filter = s;
    zero_stride.stride_w = 0;
    negative_padding.pad_h = -1;
    large_filter.R = 8;
    large_filter.pad_h = large_filter.pad_w = 1;
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        INFO(variant);
        const ConvAlgorithm algorithm =
            b.conv2d_algorithms().empty() ? ConvAlgorithm::direct : b.conv2d_algorithms()[0];
        const Tensor x = b.allocate(s.x_shape()), w = b.allocate(s.w_shape());
        const Tensor bias = b.allocate(s.b_shape()), dy = b.allocate(s.y_shape());
        Tensor y = b.allocate(s.y_shape()), dx = b.allocate(s.x_shape());
        Tensor dw = b.allocate(s.w_shape()), db = b.allocate(s.b_shape());
        CHECK_THROWS_MATCHES(b.conv2d_forward(zero_stride, algorithm, x, w, bias, y),
                             InvalidArgument,
                             Catch::Matchers::Message(
                                 "conv2d N1 C2 H5 W5 K3 R3 S3 stride 1,0 pad 0,0: stride must be "
                                 ">= 1, got 1,0"));
        CHECK_THROWS_WITH(b.conv2d_backward_data(zero_stride, algorithm, dy, w, dx),
                          Contains("stride must be >= 1, got 1,0"));
        CHECK_THROWS_WITH(b.conv2d_backward_weights(zero_stride, algorithm, x, dy, dw, db),
                          Contains("stride must be >= 1, got 1,0"));
        CHECK_THROWS_WITH(b.conv2d_forward(negative_padding, algorithm, x, w, bias, y),
                          Contains("padding must be >= 0, got -1,0"));
        CHECK_THROWS_WITH(b.conv2d_backward_data(large_filter, algorithm, dy, w, dx),
                          Contains("filter 8x3 is larger than the padded input 7x7"));
    }
}

TEST_CASE(
    "a stride that moves no window may be any size: every variant and version computes the "
    "one window, in every pass",
    "[cli][conv][pool]") {
    // Strides of billions once overflowed the GPU kernels' 32-bit arithmetic: a segfault in
    // gpu_tiled's direct convolution (its tile's row width), wrong values and a division by zero
    // in its pooling and in its implicit GEMM. With P = Q = 1 the stride never moves the window.
    for (const char* arguments : {
             "check --op conv2d --shape 1,1,4,4,1,1,1,143165577,143165577,0,0",
             "check --op conv2d --shape 2,3,4,5,2,3,3,8589934593,1,0,1",
             "check --op max_pool2d --shape 1,1,4,4,2,2,2147483648,2147483648,0,0",
             "check --op avg_pool2d --shape 2,2,4,4,3,3,4294967296,4294967296,1,1",
         }) {
        INFO(arguments);
        const Run run = run_cli(std::string(arguments) + " --seed 1");
        CHECK(run.status == 0);
        CHECK(run.stderr_text.empty());
    }
}

TEST_CASE("conv2d names both channel counts when the input and the filters disagree",
          "[errors][conv]") {
    const Conv2dShape s{1, 2, 5, 5, 3, 3, 3};
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        INFO(variant);
        const ConvAlgorithm algorithm =
            b.conv2d_algorithms().empty() ? ConvAlgorithm::direct : b.conv2d_algorithms()[0];
        const Tensor x = b.allocate(s.x_shape()), bias = b.allocate(s.b_shape());
        const Tensor dy = b.allocate(s.y_shape());
        Tensor y = b.allocate(s.y_shape()), dx = b.allocate(s.x_shape());
        Tensor w4 = b.allocate(Shape{3, 4, 3, 3}), db = b.allocate(s.b_shape());
        const auto names_both = Contains("the input has 2 channels but the filters have 4");
        CHECK_THROWS_WITH(b.conv2d_forward(s, algorithm, x, w4, bias, y),
                          Contains("conv2d_forward") && names_both);
        CHECK_THROWS_WITH(b.conv2d_backward_data(s, algorithm, dy, w4, dx),
                          Contains("conv2d_backward_data") && names_both);
        CHECK_THROWS_WITH(b.conv2d_backward_weights(s, algorithm, x, dy, w4, db),
                          Contains("conv2d_backward_weights") && names_both);
    }
}

TEST_CASE("pooling rejects padding of more than half the window, naming the op and the values",
          "[errors][pool]") {
    // Window 3x3 with padding 2: a corner window would cover nothing but padding.
    const Pool2dShape s{1, 1, 6, 6, 3, 3, 2, 2, 2, 2};
    const Shape x_shape{1, 1, 6, 6}, y_shape{1, 1, 4, 4};
    const std::string why = "padding 2,2 is more than half the window 3,3";
    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        INFO(variant);
        const Tensor x = b.allocate(x_shape), dy = b.allocate(y_shape);
        Tensor y = b.allocate(y_shape), argmax = b.allocate(y_shape), dx = b.allocate(x_shape);
        CHECK_THROWS_WITH(b.max_pool2d_forward(s, x, y, argmax),
                          Contains("max_pool2d_forward") && Contains(why));
        CHECK_THROWS_WITH(b.max_pool2d_backward(s, dy, argmax, dx),
                          Contains("max_pool2d_backward") && Contains(why));
        CHECK_THROWS_WITH(b.avg_pool2d_forward(s, x, y),
                          Contains("avg_pool2d_forward") && Contains(why));
        CHECK_THROWS_MATCHES(
            b.avg_pool2d_backward(s, dy, dx), InvalidArgument,
            Catch::Matchers::Message(
                "avg_pool2d_backward N1 C1 H6 W6 window 3x3 stride 2,2 pad 2,2: " + why));
    }
}

TEST_CASE("a variant asked for a conv2d algorithm it lacks throws Unsupported naming those it has",
          "[errors][conv]") {
    const Backend& naive = backend("cpu_naive");
    const Conv2dShape s{1, 1, 4, 4, 1, 3, 3};
    const Tensor x = naive.allocate(s.x_shape()), w = naive.allocate(s.w_shape());
    const Tensor bias = naive.allocate(s.b_shape());
    Tensor y = naive.allocate(s.y_shape());
    CHECK_THROWS_MATCHES(naive.conv2d_forward(s, ConvAlgorithm::fft, x, w, bias, y), Unsupported,
                         Catch::Matchers::Message(
                             "cpu_naive has no fft algorithm for conv2d_forward; it has: direct"));

    for (const std::string& variant : backend_names()) {
        const Backend& b = backend(variant);
        const std::vector<ConvAlgorithm> has = b.conv2d_algorithms();
        if (has.empty()) continue;
        std::string names;
        for (ConvAlgorithm a : has) names += (names.empty() ? "" : ", ") + to_string(a);
        const Tensor bx = b.allocate(s.x_shape()), dy = b.allocate(s.y_shape());
        Tensor dx = b.allocate(s.x_shape());
        for (ConvAlgorithm a : conv_algorithms) {
            if (std::find(has.begin(), has.end(), a) != has.end()) continue;
            INFO(variant << " asked for " << to_string(a));
            CHECK_THROWS_MATCHES(b.conv2d_backward_data(s, a, dy, b.allocate(s.w_shape()), dx),
                                 Unsupported,
                                 Catch::Matchers::Message(variant + " has no " + to_string(a) +
                                                          " algorithm for conv2d_backward_data; "
                                                          "it has: " +
                                                          names));
        }
    }
}

TEST_CASE(
    "`triptych check --op conv2d|max_pool2d|avg_pool2d --shape ...` runs every pass and rejects "
    "bad shapes, naming the op and the text",
    "[cli][conv][pool]") {
    const std::pair<const char*, const char*> valid[] = {
        {"conv2d", "2,3,9,8,4,3,3"},         {"conv2d", "1,2,9,8,3,3,2,2,1"},
        {"conv2d", "1,2,9,8,3,3,2,3,1,1,0"}, {"max_pool2d", "2,3,9,8,3,2"},
        {"max_pool2d", "2,3,9,8,3,2,1"},     {"avg_pool2d", "1,2,9,8,2,3,2,1,1,1"},
    };
    for (const auto& [op, shape] : valid)
        for (const char* variant : {"cpu_naive", "cpu_eigen_omp"}) {
            const std::string arguments =
                std::string("check --op ") + op + " --shape " + shape + " --backend " + variant;
            INFO(arguments);
            CHECK(run_cli(arguments).status == 0);
        }

    const std::pair<const char*, const char*> invalid[] = {
        {"check --op conv2d --shape 1,2,3", "N,C,H,W,K,R,S[,STRIDE,PAD]"},
        {"check --op conv2d --shape 1,1,5,5,1,3,3,0,0", "stride must be >= 1"},
        {"check --op conv2d --shape 1,1,5,5,1,3,x", "not a list of integers"},
        {"check --op max_pool2d --shape 1,1,6,6,3,2,2", "more than half the window"},
        {"check --op avg_pool2d --shape 1,1,6,6,3", "N,C,H,W,WINDOW,STRIDE[,PAD]"},
        // Paddings and planes whose arithmetic would overflow 64 bits (they crashed once).
        {"check --op conv2d --shape 1,1,100,100,1,3,3,1,9223372036854775807",
         "(H 100 + 2 x 9223372036854775807, W 100 + 2 x 9223372036854775807) has more than "
         "2^31 - 1 rows or columns"},
        {"check --op avg_pool2d --shape 1,1,1,2147483647,2,2,1",
         "(H 1 + 2 x 1, W 2147483647 + 2 x 1) has more than 2^31 - 1 rows or columns"},
        {"check --op max_pool2d --shape 1,1,100,100,2,2,9223372036854775807",
         "more than half the window"},
        {"check --op avg_pool2d --shape 1,1,2147483646,2147483646,2,2",
         "a plane of 2147483646 x 2147483646 elements is more than 2^24"},
    };
    for (const auto& [arguments, why] : invalid) {
        INFO(arguments);
        const std::string text(arguments);
        const std::string op = text.substr(11, text.find(' ', 11) - 11);
        const std::string shape = text.substr(text.rfind(' ') + 1);
        const Run run = run_cli(arguments);
        CHECK(run.status != 0);
        CHECK(one_line(run.stderr_text));
        CHECK_THAT(run.stderr_text, Contains(op) && Contains("'" + shape + "'") && Contains(why));
    }
}

// cpu_eigen_omp's libraries take sizes and strides as int: a size of 2^31 or more would reach them
// cut to its low 32 bits, and the product would be wrong or read out of bounds. Its kernels refuse
// such a shape before they read or write anything, so they are called here with null pointers
// rather than through Backend with tensors of the 8 GiB and more those shapes need.
TEST_CASE("cpu_eigen_omp refuses sizes its libraries take as int, naming the op and the size",
          "[errors][conv]") {
    constexpr std::int64_t too_many = std::int64_t{1} << 31;
    const std::string limit = "which takes sizes and strides as int (at most 2^31 - 1)";
    const auto refuses = [&](const std::string& op, const std::string& size, const char* library,
                             const auto& call) {
        INFO(op);
        CHECK_THROWS_MATCHES(
            call(), Unsupported,
            Catch::Matchers::Message(op + ": " + size + ", but cpu_eigen_omp runs this on " +
                                     library + ", " + limit));
    };
    const auto conv_refuses = [&](const Conv2dShape& s, ConvAlgorithm a, const std::string& size,
                                  const char* library) {
        const std::string shape = s.str() + " " + to_string(a);
        refuses("conv2d_forward " + shape, size, library, [&] {
            default_kernel("cpu_eigen_omp", ops::conv2d_forward)(s, a, nullptr, nullptr, nullptr,
                                                                 nullptr);
        });
        refuses("conv2d_backward_data " + shape, size, library, [&] {
            default_kernel("cpu_eigen_omp", ops::conv2d_backward_data)(s, a, nullptr, nullptr,
                                                                       nullptr);
        });
        refuses("conv2d_backward_weights " + shape, size, library, [&] {
            default_kernel("cpu_eigen_omp", ops::conv2d_backward_weights)(s, a, nullptr, nullptr,
                                                                          nullptr, nullptr);
        });
    };

    // 2^21 planes of a 1080-row grid (fft_length(1026)): FFTW's plans would step 2^21 * 1080
    // complex numbers from one column of a plane to the next.
    conv_refuses(Conv2dShape{1, 1 << 21, 1024, 1024, 1, 3, 3, 1, 1, 1, 1}, ConvAlgorithm::fft,
                 "planes x Fh is " + std::to_string((std::int64_t{1} << 21) * 1080), "FFTW");
#if defined(EIGEN_USE_BLAS)  // without it, Eigen's own products count in 64 bits
    const auto gemm_refuses = [&](const GemmShape& s, const std::string& size) {
        refuses("gemm " + s.str(), size, "OpenBLAS",
                [&] { default_kernel("cpu_eigen_omp", ops::gemm)(s, nullptr, nullptr, nullptr); });
    };
    gemm_refuses(GemmShape{too_many, 1, 1}, "M is 2147483648");
    gemm_refuses(GemmShape{1, too_many, 1, true}, "N is 2147483648");
    gemm_refuses(GemmShape{1, 1, too_many, false, true}, "K is 2147483648");
    const DenseShape dense{1, too_many, 10, Activation::relu};
    refuses("dense_forward " + dense.str(), "in is 2147483648", "OpenBLAS", [&] {
        default_kernel("cpu_eigen_omp", ops::dense_forward)(dense, nullptr, nullptr, nullptr,
                                                            nullptr);
    });
    // Explicit im2col (stride 2): C*R*S = 2^28 * 9 rows of col.
    conv_refuses(Conv2dShape{1, 1 << 28, 3, 3, 1, 3, 3, 2, 2}, ConvAlgorithm::im2col,
                 "C*R*S is " + std::to_string((std::int64_t{1} << 28) * 9), "OpenBLAS");
    // Its stride-1 form, the shifted GEMMs: a padded plane of 46344 x 46343 floats between two
    // channels (P + R rows of Q + S - 1).
    conv_refuses(Conv2dShape{1, 16, 46341, 46341, 16, 3, 3, 1, 1, 1, 1}, ConvAlgorithm::im2col,
                 "a padded plane is " + std::to_string(std::int64_t{46344} * 46343), "OpenBLAS");
    conv_refuses(Conv2dShape{1, too_many, 4, 4, 1, 3, 3, 1, 1, 1, 1}, ConvAlgorithm::winograd,
                 "C is 2147483648", "OpenBLAS");
#endif
}

// Run alone by CTest (host_guard_stops_overrun, _underrun), which expects HostBackend's message:
// a write outside the buffer stops the program as the buffer is freed, so these cannot run among
// the others.
TEST_CASE("a write past the end of a host buffer stops the program as the buffer is freed",
          "[.overrun]") {
    {
        Tensor t = backend("cpu_naive").allocate(Shape{5});
        t.data()[5] = 1.0f;  // the first float of the guard after it
    }
    FAIL("the write past the end of the buffer went unnoticed");
}

TEST_CASE("a write before the start of a host buffer stops the program as the buffer is freed",
          "[.underrun]") {
    {
        Tensor t = backend("cpu_naive").allocate(Shape{5});
        t.data()[-1] = 2.0f;  // the last float of the guard before it
    }
    FAIL("the write before the start of the buffer went unnoticed");
}
