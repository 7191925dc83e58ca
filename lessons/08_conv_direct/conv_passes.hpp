// The three conv2d passes as rows of a lesson table, shared by lessons 08 (direct), 09 (im2col)
// and 10 (FFT): each pass's check (check/crosscheck.hpp), run the way lessons::run_checks runs one
// (a warm-up, then the timed call), and its rows printed with a time, a rate and a verdict.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "lessons/lesson.hpp"

namespace triptych::lessons {

// A named layer of the lessons' tables.
struct Layer {
    const char* name;
    Conv2dShape shape;
};

// The layers lessons 08 and 09 run on every variant: LeNet-5's first convolution on a batch of 8,
// and a stride-2 layer that halves its input (whose halo is larger: the tile's outputs read every
// other input).
inline std::vector<Layer> table_layers() {
    return {
        {"conv1",
         {.N = 8, .C = 1, .H = 28, .W = 28, .K = 6, .R = 5, .S = 5, .pad_h = 2, .pad_w = 2}},
        {"down",
         {.N = 8,
          .C = 3,
          .H = 32,
          .W = 32,
          .K = 8,
          .R = 3,
          .S = 3,
          .stride_h = 2,
          .stride_w = 2,
          .pad_h = 1,
          .pad_w = 1}},
    };
}

// More layers, for the lessons' counts only (not run): LeNet-5's second convolution, a 3x3 layer
// of ResNet-50's first stage and its 7x7 stem.
inline std::vector<Layer> counted_layers() {
    return {
        {"conv2", {.N = 8, .C = 6, .H = 14, .W = 14, .K = 16, .R = 5, .S = 5}},
        {"resnet",
         {.N = 1, .C = 64, .H = 56, .W = 56, .K = 64, .R = 3, .S = 3, .pad_h = 1, .pad_w = 1}},
        {"stem",
         {.N = 1,
          .C = 3,
          .H = 224,
          .W = 224,
          .K = 64,
          .R = 7,
          .S = 7,
          .stride_h = 2,
          .stride_w = 2,
          .pad_h = 3,
          .pad_w = 3}},
    };
}

enum class ConvPass { forward, backward_data, backward_weights };
constexpr ConvPass conv_passes[] = {ConvPass::forward, ConvPass::backward_data,
                                    ConvPass::backward_weights};

inline const char* pass_name(ConvPass pass) {
    switch (pass) {
        case ConvPass::forward:
            return "forward";
        case ConvPass::backward_data:
            return "backward_data";
        case ConvPass::backward_weights:
            return "backward_weights";
    }
    return "";
}

// Whether `b` implements `algorithm` (Backend::conv2d_algorithms).
inline bool has_algorithm(const Backend& b, ConvAlgorithm algorithm) {
    const std::vector<ConvAlgorithm> algorithms = b.conv2d_algorithms();
    return std::find(algorithms.begin(), algorithms.end(), algorithm) != algorithms.end();
}

// Prints each variant's conv2d algorithms (Backend::conv2d_algorithms), a line each.
inline void print_conv_algorithms() {
    std::puts("Algorithms of each variant (Backend::conv2d_algorithms):");
    for (const std::string& name : backend_names()) {
        std::string list;
        for (const ConvAlgorithm a : backend(name).conv2d_algorithms())
            list += (list.empty() ? "" : ", ") + to_string(a);
        std::printf("  %-14s %s\n", name.c_str(), list.c_str());
    }
}

// One checked call of a pass: backward_weights gives two results, dw then db.
inline std::vector<check::CaseResult> check_pass(const Backend& b, ConvPass pass,
                                                 const Conv2dShape& s, ConvAlgorithm algorithm,
                                                 std::uint64_t seed) {
    switch (pass) {
        case ConvPass::forward:
            return {check::check_conv2d_forward(b, s, algorithm, seed)};
        case ConvPass::backward_data:
            return {check::check_conv2d_backward_data(b, s, algorithm, seed)};
        case ConvPass::backward_weights:
            return check::check_conv2d_backward_weights(b, s, algorithm, seed);
    }
    return {};
}

// Every result of the pass's timed call (lessons::run_checks: a warm-up first), or the one failed
// result made of an error. Unsupported propagates.
inline std::vector<check::CaseResult> run_pass(const Backend& b, ConvPass pass,
                                               const Conv2dShape& s, ConvAlgorithm algorithm,
                                               std::uint64_t seed) {
    return run_checks(b, [&] { return check_pass(b, pass, s, algorithm, seed); });
}

// Prints the rows of one pass on `b`: `label` (the lesson's own first columns, already padded),
// the variant, device, time and GFLOP/s (the definition's 2*N*K*P*Q*C*R*S multiply-adds, whatever
// the algorithm), then the verdict; backward_weights adds a "(db)" row with only its verdict.
// A pass the variant lacks prints "not implemented". Returns false if a row failed.
inline bool print_pass_rows(const Backend& b, ConvPass pass, const Conv2dShape& s,
                            ConvAlgorithm algorithm, const std::string& label, std::uint64_t seed) {
    try {
        const std::vector<check::CaseResult> results = run_pass(b, pass, s, algorithm, seed);
        bool passed = true;
        for (const check::CaseResult& r : results) {
            const bool first = &r == &results.front();
            const std::string time = first ? time_text(r.seconds, b.device_kind()) : "";
            const std::string rate = first ? rate_text(s.flops(), r.seconds, b.device_kind()) : "";
            std::printf("%s %-14s %-28s %11s %9s  %s\n",
                        first ? label.c_str() : std::string(label.size(), ' ').c_str(),
                        first ? b.name().c_str() : "  (db)", first ? r.device.c_str() : "",
                        time.c_str(), rate.c_str(), verdict(r).c_str());
            passed = passed && r.comparison.passed;
        }
        return passed;
    } catch (const Unsupported& e) {  // a pass the variant does not have yet
        std::printf("%s %-14s %-28s %11s %9s  not implemented: %s\n", label.c_str(),
                    b.name().c_str(), b.device().c_str(), "", "", e.what());
        return true;
    }
}

// The header matching print_pass_rows, after the lesson's own `label` columns.
inline void print_pass_header(const std::string& label) {
    std::printf("%s %-14s %-28s %11s %9s  %s\n", label.c_str(), "variant", "device", "time",
                "GFLOP/s", "vs float64 reference");
}

}  // namespace triptych::lessons
