// Lesson 08: the direct convolution, from the definition to a shared-memory tile with its halo
// (see README.md next to this file).
//
// First counts the global-memory loads each output costs without a tile (gpu_naive: every term
// of the sum fetched by the thread that needs it) and with gpu_tiled's tile (each block stages
// the input its outputs read, tile plus halo, and its filters' weights, once per input channel),
// for a few layers. Then runs the three conv2d passes by the direct algorithm on every variant,
// each checked against the float64 reference, with its time. Exits 1 if any variant is wrong.
//
//   lesson_08_conv_direct [SEED]
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "lessons/08_conv_direct/conv_passes.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

using lessons::Layer;

namespace {

// gpu_tiled's forward tile (gpu/tiled/conv2d.cu, conv2d_forward_kernel): a block computes a
// 16 x 16 tile of outputs for 8 filters, for strides up to 5 and filters up to 16 x 16 (beyond,
// the tile shrinks or the filter is staged in chunks; the layers below need neither).
constexpr std::int64_t tile_side = 16;
constexpr std::int64_t filters_per_block = 8;

// The loads per output and input channel, with and without the tile, for one layer.
void print_loads(const Layer& layer) {
    const Conv2dShape& s = layer.shape;
    const std::int64_t taps = s.R * s.S;
    const std::int64_t filters = std::min(filters_per_block, s.K);  // the block's real filters
    // The input rows and columns a tile of outputs reads: its own, stride apart, plus the halo.
    const std::int64_t rows = (tile_side - 1) * s.stride_h + s.R;
    const std::int64_t cols = (tile_side - 1) * s.stride_w + s.S;
    const double outputs = double(tile_side * tile_side * filters);  // per block
    const double naive = 2.0 * double(taps);  // an input and a weight per tap
    const double tiled = double(rows * cols + filters * taps) / outputs;
    std::printf("%-7s %2lldx%-2lld %6lld  %7.0f  %5lldx%-5lld %5.2f  %8.3f  %7.0fx\n", layer.name,
                (long long)s.R, (long long)s.S, (long long)s.stride_h, naive, (long long)rows,
                (long long)cols, double(rows * cols) / double(tile_side * tile_side), tiled,
                naive / tiled);
}

// The table's first columns: the pass and the layer.
std::string label(const char* pass, const char* layer) {
    char text[32];
    std::snprintf(text, sizeof text, "%-17s %-6s", pass, layer);
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        const std::vector<Layer> layers = lessons::table_layers();
        const std::vector<Layer> counted = lessons::counted_layers();

        std::puts("\nLayers:");
        for (const auto* list : {&layers, &counted})
            for (const Layer& layer : *list)
                std::printf("  %-7s %s -> P %lld, Q %lld\n", layer.name, layer.shape.str().c_str(),
                            (long long)layer.shape.P(), (long long)layer.shape.Q());

        std::printf(
            "\nGlobal loads per output, per input channel (forward; a block = %lldx%lld outputs "
            "x %lld filters):\n",
            (long long)tile_side, (long long)tile_side, (long long)filters_per_block);
        std::printf("%-7s %5s %6s  %7s  %11s %5s  %8s  %8s\n", "layer", "RxS", "stride", "naive",
                    "input tile", "/16^2", "tiled", "reuse");
        for (const auto* list : {&layers, &counted})
            for (const Layer& layer : *list) print_loads(layer);
        std::puts(
            "naive: R*S inputs + R*S weights, each fetched by the thread that needs it.\n"
            "tiled: the block's input tile (its outputs' inputs plus the halo) and its filters'\n"
            "weights, each fetched once, shared by every output of the block. /16^2: input tile\n"
            "floats per output of one filter (1 would be no halo). Full tiles; a tile at the\n"
            "image's edge computes fewer outputs for the same loads.");

        const bool any_simulated = lessons::warn_if_simulated(
            "!!! They do not show what the tile saves on a GPU. GPU figures come from\n"
            "!!! `triptych report` on a GPU.\n");

        std::puts("");
        lessons::print_pass_header(label("pass", "layer"));
        bool all_passed = true;
        for (const lessons::ConvPass pass : lessons::conv_passes)
            for (const Layer& layer : layers)
                for (const std::string& name : backend_names())
                    all_passed = lessons::print_pass_rows(
                                     backend(name), pass, layer.shape, ConvAlgorithm::direct,
                                     label(lessons::pass_name(pass), layer.name), seed) &&
                                 all_passed;
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "GFLOP/s = 2*N*K*P*Q*C*R*S (the multiply-adds of the definition, the same for all "
            "three\n"
            "passes) / the time of one call; bench/ has the real measurements.");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 08: %s\n", error.what());
        return 1;
    }
}
