// gpu_vendor conv2d: forward, backward data and backward weights through cuDNN. Our three
// algorithm names map to cuDNN's (cudnnConvolutionFwdAlgo_t, ...BwdDataAlgo_t, ...BwdFilterAlgo_t):
//   im2col  forward: CUDNN_CONVOLUTION_FWD_ALGO_GEMM, which builds the matrix of patches
//           explicitly and multiplies, as lesson 09 does. cuDNN has no explicit-matrix backward
//           passes; the nearest are BWD_DATA_ALGO_1 and BWD_FILTER_ALGO_1, each one matrix
//           product with the matrix formed implicitly (and deterministic, unlike ALGO_0, which
//           adds its partial products with atomics).
//   fft     FFT, else FFT_TILING, in each pass: cuDNN's convolution-theorem algorithms, built on
//           cuFFT. FFT transforms whole images; FFT_TILING cuts larger ones into tiles and needs
//           less workspace. They need stride 1, among other limits: cuDNN refuses other shapes,
//           and so do we (Unsupported, with cuDNN's reasons).
//   implicit_gemm  forward: IMPLICIT_PRECOMP_GEMM (the tiles of patches gathered from x, with a
//           precomputed table of offsets), else IMPLICIT_GEMM; backward: BWD_DATA_ALGO_1 and
//           BWD_FILTER_ALGO_1, the same as im2col's, since cuDNN has no other deterministic
//           implicit-GEMM backward passes.
//   direct  whatever cuDNN runs fastest for the shape, so that this row is the real ceiling:
//           cudnnFind*Algorithm times every algorithm it has (implicit GEMM, Winograd, FFT, ...)
//           and the winner is kept per shape in Cudnn::fastest_algorithm, since timing them all
//           costs far more than one convolution. The first call of a shape is therefore slow.
// The bias is separate: cudnnAddTensor adds it after the forward pass (the fused
// cudnnConvolutionBiasActivationForward, with no activation, accepts one algorithm only), and
// cudnnConvolutionBackwardBias sums dy into db.
#include "gpu/vendor/conv2d.hpp"

#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/kernels.hpp"
#include "common/math.hpp"
#include "gpu/runtime/device.hpp"

namespace triptych::gpu_vendor {
namespace {

// The descriptors of one convolution: x (N, C, H, W), w (K, C, R, S), y (N, K, P, Q). The
// backward passes describe dx with x's and dy with y's.
struct Descriptors {
    TensorDescriptor x, y;
    FilterDescriptor w;
    ConvolutionDescriptor convolution;
};

Descriptors describe(const Conv2dShape& s) {
    return {tensor_descriptor(s.x_shape()), tensor_descriptor(s.y_shape()), filter_descriptor(s),
            convolution_descriptor(s)};
}

// One of cuDNN's algorithms for a pass, with a name for messages.
template <typename CudnnAlgorithm>
struct Candidate {
    CudnnAlgorithm algorithm;
    std::string name;
};

// `bytes` of the calling thread's scratch device memory (gpu::workspace), null when 0.
void* scratch(std::size_t bytes) {
    return gpu::workspace(static_cast<std::int64_t>(ceil_div(bytes, sizeof(float))));
}

// The algorithm a pass runs and the workspace it needs.
template <typename CudnnAlgorithm>
struct Plan {
    Candidate<CudnnAlgorithm> candidate;
    std::size_t workspace_bytes = 0;
};

// The first of cudnnFind*'s results (sorted fastest first) that ran, and ran in FP32. With
// CUDNN_FMA_MATH on the descriptor no result should use tensor cores; the check makes sure.
template <typename Performance>
auto fastest_fp32(const std::vector<Performance>& results, const std::string& what) {
    for (const Performance& result : results) {
        const bool tensor_cores = result.mathType == CUDNN_TENSOR_OP_MATH ||
                                  result.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
        if (result.status == CUDNN_STATUS_SUCCESS && !tensor_cores) return result.algo;
    }
    throw Unsupported(what + ": cuDNN found no algorithm that runs this shape in FP32");
}

// The candidates for `algorithm`: the fixed lists for im2col, fft and implicit_gemm; for direct,
// the pass's
// fastest, which `find_fastest` (a cudnnFind* call) measures the first time `what` comes.
template <typename CudnnAlgorithm, typename FindFastest>
std::vector<Candidate<CudnnAlgorithm>> candidates(
    Cudnn& cudnn, ConvAlgorithm algorithm, const std::string& what,
    const std::vector<Candidate<CudnnAlgorithm>>& im2col,
    const std::vector<Candidate<CudnnAlgorithm>>& fft,
    const std::vector<Candidate<CudnnAlgorithm>>& implicit_gemm, FindFastest find_fastest) {
    switch (algorithm) {
        case ConvAlgorithm::im2col:
            return im2col;
        case ConvAlgorithm::fft:
            return fft;
        case ConvAlgorithm::implicit_gemm:
            return implicit_gemm;
        case ConvAlgorithm::direct:
        case ConvAlgorithm::winograd:  // not in conv2d_algorithms()
            break;
    }
    auto found = cudnn.fastest_algorithm.find(what);
    if (found == cudnn.fastest_algorithm.end())
        found = cudnn.fastest_algorithm.emplace(what, static_cast<int>(find_fastest())).first;
    return {{static_cast<CudnnAlgorithm>(found->second),
             "cuDNN's fastest, algorithm " + std::to_string(found->second)}};
}

// The first candidate cuDNN supports for the shape, with its workspace size.
// workspace_size(algorithm, &bytes) is the pass's cudnnGet*WorkspaceSize, which answers
// NOT_SUPPORTED for an algorithm that cannot run the shape.
template <typename CudnnAlgorithm, typename WorkspaceSize>
Plan<CudnnAlgorithm> first_supported(const std::vector<Candidate<CudnnAlgorithm>>& candidates,
                                     WorkspaceSize workspace_size, const std::string& what) {
    std::string refusals;
    for (const Candidate<CudnnAlgorithm>& candidate : candidates) {
        std::size_t bytes = 0;
        const cudnnStatus_t status = workspace_size(candidate.algorithm, &bytes);
        if (status == CUDNN_STATUS_SUCCESS) return {candidate, bytes};
        if (!not_supported(status)) check_cudnn(status, what + " " + candidate.name);
        refusals +=
            (refusals.empty() ? "" : ", ") + candidate.name + ": " + cudnnGetErrorString(status);
    }
    throw Unsupported(what + ": cuDNN does not support this shape (" + refusals + ")");
}

// Checks a pass's cuDNN call: NOT_SUPPORTED is Unsupported, any other failure a CudaError.
void check_run(cudnnStatus_t status, const std::string& what) {
    if (not_supported(status)) throw Unsupported(what + ": " + cudnnGetErrorString(status));
    check_cudnn(status, what);
}

}  // namespace

void conv2d_forward(Cudnn& cudnn, const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                    const float* w, const float* b, float* y) {
    const std::string what = "gpu_vendor conv2d_forward " + s.str() + " " + to_string(algorithm);
    cudnnHandle_t handle = cudnn.handle.get();
    const Descriptors d = describe(s);
    const auto find_fastest = [&] {
        int count = 0, returned = 0;
        check_cudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count),
                    what + ": cudnnGetConvolutionForwardAlgorithmMaxCount");
        std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<std::size_t>(count));
        check_cudnn(
            cudnnFindConvolutionForwardAlgorithm(handle, d.x.get(), d.w.get(), d.convolution.get(),
                                                 d.y.get(), count, &returned, results.data()),
            what + ": cudnnFindConvolutionForwardAlgorithm");
        results.resize(static_cast<std::size_t>(returned));
        return fastest_fp32(results, what);
    };
    const auto workspace_size = [&](cudnnConvolutionFwdAlgo_t a, std::size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(handle, d.x.get(), d.w.get(),
                                                       d.convolution.get(), d.y.get(), a, bytes);
    };
    const std::vector<Candidate<cudnnConvolutionFwdAlgo_t>> im2col = {
        {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, "GEMM"}};
    const std::vector<Candidate<cudnnConvolutionFwdAlgo_t>> fft = {
        {CUDNN_CONVOLUTION_FWD_ALGO_FFT, "FFT"},
        {CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, "FFT_TILING"}};
    const std::vector<Candidate<cudnnConvolutionFwdAlgo_t>> implicit = {
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "IMPLICIT_PRECOMP_GEMM"},
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, "IMPLICIT_GEMM"}};
    const auto plan =
        first_supported(candidates(cudnn, algorithm, what, im2col, fft, implicit, find_fastest),
                        workspace_size, what);
    void* workspace = scratch(plan.workspace_bytes);
    check_run(cudnnConvolutionForward(handle, &alpha_one, d.x.get(), x, d.w.get(), w,
                                      d.convolution.get(), plan.candidate.algorithm, workspace,
                                      plan.workspace_bytes, &beta_zero, d.y.get(), y),
              what + " " + plan.candidate.name);
    // y = 1 * b + 1 * y, b broadcast from (1, K, 1, 1) over n, p and q.
    const TensorDescriptor bias = tensor_descriptor(Shape{1, s.K, 1, 1});
    const float keep_y = 1.0f;
    check_cudnn(cudnnAddTensor(handle, &alpha_one, bias.get(), b, &keep_y, d.y.get(), y),
                what + ": cudnnAddTensor (bias)");
}

void conv2d_backward_data(Cudnn& cudnn, const Conv2dShape& s, ConvAlgorithm algorithm,
                          const float* dy, const float* w, float* dx) {
    const std::string what =
        "gpu_vendor conv2d_backward_data " + s.str() + " " + to_string(algorithm);
    cudnnHandle_t handle = cudnn.handle.get();
    const Descriptors d = describe(s);
    const auto find_fastest = [&] {
        int count = 0, returned = 0;
        check_cudnn(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count),
                    what + ": cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(static_cast<std::size_t>(count));
        check_cudnn(cudnnFindConvolutionBackwardDataAlgorithm(handle, d.w.get(), d.y.get(),
                                                              d.convolution.get(), d.x.get(), count,
                                                              &returned, results.data()),
                    what + ": cudnnFindConvolutionBackwardDataAlgorithm");
        results.resize(static_cast<std::size_t>(returned));
        return fastest_fp32(results, what);
    };
    const auto workspace_size = [&](cudnnConvolutionBwdDataAlgo_t a, std::size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            handle, d.w.get(), d.y.get(), d.convolution.get(), d.x.get(), a, bytes);
    };
    const std::vector<Candidate<cudnnConvolutionBwdDataAlgo_t>> im2col = {
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, "ALGO_1"}};
    const std::vector<Candidate<cudnnConvolutionBwdDataAlgo_t>> fft = {
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, "FFT"},
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, "FFT_TILING"}};
    const auto& implicit = im2col;
    const auto plan =
        first_supported(candidates(cudnn, algorithm, what, im2col, fft, implicit, find_fastest),
                        workspace_size, what);
    void* workspace = scratch(plan.workspace_bytes);
    check_run(cudnnConvolutionBackwardData(handle, &alpha_one, d.w.get(), w, d.y.get(), dy,
                                           d.convolution.get(), plan.candidate.algorithm, workspace,
                                           plan.workspace_bytes, &beta_zero, d.x.get(), dx),
              what + " " + plan.candidate.name);
}

void conv2d_backward_weights(Cudnn& cudnn, const Conv2dShape& s, ConvAlgorithm algorithm,
                             const float* x, const float* dy, float* dw, float* db) {
    const std::string what =
        "gpu_vendor conv2d_backward_weights " + s.str() + " " + to_string(algorithm);
    cudnnHandle_t handle = cudnn.handle.get();
    const Descriptors d = describe(s);
    const auto find_fastest = [&] {
        int count = 0, returned = 0;
        check_cudnn(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count),
                    what + ": cudnnGetConvolutionBackwardFilterAlgorithmMaxCount");
        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(static_cast<std::size_t>(count));
        check_cudnn(cudnnFindConvolutionBackwardFilterAlgorithm(handle, d.x.get(), d.y.get(),
                                                                d.convolution.get(), d.w.get(),
                                                                count, &returned, results.data()),
                    what + ": cudnnFindConvolutionBackwardFilterAlgorithm");
        results.resize(static_cast<std::size_t>(returned));
        return fastest_fp32(results, what);
    };
    const auto workspace_size = [&](cudnnConvolutionBwdFilterAlgo_t a, std::size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            handle, d.x.get(), d.y.get(), d.convolution.get(), d.w.get(), a, bytes);
    };
    const std::vector<Candidate<cudnnConvolutionBwdFilterAlgo_t>> im2col = {
        {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, "ALGO_1"}};
    const std::vector<Candidate<cudnnConvolutionBwdFilterAlgo_t>> fft = {
        {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, "FFT"},
        {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, "FFT_TILING"}};
    const auto& implicit = im2col;
    const auto plan =
        first_supported(candidates(cudnn, algorithm, what, im2col, fft, implicit, find_fastest),
                        workspace_size, what);
    void* workspace = scratch(plan.workspace_bytes);
    check_run(
        cudnnConvolutionBackwardFilter(handle, &alpha_one, d.x.get(), x, d.y.get(), dy,
                                       d.convolution.get(), plan.candidate.algorithm, workspace,
                                       plan.workspace_bytes, &beta_zero, d.w.get(), dw),
        what + " " + plan.candidate.name);
    // db[k] = the sum of dy[n, k, p, q] over n, p, q.
    const TensorDescriptor bias = tensor_descriptor(Shape{1, s.K, 1, 1});
    check_cudnn(
        cudnnConvolutionBackwardBias(handle, &alpha_one, d.y.get(), dy, &beta_zero, bias.get(), db),
        what + ": cudnnConvolutionBackwardBias");
}

[[maybe_unused]] const bool registered =
    register_kernel(
        "gpu_vendor", ops::conv2d_forward,
        {1, "cudnn", "cudnnConvolutionForward, then cudnnAddTensor for the bias",
         [](const Conv2dShape& s, ConvAlgorithm algorithm, const float* x, const float* w,
            const float* b, float* y) { conv2d_forward(cudnn(), s, algorithm, x, w, b, y); }}) &&
    register_kernel(
        "gpu_vendor", ops::conv2d_backward_data,
        {1, "cudnn", "cudnnConvolutionBackwardData",
         [](const Conv2dShape& s, ConvAlgorithm algorithm, const float* dy, const float* w,
            float* dx) { conv2d_backward_data(cudnn(), s, algorithm, dy, w, dx); }}) &&
    register_kernel("gpu_vendor", ops::conv2d_backward_weights,
                    {1, "cudnn", "cudnnConvolutionBackwardFilter and cudnnConvolutionBackwardBias",
                     [](const Conv2dShape& s, ConvAlgorithm algorithm, const float* x,
                        const float* dy, float* dw, float* db) {
                         conv2d_backward_weights(cudnn(), s, algorithm, x, dy, dw, db);
                     }});

}  // namespace triptych::gpu_vendor
