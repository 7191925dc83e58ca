// Lesson 04: the dense layer, forward and backward (see README.md next to this file).
//
// Runs one nn::Dense layer (common/nn/dense.cpp), 64 x 784 -> 256 with ReLU, forward and backward
// on every variant of this build. Each of its four outputs (Y, dX, dW, db) is compared with a
// float64 evaluation of the same formulas by cpu_naive's templates, side by side with the time of
// each pass. Exits 1 if any output is wrong.
//
//   lesson_04_dense_layer [SEED]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "common/errors.hpp"
#include "common/nn/dense.hpp"
#include "common/registry.hpp"
#include "common/timer.hpp"
#include "cpu/naive/activations.hpp"
#include "cpu/naive/dense.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

// An MNIST hidden layer: a batch of 64 images of 784 pixels, 256 outputs, ReLU.
constexpr DenseShape layer_shape{
    .batch = 64, .in = 784, .out = 256, .activation = Activation::relu};
constexpr int timed_runs = 5;
static_assert(layer_shape.activation == Activation::relu,
              "evaluate() below writes ReLU's derivative; tests/dense_test.cpp covers the others");

// The two GEMMs of the backward pass, as Dense::backward calls them:
//   dW = dZ^T X: (out, batch) x (batch, in); dZ is stored (batch, out), so A is read transposed;
//   dX = dZ W:   (batch, out) x (out, in); both as stored.
GemmShape dW_gemm(const DenseShape& s) {
    return {.M = s.out, .N = s.in, .K = s.batch, .trans_a = true};
}
GemmShape dX_gemm(const DenseShape& s) { return {.M = s.batch, .N = s.in, .K = s.out}; }

// The layer's inputs (weights from its seeded He initialiser) and its outputs, as host vectors.
struct Inputs {
    std::vector<float> x, W, b, dy;
};
struct Outputs {
    std::vector<float> y, dx, dW, db;
};

// The four outputs computed in float64 from the layer's float inputs. The backward pass starts
// from the layer's own y: ReLU's derivative is read from it (y > 0) in both, so the comparison
// measures the rounding of the backward GEMMs, not a z near 0 rounded to the other side of the
// kink.
struct Float64Layer {
    std::vector<double> y, dx, dW, db;
};

Float64Layer evaluate(const DenseShape& s, const std::vector<double>& x,
                      const std::vector<double>& W, const std::vector<double>& b,
                      const std::vector<double>& dy, const std::vector<double>& layer_y) {
    Float64Layer r{std::vector<double>(s.batch * s.out), std::vector<double>(s.batch * s.in),
                   std::vector<double>(s.out * s.in), std::vector<double>(s.out)};
    cpu_naive::dense_forward(s, x.data(), W.data(), b.data(), r.y.data());
    std::vector<double> dz(dy.size());  // dz = dy * relu'(z), relu'(z) = [y > 0]
    cpu_naive::activation_backward<Relu>(s.batch * s.out, layer_y.data(), dy.data(), dz.data());
    // dW = dz^T x and dx = dz W: the same GemmShapes as Dense::backward.
    cpu_naive::gemm<double>(dW_gemm(s), dz.data(), x.data(), r.dW.data());
    cpu_naive::bias_backward<double>(s.batch, s.out, dz.data(), r.db.data());
    cpu_naive::gemm<double>(dX_gemm(s), dz.data(), W.data(), r.dx.data());
    return r;
}

std::vector<double> widen(const std::vector<float>& v, bool absolute = false) {
    std::vector<double> w(v.begin(), v.end());
    if (absolute)
        for (double& value : w) value = std::abs(value);
    return w;
}

// Runs forward and backward once on the layer and fills `out`; returns the time of each pass.
struct Timing {
    double forward = 0, backward = 0;
};
Timing run_layer(const Backend& b, nn::Dense& layer, const Tensor& X, const Tensor& dY,
                 Outputs& out) {
    Timing t;
    Timer forward_timer;
    const Tensor& Y = layer.forward(X);
    b.synchronize();
    t.forward = forward_timer.seconds();
    Timer backward_timer;
    const Tensor& dX = layer.backward(dY);
    b.synchronize();
    t.backward = backward_timer.seconds();
    out = {b.download(Y), b.download(dX), b.download(layer.weights().grad),
           b.download(layer.bias().grad)};
    return t;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;  // no timed run: time_text prints "-"
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

bool all_passed(const std::vector<check::CaseResult>& results) {
    for (const check::CaseResult& r : results)
        if (!r.comparison.passed) return false;
    return true;
}

// Each output is a float32 sum of K terms (Y: in products and the bias; dW, db: batch terms; dX:
// out products). In any order it is within 2(K + 2) u sum|terms| of the exact sum, u = 2^-24:
// check_gemm's bound (check/crosscheck.cpp). sum|terms| is the same float64 evaluation run on the
// absolute values of the inputs.
std::vector<check::CaseResult> compare_outputs(const Backend& b, const DenseShape& s,
                                               const Inputs& in, const Outputs& out) {
    const std::vector<double> y = widen(out.y);
    const Float64Layer ref = evaluate(s, widen(in.x), widen(in.W), widen(in.b), widen(in.dy), y);
    const Float64Layer size =
        evaluate(s, widen(in.x, true), widen(in.W, true), widen(in.b, true), widen(in.dy, true), y);
    struct Output {
        const char* name;
        const std::vector<float>& out;
        const std::vector<double>& ref;
        const std::vector<double>& size;
        std::int64_t terms;
    };
    const Output outputs[] = {{"Y", out.y, ref.y, size.y, s.in + 1},
                              {"dX", out.dx, ref.dx, size.dx, s.out},
                              {"dW", out.dW, ref.dW, size.dW, s.batch},
                              {"db", out.db, ref.db, size.db, s.batch}};
    std::vector<check::CaseResult> results;
    for (const Output& o : outputs) {
        check::CaseResult r;
        r.op = o.name;
        r.variant = b.name();
        r.device = b.device();
        r.comparison =
            compare(o.out, o.ref, Tolerance{2.0 * double(o.terms + 2) * 0x1p-24, 0.0}, o.size);
        results.push_back(r);
    }
    return results;
}

// The layer's ops, its GEMMs printed as "gemm 64x256x784 NT" (GemmShape::str()).
void print_gemm_calls(const DenseShape& s) {
    std::printf(
        "Dense %s: X (%lld, %lld), W (%lld, %lld), b (%lld), Y (%lld, %lld)\n"
        "  forward   Y  = relu(X W^T + b)    gemm %-16s + bias + relu (dense_forward)\n"
        "  backward  dZ = dY * [Y > 0]       relu_backward\n"
        "            dW = dZ^T X             gemm %-16s (common/nn/dense.cpp)\n"
        "            db = sum over batch dZ  bias_backward\n"
        "            dX = dZ W               gemm %s\n"
        "  (gemm MxNxK, then N or T: A and B read as stored or transposed; see GemmShape)\n\n",
        s.str().c_str(), (long long)s.batch, (long long)s.in, (long long)s.out, (long long)s.in,
        (long long)s.out, (long long)s.batch, (long long)s.out, s.gemm().str().c_str(),
        dW_gemm(s).str().c_str(), dX_gemm(s).str().c_str());
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        const DenseShape& s = layer_shape;
        print_gemm_calls(s);

        std::printf("%-14s %-28s %-9s %11s  %-6s %s\n", "variant", "device", "pass", "time",
                    "output", "vs float64 reference");
        bool passed = true, any_simulated = false;
        for (const std::string& name : backend_names()) {
            const Backend& b = backend(name);
            try {
                nn::Dense layer(b, s.in, s.out, s.activation, seed);
                // x and dy uniform in [-1, 1); a non-zero bias, so that db and the bias matter.
                Inputs in{std::vector<float>(s.batch * s.in), b.download(layer.weights().value),
                          std::vector<float>(s.out), std::vector<float>(s.batch * s.out)};
                Rng rng(seed + 1);
                rng.uniform(in.x);
                rng.uniform(in.b);
                rng.uniform(in.dy);
                b.upload(layer.bias().value, in.b);
                const Tensor X = b.upload(Shape{s.batch, s.in}, in.x);
                const Tensor dY = b.upload(Shape{s.batch, s.out}, in.dy);

                // A first run pays one-time costs, as in lessons::run_check; its outputs are
                // checked, and a failure there is the one reported. Then `timed_runs` more: the
                // times shown are their medians, and the last one's outputs are checked too.
                Outputs out;
                run_layer(b, layer, X, dY, out);
                std::vector<check::CaseResult> results = compare_outputs(b, s, in, out);
                std::vector<double> forward, backward;
                if (all_passed(results)) {
                    for (int run = 0; run < timed_runs; ++run) {
                        const Timing t = run_layer(b, layer, X, dY, out);
                        forward.push_back(t.forward);
                        backward.push_back(t.backward);
                    }
                    results = compare_outputs(b, s, in, out);
                }
                // Rows Y, dX, dW, db; the forward time on Y's row, the backward time on dX's.
                const char* passes[] = {"forward", "backward", "", ""};
                const std::string times[] = {lessons::time_text(median(forward), b.device_kind()),
                                             lessons::time_text(median(backward), b.device_kind()),
                                             "", ""};
                for (std::size_t i = 0; i < results.size(); ++i) {
                    std::printf("%-14s %-28s %-9s %11s  %-6s %s\n", i == 0 ? name.c_str() : "",
                                i == 0 ? b.device().c_str() : "", passes[i], times[i].c_str(),
                                results[i].op.c_str(), lessons::verdict(results[i]).c_str());
                }
                passed = passed && all_passed(results);
                any_simulated = any_simulated || b.device_kind() == DeviceKind::Simulator;
            } catch (const Unsupported& e) {  // an op the variant does not have yet
                std::printf("%-14s %-28s %-9s %11s  %-6s not implemented: %s\n", name.c_str(),
                            b.device().c_str(), "", "", "", e.what());
            } catch (const std::exception& e) {  // a rejected launch, a divergent barrier
                std::printf("%-14s %-28s %-9s %11s  %-6s FAIL  %s\n", name.c_str(),
                            b.device().c_str(), "", "", "", e.what());
                passed = false;
            }
        }
        if (any_simulated) lessons::simulator_footnote();
        std::puts(
            "time: the median of 5 runs, after a warm-up run; backward = dZ, dW, db and dX\n"
            "together (four ops).");
        return lessons::final_verdict(passed);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "lesson 04: %s\n", error.what());
        return 1;
    }
}
