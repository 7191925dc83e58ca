// cpu_eigen_omp conv2d by the direct algorithm (conv_direct.cpp): the three passes with
// ConvAlgorithm::direct, called by conv2d.cpp's dispatch. Shapes as in cpu/naive/conv2d.hpp; db is
// conv2d.cpp's (it is the same for every algorithm).
#pragma once

#include <string>

#include "common/ops.hpp"
#include "cpu/eigen_omp/eigen.hpp"

namespace triptych::cpu_eigen_omp {

// Where an (H, W) plane goes in a zero-padded (rows, cols) plane: element (h, w) at
// (top + h*step_h, left + w*step_w). Elements that fall outside are dropped; top and left may be
// negative.
struct Placement {
    std::int64_t top, left, step_h, step_w;
};

// dst (channels, rows, cols) = the planes of src (channels, H, W) placed `at`, zeros elsewhere.
// The direct and the shifted-GEMM (conv_shifted.cpp) passes read their inputs padded this way.
void place_padded(const float* src, std::int64_t channels, std::int64_t H, std::int64_t W,
                  Placement at, float* dst, std::int64_t rows, std::int64_t cols);

void conv2d_forward_direct(const Conv2dShape& s, const float* x, const float* w, const float* b,
                           float* y);
void conv2d_backward_data_direct(const Conv2dShape& s, const float* dy, const float* w, float* dx);
void conv2d_backward_weights_direct(const Conv2dShape& s, const float* x, const float* dy,
                                    float* dw);

// The direct kernels for another algorithm's own input planes (conv_winograd.cpp's F(2, 5)
// along columns): one stride-1 correlation, without padding, of an input (in_channels, H, W)
// with filters (out_channels, in_channels, R, S) into (out_channels, H - R + 1, W - S + 1),
// planned once (the kernel and its blocks, as the forward pass plans them) and run one image at
// a time on the calling thread.
class DirectCorrelation {
public:
    DirectCorrelation(std::int64_t in_channels, std::int64_t out_channels, std::int64_t R,
                      std::int64_t S, std::int64_t H, std::int64_t W);
    ~DirectCorrelation();
    // The filters are laid out (in_channels, R, S, filter_lanes()), zeros past out_channels:
    // tap (r, s) of the filter from channel c to channel k at
    // ((c * R + r) * S + s) * filter_lanes() + k.
    std::int64_t filter_lanes() const;
    // The floats of scratch that correlate needs (0 where it reads the image in place).
    std::int64_t scratch_floats() const;
    // out = the correlation of one image with `filters` (as above), `work` its scratch.
    void correlate(const float* image, const float* filters, float* out, float* work) const;

private:
    struct Plan;
    std::unique_ptr<Plan> plan_;
};

// The kernel that the forward and the backward_data pass take for shape s: "by channels", "by
// pixels" or "by inputs" (conv_direct.cpp explains each). For the tests and lesson 08.
struct DirectKernels {
    std::string forward, backward_data;
};
DirectKernels conv2d_direct_kernels(const Conv2dShape& s);

}  // namespace triptych::cpu_eigen_omp
