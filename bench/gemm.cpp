// The GEMM reference row outside the descriptions: OpenBLAS's sgemm called directly, which
// cpu_eigen_omp is measured against. (The GEMM rows of every variant and version come from gemm's
// description, check/crosscheck.cpp.)
//
// Rows: gemm/openblas/NxNxN for the sizes cpu_eigen_omp runs. Counter `flops`: 2*N^3 per call.
// Run: triptych_bench --benchmark_filter='gemm/(cpu_eigen_omp|openblas)/(1024|2048)'
#include <cblas.h>
#include <omp.h>

#include "bench/suites.hpp"
#include "check/crosscheck.hpp"
#include "common/registry.hpp"
#include "cpu/eigen_omp/ops.hpp"

namespace triptych::bench {
namespace {

// OpenBLAS's sgemm on the same 64-byte-aligned host memory cpu_eigen_omp uses, so the two rows
// differ only in who calls sgemm and who runs the threads: here OpenBLAS's own pool, on every
// core; in cpu_eigen_omp, OpenMP's team, each thread one panel of C (see cpu/eigen_omp/gemm.cpp,
// which keeps OpenBLAS on one thread and stops its pool; this row lends it every core, and then
// takes them back and stops the pool again, so that it does not spin into the next row).
struct OpenBlasOnEveryCore {
    OpenBlasOnEveryCore() { openblas_set_num_threads(omp_get_max_threads()); }
    ~OpenBlasOnEveryCore() { cpu_eigen_omp::use_one_thread_pool(); }
};

void gemm_openblas(benchmark::State& state, std::int64_t n) {
    const Backend& host = backend("cpu_eigen_omp");
    const OpenBlasOnEveryCore threads;
    const GemmShape shape{.M = n, .N = n, .K = n};
    const Tensor A = host.upload(shape.a_shape(), check::bench_values(n * n));
    const Tensor B = host.upload(shape.b_shape(), check::bench_values(n * n));
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
    const Backend& eigen = backend("cpu_eigen_omp");
    const check::BenchContext context{DeviceKind::Cpu, options.quick, eigen};
    for (const check::BenchRows& rows : check::op("gemm").bench)
        for (const check::BenchCase& c : rows.cases(context)) {
            const std::int64_t n = std::stoll(c.size);  // "NxNxN"
            add("gemm/openblas/" + c.size, [n](benchmark::State& s) { gemm_openblas(s, n); });
        }
}

}  // namespace triptych::bench
