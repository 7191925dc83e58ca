// gpu_vendor gemm: cuBLAS's sgemm, the ceiling of the GEMM ladder (lessons 02-03).
#include <cublas_v2.h>

#include <string>

#include "common/errors.hpp"
#include "common/kernels.hpp"
#include "gpu/runtime/stream.hpp"
#include "gpu/vendor/owned.hpp"

namespace triptych::gpu_vendor {
namespace {

// Throws CudaError("<what>: CUBLAS_STATUS_...: <cuBLAS's explanation>") unless `status` is success.
void check_cublas(cublasStatus_t status, const std::string& what) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    throw CudaError(what + ": " + cublasGetStatusName(status) + ": " +
                    cublasGetStatusString(status));
}

using CublasHandle = Owned<cublasHandle_t, cublasDestroy>;

// The process's cuBLAS handle, made on first use (not for use from two host threads at once), set
// to issue its work to the calling thread's current stream, as our kernels do.
cublasHandle_t cublas() {
    static const CublasHandle handle = [] {
        cublasHandle_t raw = nullptr;
        check_cublas(cublasCreate(&raw), "cublasCreate");
        CublasHandle owned(raw);
        // Plain FP32, so that the ceiling is measured on the same arithmetic as our kernels.
        // CUBLAS_DEFAULT_MATH never lowers the precision of sgemm: TF32 tensor cores need
        // CUBLAS_TF32_TENSOR_OP_MATH, BF16x9 emulation CUBLAS_FP32_EMULATED_BF16X9_MATH.
        // CUBLAS_PEDANTIC_MATH would also be FP32, but may pick slower kernels, flattering ours.
        check_cublas(cublasSetMathMode(raw, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
        return owned;
    }();
    check_cublas(
        cublasSetStream(handle.get(), static_cast<cudaStream_t>(gpu::current_stream().handle())),
        "cublasSetStream");
    return handle.get();
}

// cuBLAS is column-major; our matrices are row-major. A row-major (R, C) matrix, read as
// column-major, is its transpose (C, R) with leading dimension C, at no cost. So we ask cuBLAS
// for C^T = op(B)^T * op(A)^T, an N x M column-major product, which lands in memory exactly
// as the row-major M x N C:
//   - B stored (K, N) reads as B^T = op(B)^T: no transpose, ld N. Stored (N, K) (trans_b):
//     reads as op(B), so cuBLAS transposes it, ld K. Likewise for A, with M.
//   - The operands swap places: B comes first.
// beta == 0 follows BLAS: C is not read.
void gemm(const GemmShape& s, const float* A, const float* B, float* C) {
    const cublasOperation_t op_b = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const std::int64_t ld_b = s.trans_b ? s.K : s.N;
    const std::int64_t ld_a = s.trans_a ? s.M : s.K;
    // The _64 entry point takes 64-bit sizes, so no dimension can overflow an int.
    check_cublas(cublasSgemm_64(cublas(), op_b, op_a, s.N, s.M, s.K, &s.alpha, B, ld_b, A, ld_a,
                                &s.beta, C, s.N),
                 "cublasSgemm " + s.str());
}

// The same product on tensor cores: cublasGemmEx with float matrices and a "fast" compute type,
// which lets cuBLAS round the inputs to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) or to BF16
// (CUBLAS_COMPUTE_32F_FAST_16BF) and add in float: the ceilings of gpu_tiled's versions 9 and 10.
// (FAST_16BF also allows TF32; cuBLAS picks. The check allows for BF16's rounding, the coarser.)
template <cublasComputeType_t compute>
void gemm_fast(const GemmShape& s, const float* A, const float* B, float* C) {
    const cublasOperation_t op_b = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const std::int64_t ld_b = s.trans_b ? s.K : s.N;
    const std::int64_t ld_a = s.trans_a ? s.M : s.K;
    check_cublas(cublasGemmEx_64(cublas(), op_b, op_a, s.N, s.M, s.K, &s.alpha, B, CUDA_R_32F, ld_b,
                                 A, CUDA_R_32F, ld_a, &s.beta, C, CUDA_R_32F, s.N, compute,
                                 CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx " + s.str());
}

[[maybe_unused]] const bool registered = register_kernels(
    "gpu_vendor", ops::gemm,
    {{1, "cublas", "cublasSgemm, FP32 (no TF32 tensor cores): the ceiling of the GEMM ladder",
      gemm},
     {2, "cublas_tf32", "cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32: tensor cores, TF32 inputs",
      gemm_fast<CUBLAS_COMPUTE_32F_FAST_TF32>, AdditionOrder::fixed, InputPrecision::tf32},
     {3, "cublas_bf16", "cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_16BF: tensor cores, BF16 inputs",
      gemm_fast<CUBLAS_COMPUTE_32F_FAST_16BF>, AdditionOrder::fixed, InputPrecision::bf16}},
    /*default_version=*/1);

}  // namespace
}  // namespace triptych::gpu_vendor
