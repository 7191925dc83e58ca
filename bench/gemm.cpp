// GEMM benchmarks: C = A * B for square N x N matrices, N a power of two, on every variant.
//
// Rows: gemm/<variant>/NxNxN for each registry variant (its default version), plus
//   gemm/<variant>@<N>/NxNxN        every other version of the variant's GEMM (the ladder of
//                                   lesson 03: triptych versions --op gemm)
//   gemm/openblas/NxNxN             cblas_sgemm called directly: the CPU reference that
//                                   cpu_eigen_omp is measured against (same memory, same data)
// Counter `flops`: 2*N^3 floating-point operations per call, as a rate (console: "flops=95G/s").
// Run: triptych_bench --benchmark_filter='gemm/(cpu_eigen_omp|openblas)/(1024|2048)'
#include <cblas.h>
#include <omp.h>

#include "bench/suites.hpp"
#include "common/registry.hpp"

namespace triptych::bench {
namespace {

// cpu_naive's loops walk B column by column. On the 2-core reference machine N=512 takes 0.2 s a
// call (1.3 GFLOP/s) and N=1024 takes 5 s (0.4 GFLOP/s: B's columns no longer stay in cache);
// with a warm-up and repetitions, N=1024 alone would add half a minute to every report. Speedups
// over cpu_naive are therefore shown up to N=512.
constexpr std::int64_t naive_largest = 512;

// The sizes each kind of device runs: a GPU needs large matrices to fill its SMs; the simulator
// runs every CUDA thread as a fiber on the CPU, so only tiny sizes finish in reasonable time.
std::vector<std::int64_t> gemm_sizes(const Variant& v, const Options& options) {
    switch (v.kind) {
        case DeviceKind::Gpu:
            return powers_of_two(64, options.quick ? 512 : 8192);
        case DeviceKind::Simulator:
            return powers_of_two(64, options.quick ? 64 : 128);
        case DeviceKind::Cpu:
            break;
    }
    if (options.quick) return powers_of_two(64, 256);
    return powers_of_two(64, v.label == "cpu_naive" ? naive_largest : 2048);
}

std::string row_name(const std::string& op, const std::string& variant, std::int64_t n) {
    const std::string size = std::to_string(n);
    return op + "/" + variant + "/" + size + "x" + size + "x" + size;
}

// One variant through the Backend interface. A, B and C live in the variant's memory (device
// memory on a GPU); synchronize() inside the loop makes each timed call include the whole kernel.
void gemm_backend(benchmark::State& state, const Backend& b, std::int64_t n) {
    const GemmShape shape{.M = n, .N = n, .K = n};
    const Tensor A = b.upload(shape.a_shape(), random_values(n * n));
    const Tensor B = b.upload(shape.b_shape(), random_values(n * n));
    Tensor C = b.allocate(shape.c_shape());
    auto gemm = [&] { b.gemm(shape, A, B, C); };
    if (!warm_up(state, gemm, b, C)) return;
    for (auto _ : state) {
        gemm();
        b.synchronize();
    }
    count_per_second(state, "flops", shape.flops());
}

// OpenBLAS's sgemm on the same 64-byte-aligned host memory cpu_eigen_omp uses, so the two rows
// differ only in who calls sgemm and who runs the threads: here OpenBLAS's own pool, on every
// core; in cpu_eigen_omp, OpenMP's team, each thread one panel of C (see cpu/eigen_omp/gemm.cpp,
// which keeps OpenBLAS on one thread; this row lends it every core and takes them back).
struct OpenBlasOnEveryCore {
    OpenBlasOnEveryCore() { openblas_set_num_threads(omp_get_max_threads()); }
    ~OpenBlasOnEveryCore() { openblas_set_num_threads(1); }
};

void gemm_openblas(benchmark::State& state, std::int64_t n) {
    const Backend& host = backend("cpu_eigen_omp");
    const OpenBlasOnEveryCore threads;
    const GemmShape shape{.M = n, .N = n, .K = n};
    const Tensor A = host.upload(shape.a_shape(), random_values(n * n));
    const Tensor B = host.upload(shape.b_shape(), random_values(n * n));
    Tensor C = host.allocate(shape.c_shape());
    const int size = static_cast<int>(n);
    auto sgemm = [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size, 1.0f, A.data(),
                    size, B.data(), size, 0.0f, C.data(), size);
    };
    if (!warm_up(state, sgemm, host, C)) return;
    state.SetLabel("OpenBLAS, " + std::to_string(openblas_get_num_threads()) + " threads");
    for (auto _ : state) sgemm();
    count_per_second(state, "flops", shape.flops());
}


}  // namespace

void register_gemm(const Options& options) {
    for (const Variant& variant : variants(options)) {
        std::vector<Variant> versions{variant};
        for (Variant& other : other_versions(variant, Op::gemm)) versions.push_back(other);
        for (const Variant& v : versions)
            for (std::int64_t n : gemm_sizes(v, options))
                add(row_name("gemm", v.label, n),
                    [b = v.backend, n](benchmark::State& s) { gemm_backend(s, *b, n); });
        // The OpenBLAS reference sits right after cpu_eigen_omp, over the same sizes.
        if (variant.label == "cpu_eigen_omp")
            for (std::int64_t n : gemm_sizes(variant, options))
                add(row_name("gemm", "openblas", n),
                    [n](benchmark::State& s) { gemm_openblas(s, n); });
    }
}

}  // namespace triptych::bench
