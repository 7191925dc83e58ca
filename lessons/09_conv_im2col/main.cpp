// Lesson 09: convolution as matrix multiplication, im2col + GEMM (see README.md next to this
// file).
//
// First unrolls a 4x4 image into its im2col matrix for a 3x3 filter, printed, and counts how
// often each input is copied into it. Then prints the memory im2col costs (the col matrix is
// about R*S / stride^2 times the input) and the GEMM each pass becomes, for a few layers. Then runs
// the three conv2d passes by the direct, the im2col and (GPU panels) the implicit-GEMM algorithm
// on every variant that has them, each checked against the float64 reference, with its time:
// lesson 08's two layers, and a 16-channel 3x3 layer at stride 1, for which cpu_eigen_omp's im2col
// builds no col (the shifted form). Exits 1 if any variant is wrong.
//
//   lesson_09_conv_im2col [SEED]
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "cpu/eigen_omp/conv_shifted.hpp"
#include "lessons/08_conv_direct/conv_passes.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

using lessons::Layer;

namespace {

// The input x[h, w] that filter tap (r, t) multiplies for output (p, q), or nothing (-1) in the
// padding: the entry of col at row r*S + t, column p*Q + q, for a one-channel image.
std::int64_t col_source(const Conv2dShape& s, std::int64_t r, std::int64_t t, std::int64_t p,
                        std::int64_t q) {
    const std::int64_t h = p * s.stride_h + r - s.pad_h, w = q * s.stride_w + t - s.pad_w;
    return h < 0 || h >= s.H || w < 0 || w >= s.W ? -1 : h * s.W + w;
}

// The col matrix of a 4x4 image holding 1 .. 16 (x[h, w] = 4h + w + 1) for a 3x3 filter.
void print_col_matrix() {
    const Conv2dShape s{.H = 4, .W = 4, .R = 3, .S = 3};
    std::puts("x (1 channel, 4x4), each value its position + 1:");
    for (std::int64_t h = 0; h < s.H; ++h) {
        std::printf("   ");
        for (std::int64_t w = 0; w < s.W; ++w) std::printf(" %3lld", (long long)(h * s.W + w + 1));
        std::puts("");
    }
    std::printf("col (C*R*S = 9 rows, P*Q = %lld columns) for a 3x3 filter, stride 1, pad 0:\n",
                (long long)(s.P() * s.Q()));
    std::printf("    tap (r,s)  ");
    for (std::int64_t p = 0; p < s.P(); ++p)
        for (std::int64_t q = 0; q < s.Q(); ++q)
            std::printf(" (%lld,%lld)", (long long)p, (long long)q);
    std::puts("   <- output (p,q)");
    for (std::int64_t r = 0; r < s.R; ++r)
        for (std::int64_t t = 0; t < s.S; ++t) {
            std::printf("    (%lld,%lld)      ", (long long)r, (long long)t);
            for (std::int64_t p = 0; p < s.P(); ++p)
                for (std::int64_t q = 0; q < s.Q(); ++q)
                    std::printf(" %5lld", (long long)col_source(s, r, t, p, q) + 1);
            std::puts("");
        }
    std::puts(
        "  y (K, P*Q) = W (K, 9) * col: output (p,q) is filter k's row dotted with column (p,q).");
}

// How many times each input appears in col, for stride 1 and pad `pad`.
void print_copies(std::int64_t pad) {
    const Conv2dShape s{.H = 4, .W = 4, .R = 3, .S = 3, .pad_h = pad, .pad_w = pad};
    std::vector<std::int64_t> copies(static_cast<std::size_t>(s.H * s.W), 0);
    std::int64_t zeros = 0;
    for (std::int64_t r = 0; r < s.R; ++r)
        for (std::int64_t t = 0; t < s.S; ++t)
            for (std::int64_t p = 0; p < s.P(); ++p)
                for (std::int64_t q = 0; q < s.Q(); ++q) {
                    const std::int64_t source = col_source(s, r, t, p, q);
                    if (source < 0)
                        ++zeros;
                    else
                        ++copies[source];
                }
    const std::int64_t entries = s.R * s.S * s.P() * s.Q();
    std::printf(
        "copies of each input in col, pad %lld (col: %lld entries = %lld copies + %lld "
        "zeros of padding, %.2fx the 16 inputs):\n",
        (long long)pad, (long long)entries, (long long)(entries - zeros), (long long)zeros,
        double(entries) / double(s.H * s.W));
    for (std::int64_t h = 0; h < s.H; ++h) {
        std::printf("   ");
        for (std::int64_t w = 0; w < s.W; ++w)
            std::printf(" %3lld", (long long)copies[h * s.W + w]);
        std::puts("");
    }
}

double megabytes(double floats) { return floats * 4.0 / 1e6; }

// x and col per image, and their ratio.
void print_memory(const Layer& layer) {
    const Conv2dShape& s = layer.shape;
    const double x = double(s.C * s.H * s.W), col = double(s.C * s.R * s.S * s.P() * s.Q());
    std::printf("%-7s %-44s %9.3f %9.3f %7.2fx %7.2f %10.1f\n", layer.name, s.str().c_str(),
                megabytes(x), megabytes(col), col / x,
                double(s.R * s.S) / double(s.stride_h * s.stride_w), megabytes(64 * col));
}

// The GEMM of each pass, for one image (M x N x K: an (M, K) matrix times a (K, N) one).
void print_gemms(const Layer& layer) {
    const Conv2dShape& s = layer.shape;
    const long long K = s.K, CRS = s.C * s.R * s.S, PQ = s.P() * s.Q();
    std::printf("%-7s  %4lld x %5lld x %4lld     %4lld x %5lld x %4lld     %4lld x %5lld x %5lld\n",
                layer.name, K, PQ, CRS, CRS, PQ, K, K, CRS, PQ);
}

// The table's first columns: the pass, the layer and the algorithm.
std::string label(const char* pass, const char* layer, const std::string& algorithm) {
    char text[48];
    std::snprintf(text, sizeof text, "%-17s %-6s %-9s", pass, layer, algorithm.c_str());
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        // The table's layers and the counted ones, as in lesson 08, and VGG-16's second layer.
        const std::vector<Layer> layers = [] {
            std::vector<Layer> run = lessons::table_layers();
            run.push_back({"deep",
                           {.N = 2,
                            .C = 16,
                            .H = 14,
                            .W = 14,
                            .K = 16,
                            .R = 3,
                            .S = 3,
                            .pad_h = 1,
                            .pad_w = 1}});
            return run;
        }();
        const std::vector<Layer> counted = [] {
            std::vector<Layer> all = lessons::counted_layers();
            all.push_back({"vgg",
                           {.N = 1,
                            .C = 64,
                            .H = 224,
                            .W = 224,
                            .K = 64,
                            .R = 3,
                            .S = 3,
                            .pad_h = 1,
                            .pad_w = 1}});
            return all;
        }();

        std::puts("");
        print_col_matrix();
        print_copies(0);
        print_copies(1);

        std::printf("\nThe memory im2col costs, per image:\n%-7s %-44s %9s %9s %8s %7s %10s\n",
                    "layer", "shape", "x MB", "col MB", "col/x", "RS/st^2", "col MB x64");
        for (const auto* list : {&layers, &counted})
            for (const Layer& layer : *list) print_memory(layer);
        std::puts(
            "col/x is R*S / stride^2, less what the edges lose (a window hanging into the padding\n"
            "still has R*S entries, some of them zeros). x64: a batch of 64 at once.");

        std::printf("\nThe GEMM of each pass, per image (M x N x K):\n%-7s  %-22s  %-22s  %s\n",
                    "layer", "forward W*col", "backward_data W^T*dY", "backward_weights dY*col^T");
        for (const auto* list : {&layers, &counted})
            for (const Layer& layer : *list) print_gemms(layer);
        std::puts(
            "with K filters, C*R*S the taps of one filter, P*Q the outputs of one image. A "
            "variant\n"
            "that puts several images in one GEMM multiplies N (forward, backward_data) or K\n"
            "(backward_weights: dw sums over the images) by their number.");

        std::puts("");
        lessons::print_conv_algorithms();
        std::puts(
            "\ncpu_eigen_omp's im2col builds col only where it must: at stride 1 with 16 channels\n"
            "or more in and out it multiplies shifted views of the padded image instead\n"
            "(cpu_eigen_omp::shifted_gemm_fits, the README's shifted form):");
        for (const Layer& layer : layers)
            std::printf("  %-6s %s\n", layer.name,
                        cpu_eigen_omp::shifted_gemm_fits(layer.shape)
                            ? "shifted: one GEMM per filter tap, no col"
                            : "explicit: im2col, then one GEMM");
        const bool any_simulated = lessons::warn_if_simulated(
            "!!! They do not show how im2col compares on a GPU. GPU figures come from\n"
            "!!! `triptych report` on a GPU.\n");

        std::puts("");
        lessons::print_pass_header(label("pass", "layer", "algorithm"));
        bool all_passed = true;
        for (const lessons::ConvPass pass : lessons::conv_passes)
            for (const Layer& layer : layers)
                for (const ConvAlgorithm algorithm :
                     {ConvAlgorithm::direct, ConvAlgorithm::im2col, ConvAlgorithm::implicit_gemm})
                    for (const std::string& name : backend_names()) {
                        const Backend& b = backend(name);
                        if (!lessons::has_algorithm(b, algorithm)) continue;  // listed above
                        all_passed =
                            lessons::print_pass_rows(
                                b, pass, layer.shape, algorithm,
                                label(lessons::pass_name(pass), layer.name, to_string(algorithm)),
                                seed) &&
                            all_passed;
                    }
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "GFLOP/s = 2*N*K*P*Q*C*R*S (the multiply-adds of the definition, whatever the\n"
            "algorithm) / the time of one call; bench/ has the real measurements.");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 09: %s\n", error.what());
        return 1;
    }
}
