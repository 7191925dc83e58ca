// Lesson 11: max and average pooling, forward and backward (see README.md next to this file).
//
// First runs every variant on a 4x4 plane chosen to show the rules: max pooling with ties (the
// first element of the window in row-major order wins, in y and in argmax), overlapping windows
// whose backward pass must add (+=) the gradients of every window that picked the same element,
// and average pooling with padding, which divides by the input elements a window covers. Then
// runs the four pooling ops on every variant, each checked against the float64 reference, with
// its time and GB/s. Exits 1 if any variant is wrong.
//
//   lesson_11_pooling [SEED]
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.hpp"
#include "common/registry.hpp"
#include "cpu/naive/pool2d.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

// A 4x4 plane with ties: 3 twice in the top-left window, 5 twice in the bottom-left one, 4 three
// times in the bottom-right one; and 5 at (2, 1) the largest of every 3x3 window.
const std::vector<float> plane{1, 3, 2, 2,  //
                               3, 0, 1, 0,  //
                               0, 5, 4, 4,  //
                               5, 2, 4, 1};
const Shape plane_shape{1, 1, 4, 4};

void print_plane(const char* label, const std::vector<float>& values, std::int64_t cols) {
    std::printf("  %-16s", label);
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0 && std::int64_t(i) % cols == 0) std::printf(" |");
        std::printf(" %4g", values[i] + 0.0f);  // + 0.0f: no "-0"
    }
    std::puts("");
}

// Whether `values` equal the float64 reference's `expected` exactly (these ops only move and add
// small integers). Prints " FAIL: differs from the reference" otherwise.
bool same(const std::vector<float>& values, const std::vector<double>& expected) {
    for (std::size_t i = 0; i < values.size(); ++i)
        if (double(values[i]) != expected[i]) {
            std::printf("  FAIL: differs from the float64 reference at index %zu\n", i);
            return false;
        }
    return true;
}

// y and argmax of max_pool2d_forward, then dx of max_pool2d_backward for `dy`, on one variant,
// each compared with the reference. Returns false if one differs or the variant failed.
bool show_max_pool(const Backend& b, const Pool2dShape& s, const std::vector<float>& dy) {
    const std::vector<double> x(plane.begin(), plane.end()), wide_dy(dy.begin(), dy.end());
    std::vector<double> ref_y(dy.size()), ref_argmax(dy.size()), ref_dx(plane.size());
    cpu_naive::max_pool2d_forward<double>(s, x.data(), ref_y.data(), ref_argmax.data());
    cpu_naive::max_pool2d_backward<double>(s, wide_dy.data(), ref_argmax.data(), ref_dx.data());
    try {
        const Tensor X = b.upload(plane_shape, plane);
        Tensor y = b.allocate(s.y_shape()), argmax = b.allocate(s.y_shape());
        b.max_pool2d_forward(s, X, y, argmax);
        Tensor dx = b.allocate(s.x_shape());
        b.max_pool2d_backward(s, b.upload(s.y_shape(), dy), argmax, dx);
        std::printf("  %s\n", b.name().c_str());
        const std::vector<float> out_y = b.download(y), out_argmax = b.download(argmax),
                                 out_dx = b.download(dx);
        print_plane("y", out_y, s.Q());
        print_plane("argmax", out_argmax, s.Q());
        print_plane("dx", out_dx, s.W);
        return same(out_y, ref_y) && same(out_argmax, ref_argmax) && same(out_dx, ref_dx);
    } catch (const Unsupported& e) {
        std::printf("  %-16s not implemented: %s\n", b.name().c_str(), e.what());
        return true;
    } catch (const std::exception& e) {
        std::printf("  %-16s FAIL: %s\n", b.name().c_str(), e.what());
        return false;
    }
}

// y of avg_pool2d_forward on one variant, compared with the reference (the divisions of these
// small integers by 1, 2 and 4 are exact).
bool show_avg_pool(const Backend& b, const Pool2dShape& s) {
    const std::vector<double> x(plane.begin(), plane.end());
    std::vector<double> ref_y(static_cast<std::size_t>(s.y_shape().elements()));
    cpu_naive::avg_pool2d_forward<double>(s, x.data(), ref_y.data());
    try {
        Tensor y = b.allocate(s.y_shape());
        b.avg_pool2d_forward(s, b.upload(plane_shape, plane), y);
        const std::vector<float> out_y = b.download(y);
        print_plane(b.name().c_str(), out_y, s.Q());
        return same(out_y, ref_y);
    } catch (const Unsupported& e) {
        std::printf("  %-16s not implemented: %s\n", b.name().c_str(), e.what());
        return true;
    } catch (const std::exception& e) {
        std::printf("  %-16s FAIL: %s\n", b.name().c_str(), e.what());
        return false;
    }
}

bool show_rules() {
    bool ok = true;
    print_plane("x (4x4)", plane, 4);

    const Pool2dShape tiles{.H = 4, .W = 4};  // 2x2 windows, stride 2: no overlap
    std::puts("\nmax pool 2x2 stride 2, then backward with dy = 1 2 | 3 4. Ties: the first in");
    std::puts("row-major order wins (argmax = h*4 + w); each dy goes to its window's argmax:");
    for (const std::string& name : backend_names())
        ok = show_max_pool(backend(name), tiles, {1, 2, 3, 4}) && ok;

    const Pool2dShape overlap{
        .H = 4, .W = 4, .window_h = 3, .window_w = 3, .stride_h = 1, .stride_w = 1};
    std::puts("\nmax pool 3x3 stride 1 (windows overlap), backward with dy = 1 2 | 3 4. All four");
    std::puts("windows pick x[2,1] = 5 (argmax 9): dx there must be 1 + 2 + 3 + 4 = 10, not 4:");
    for (const std::string& name : backend_names())
        ok = show_max_pool(backend(name), overlap, {1, 2, 3, 4}) && ok;

    const Pool2dShape padded{.H = 4, .W = 4, .pad_h = 1, .pad_w = 1};
    std::puts("\navg pool 2x2 stride 2 pad 1 (3x3 outputs): a corner window covers one input,");
    std::puts(
        "x[0,0] = 1, and divides by 1, not 4 (padding is not an element); an edge window by 2:");
    for (const std::string& name : backend_names()) ok = show_avg_pool(backend(name), padded) && ok;
    return ok;
}

// One op of the table on one layer, and the bytes it must move at least (each input read once,
// each output written once) for the GB/s column. max_pool2d_forward checks two outputs.
struct Case {
    const char* op;
    const char* layer;
    double bytes;
    std::function<std::vector<check::CaseResult>(const Backend&)> run;
};

std::vector<Case> cases(const char* name, const Pool2dShape& s, std::uint64_t seed) {
    using namespace check;
    const double x = 4.0 * double(s.x_shape().elements()), y = 4.0 * double(s.y_shape().elements());
    return {
        {"max_pool2d_forward", name, x + 2 * y,  // x -> y, argmax
         [=](const Backend& b) { return check_max_pool2d_forward(b, s, seed); }},
        {"max_pool2d_backward", name, 2 * y + x,  // dy, argmax -> dx
         [=](const Backend& b) { return std::vector{check_max_pool2d_backward(b, s, seed)}; }},
        {"avg_pool2d_forward", name, x + y,
         [=](const Backend& b) { return std::vector{check_avg_pool2d_forward(b, s, seed)}; }},
        {"avg_pool2d_backward", name, y + x,
         [=](const Backend& b) { return std::vector{check_avg_pool2d_backward(b, s, seed)}; }},
    };
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        std::puts("");
        bool all_passed = show_rules();

        // LeNet-5's pooling after its first convolution, on a batch of 8; and AlexNet's
        // overlapping 3x3 stride-2 pooling, on a 27x27 plane as in its second stage, padded.
        const Pool2dShape lenet{.N = 8, .C = 6, .H = 28, .W = 28};
        const Pool2dShape overlap{.N = 8,
                                  .C = 16,
                                  .H = 27,
                                  .W = 27,
                                  .window_h = 3,
                                  .window_w = 3,
                                  .pad_h = 1,
                                  .pad_w = 1};
        std::printf("\nLayers:\n  %-8s %s -> P %lld, Q %lld\n  %-8s %s -> P %lld, Q %lld\n",
                    "lenet", lenet.str().c_str(), (long long)lenet.P(), (long long)lenet.Q(),
                    "overlap", overlap.str().c_str(), (long long)overlap.P(),
                    (long long)overlap.Q());

        const bool any_simulated =
            lessons::warn_if_simulated("!!! GPU figures come from `triptych report` on a GPU.\n");

        std::printf("\n%-20s %-8s %-14s %-28s %11s %8s  %s\n", "op", "layer", "variant", "device",
                    "time", "GB/s", "vs float64 reference");
        std::vector<Case> all = cases("lenet", lenet, seed);
        for (Case& c : cases("overlap", overlap, seed)) all.push_back(std::move(c));
        for (const Case& c : all) {
            for (const std::string& name : backend_names()) {
                const Backend& b = backend(name);
                try {
                    const std::vector<check::CaseResult> results =
                        lessons::run_checks(b, [&] { return c.run(b); });
                    // gpu_naive's backward passes are an atomic scatter (gpu/naive/pool2d.cu):
                    // the last bits of dx depend on the order the adds arrive in.
                    const lessons::Rounding rounding = lessons::rounding_of(b, {op_named(c.op)});
                    for (const check::CaseResult& r : results) {
                        // max_pool2d_forward: the y row has the time, the argmax row its verdict.
                        const bool first = &r == &results.front();
                        const std::string time =
                            first ? lessons::time_text(r.seconds, b.device_kind()) : "";
                        const std::string rate =
                            first ? lessons::rate_text(c.bytes, r.seconds, b.device_kind()) : "";
                        std::printf("%-20s %-8s %-14s %-28s %11s %8s  %s\n", first ? c.op : "",
                                    first ? c.layer : "", first ? name.c_str() : "  (argmax)",
                                    first ? r.device.c_str() : "", time.c_str(), rate.c_str(),
                                    lessons::verdict(r, rounding).c_str());
                        all_passed = all_passed && r.comparison.passed;
                    }
                } catch (const Unsupported& e) {  // an op the variant does not have yet
                    std::printf("%-20s %-8s %-14s %-28s %11s %8s  not implemented: %s\n", c.op,
                                c.layer, name.c_str(), b.device().c_str(), "", "", e.what());
                }
            }
        }
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "GB/s = the bytes the op must move at least (its inputs read once, its outputs "
            "written\n"
            "once; argmax is a float) / the time of one call; bench/ has the real measurements.");
        return lessons::final_verdict(all_passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 11: %s\n", error.what());
        return 1;
    }
}
