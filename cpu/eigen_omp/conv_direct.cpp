// cpu_eigen_omp conv2d by the direct algorithm: the definition's multiply-adds, with no patch
// matrix and no GEMM, arranged for the vector unit. Shapes as in cpu/naive/conv2d.hpp:
//   x (N, C, H, W), w (K, C, R, S), b (K), y and dy (N, K, P, Q).
//
// A Vec is one vector register of the machine the code is compiled for (-march=native): 16 floats,
// one of AVX-512's 32 registers, as the numbers below say; with AVX2 alone, 8 floats, one of 16
// registers, and every block below keeps fewer sums (vector_registers). Three ways to fill a Vec
// with useful work:
//   by channels  correlate_by_channels. With the filters re-laid out as (C, R, S, K), the
//                weights of one tap (c, r, t) for 16 consecutive output channels are one Vec;
//                one input value, broadcast, times it adds to 16 outputs at once. A block of
//                `Width` output pixels of one row keeps its Width x 16 sums in registers for the
//                whole sum over (c, r, t), so outputs are written once, at the end. Any stride.
//   by pixels    correlate_by_pixels, for few output channels (<= 8) and stride 1: 16
//                consecutive outputs of one channel read 16 consecutive inputs, one Vec load per
//                tap, times each channel's weight broadcast. Filter rows that read only the
//                padding (a row of dy spread for backward_data that lies wholly in its zeros) are
//                skipped: their products are zero.
//   by inputs    correlate_by_inputs, the same with the Vecs along the input's own rows rather
//                than the padded ones, for inputs much narrower than their padding (dy in
//                LeNet conv2's backward_data, 10 columns padded to 18): each filter column's
//                products are summed apart, and added to the outputs at the end, each shifted by
//                its column, so that no lane multiplies a column of padding.
// plan() takes whichever computes fewer Vecs. The input is first copied into a zero-padded
// scratch image, one image per thread at a time (small enough to stay in L2), so the inner loops
// have no bounds checks.
//
//   forward          correlate_batch: y[n] = b + x[n] padded by (pad_h, pad_w), correlated with
//                    the filters; OpenMP over batches of images (for_each_batch).
//   backward_data    the same: dx[n] is dy[n] correlated with the filters flipped
//                    (r -> R-1-r, t -> S-1-t) and transposed (C outputs from K inputs), dy spread
//                    out by the stride (stride-1 zeros between its values) and padded by
//                    R-1-pad_h and S-1-pad_w (cut off where that is negative).
//   backward_weights dw[k, c, r, t] = the sum over n, p, q of
//                    dy[n, k, p, q] * x_padded[n, c, p*stride_h + r, q*stride_w + t], two ways:
//                    by channels (weight_gradient_block): dy is transposed to (P*Q, K), so that 16
//                    channels at one pixel are one Vec, and a block of up to 24 sums (whole filter
//                    rows of taps, 1 or 2 Vecs of channels) stays in registers while every pixel of
//                    an image streams past (both ways go image by image, each block's sums kept in
//                    memory from one image to the next, so that one image's planes stay in L1); by
//                    pixels (weight_gradient_flat_block), for few filters (<= 8) and stride 1: 16
//                    consecutive pixels of dy[n, k] times the 16 inputs under them for one tap, the
//                    products summed lane by lane and the lanes added at the end.
//                    weight_gradient_by_pixels takes whichever computes fewer Vecs. OpenMP over
//                    chunks of 8 images, each with its own partial sum; the partials are added in
//                    chunk order.
// Each output element is summed in a fixed order whatever the thread count, so results are
// reproducible bit for bit.
//
// lessons/08_conv_direct measures these kernels against im2col, the FFT and PyTorch (its
// generated tables, recorded in lessons/08_conv_direct/conv.json).
#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/math.hpp"
#include "cpu/eigen_omp/conv_direct.hpp"
#include "cpu/eigen_omp/eigen.hpp"
#include "cpu/eigen_omp/parallel.hpp"

namespace triptych::cpu_eigen_omp {

void place_padded(const float* src, std::int64_t channels, std::int64_t H, std::int64_t W,
                  Placement at, float* dst, std::int64_t rows, std::int64_t cols) {
    // The columns w that land inside: 0 <= left + w*step_w < cols.
    const std::int64_t w_begin = at.left >= 0 ? 0 : ceil_div(-at.left, at.step_w);
    const std::int64_t w_end =
        at.left >= cols ? 0 : std::min(W, (cols - 1 - at.left) / at.step_w + 1);
    Eigen::Map<Array>(dst, channels * rows * cols).setZero();
    for (std::int64_t c = 0; c < channels; ++c)
        for (std::int64_t h = 0; h < H; ++h) {
            const std::int64_t row = at.top + h * at.step_h;
            if (row < 0 || row >= rows) continue;
            const float* in = src + (c * H + h) * W;
            float* out = dst + (c * rows + row) * cols;
            if (at.step_w == 1)  // a run of the row: a vector copy, where the loop below is scalar
                std::copy(in + w_begin, in + w_end, out + at.left + w_begin);
            else
                for (std::int64_t w = w_begin; w < w_end; ++w) out[at.left + w * at.step_w] = in[w];
        }
}

namespace {

// One vector register: 16 floats with AVX-512, else 8 (AVX2's; Eigen uses two SSE registers where
// there is not even AVX). vector_registers sizes the blocks: a block's sums stay in registers only
// if they fit, with room for the operands. Sized for AVX-512 on an AVX2 machine (16 floats as two
// registers, 24 sums in 16 registers), LeNet's convolutions spilled sums and ran up to twice as
// slow.
#ifdef __AVX512F__
constexpr std::int64_t lanes = 16;
constexpr int vector_registers = 32;
#else
constexpr std::int64_t lanes = 8;
constexpr int vector_registers = 16;
#endif
using Vec = Eigen::Array<float, lanes, 1>;
// One vector register of floats, as Eigen's packet functions take it (__m512 with AVX-512, __m256
// with AVX2), and how many make a Vec (1, or 2 where a Vec of 16 floats is two AVX2 registers).
using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int packets_per_vec = int(sizeof(Vec) / sizeof(Packet));
constexpr bool many_registers = vector_registers >= 32;

// Makes the compiler hold v in registers from here on: an empty asm statement that claims to
// read and change them. Without it, GCC folds a Vec that several multiply-adds share into each of
// them as a memory operand (vfmadd231ps with an address), loading it again for every one: LeNet
// conv2's backward_data made 12 such loads, half of them split across cache lines, per 12
// multiply-adds, and ran at less than half the multiply-add rate (seen with perf annotate on an
// AVX2 machine). A kernel calls it only when its sums, its shared operands and one broadcast fit
// the registers (fits_in_registers); otherwise the operands would spill, which is worse than
// reloading them.
constexpr bool fits_in_registers(int sums, int shared) {
    return sums + shared + 1 <= vector_registers;
}

inline void keep_in_register(Vec& v) {
#if defined(__GNUC__) && defined(__AVX__)
    for (int i = 0; i < packets_per_vec; ++i) {
        Packet p = Eigen::internal::ploadu<Packet>(v.data() + i * lanes / packets_per_vec);
        asm("" : "+v"(p));  // "v": any vector register, AVX-512's upper 16 too
        Eigen::internal::pstoreu(v.data() + i * lanes / packets_per_vec, p);
    }
#else
    (void)v;
#endif
}

// v = value in every lane: one broadcast, written as whole Vecs. Eigen's setConstant left the
// writing to GCC, which, tuning for an Intel core with AVX-512 (-march=native on one prefers
// 256-bit vectors), stored each Vec to the stack as two 8-float halves that the multiply-adds then
// read back as one 16-float load: a load spanning two stores cannot take its data from them and
// waits until both reach the cache. LeNet conv2's forward spent most of its time waiting on
// those loads (perf annotate) and ran far longer than it does with this, on an Intel Xeon that
// reports model 167 (3 alternating runs of conv2d_forward_direct/cpu_eigen_omp/lenet_conv2, 3
// interleaved repetitions each). The blocks' sums, started at the bias or at zero, go through it
// too: the same halves, once per block.
inline void broadcast(Vec& v, float value) {
#if defined(__AVX__)
    const Packet p = Eigen::internal::pset1<Packet>(value);
    for (int i = 0; i < packets_per_vec; ++i)
        Eigen::internal::pstoreu(v.data() + i * lanes / packets_per_vec, p);
#else
    v.setConstant(value);
#endif
}

// Hides where p points from the compiler: an empty asm statement that claims to change it.
// correlate_block passes each tap's window of inputs through it. Otherwise GCC sees that tap t + 1
// reads the inputs tap t read, shifted by one, and carries them from tap to tap in general and
// vector registers (predictive commoning): a scalar move and a broadcast from a register, a
// shuffle, for every input, and with 4 Vecs of channels by 6 pixels an input kept on the stack.
// Through an opaque pointer every multiply-add broadcasts its input straight from memory. On a
// Zen 5 (3 alternating runs), LeNet conv2's forward (1 Vec by 10 pixels) ran measurably faster
// that way, ResNet's 3x3 no differently (conv2d_forward_direct/cpu_eigen_omp/lenet_conv2 and
// resnet_3x3, lesson 08's table).
inline void opaque(const float*& p) {
#if defined(__GNUC__)
    asm("" : "+r"(p));
#else
    (void)p;
#endif
}

// Calls body(std::integral_constant<int, n>{}): a count known only at run time, 1 .. Most, made
// a template argument, so that a block's loops over it unroll and its sums are registers.
template <int Most, typename Body>
void with_constant(std::int64_t n, Body body) {
    [&]<int... I>(std::integer_sequence<int, I...>) {
        ((n == I + 1 ? body(std::integral_constant<int, I + 1>{}) : void()), ...);
    }
    (std::make_integer_sequence<int, Most>{});
}

// --- forward and backward_data: correlate_batch ----------------------------------------------

// At most this many output channels, and with stride 1, correlate_batch may vectorise over pixels
// (correlate_by_pixels, correlate_by_inputs) instead of output channels: LeNet's conv1 has 6, and
// its backward_data 1, which would fill 6 or 1 of a Vec's 16 lanes.
constexpr std::int64_t most_channels_by_pixels = 8;

// The three kernels of correlate_batch; plan() picks one.
enum class Kernel { by_channels, by_pixels, by_inputs };

// One correlation: a padded image (in_channels, rows, cols) with filters (in_channels, R, S,
// out_lanes) into an output (out_channels, P, Q); out_lanes is out_channels rounded up to whole
// Vecs, the filters holding zeros past out_channels. The padded image is large enough for every
// block a kernel computes in full (outputs past the edges are computed and dropped).
struct Correlation {
    std::int64_t in_channels, out_channels, out_lanes;
    std::int64_t R, S, stride_h, stride_w;
    std::int64_t P, Q;
    Kernel kernel = Kernel::by_channels;
    std::int64_t width = 1;           // by channels: output pixels per block
    std::int64_t flat = 0;            // by pixels and by inputs: the flat plane, whole blocks
    std::int64_t block = 0;           // by pixels and by inputs: sums per block of the flat plane
    std::int64_t rows = 0, cols = 0;  // the padded image's plane (by inputs: padded by rows only)
    std::int64_t left = 0;            // by inputs: the padded column of input column 0
    // by inputs: column_masks[t*ceil(Q/lanes) + b], bit l set where output b*lanes + l exists
    // and its input column under filter column t exists too (add_shifted_taps)
    std::vector<std::uint32_t> column_masks = {};
};

// The loops over a block's sums carry `#pragma GCC unroll`: unrolled, each sum is a register;
// GCC otherwise kept a loop of 25 sums in memory, a load and a store per multiply-add.

// By channels: tile (Width, Vecs*lanes) = bias + the correlation at output pixels
// (p, q0 .. q0+Width-1) for the channels lane0 .. lane0 + Vecs*lanes - 1. The Width*Vecs sums
// (24 at most with AVX-512's 32 registers, 12 with AVX2's 16) stay in registers for the whole
// loop over (c, r, t).
//
// Two ways to feed them. One tap at a time, each input value is broadcast straight from memory
// into its multiply-add (an embedded broadcast: one instruction, but a load for every
// multiply-add that shares the weight Vecs). Two taps at a time (stride 1, where the registers
// hold both taps' weights and Width + 1 broadcast inputs beside the sums): output j reads input
// j + t through tap t and input j + t + 1 through tap t + 1, which output j + 1 reads through tap
// t, so each of the Width + 1 inputs is broadcast into a register once and serves two taps. On a
// Zen 5, a throwaway loop of 10 sums ran markedly faster on one core with the inputs in registers
// than with a broadcast per multiply-add, and so did LeNet conv2's forward (1 Vec by 10 pixels, 2
// pairs and a single tap per filter row; 2 alternating runs, 3 interleaved repetitions each).
// Blocks of 4 Vecs (ResNet's 3x3) do not fit the pairs' registers and go one tap at a time; there
// each broadcast already serves 4 multiply-adds. Each sum still adds its taps in the same order, so
// the results are the same bits either way.
using UnitStride = std::integral_constant<std::int64_t, 1>;  // a stride of 1, known at compile time

// Whether a block of Width x Vecs sums takes its taps in pairs: the sums, two taps' weights and
// Width + 1 broadcast inputs all in registers at once (LeNet conv2's 10 x 1: 10 + 2 + 11 of 32).
template <int Vecs, int Width>
constexpr bool pairs_taps = fits_in_registers(Width* Vecs, 2 * Vecs + Width);

template <int Vecs, int Width, typename Stride>
void correlate_block(const Correlation& g, const float* image, const float* filters,
                     const float* bias, std::int64_t p, std::int64_t q0, std::int64_t lane0,
                     Stride stride_w, float* tile) {
    constexpr bool paired = std::is_same_v<Stride, UnitStride> && pairs_taps<Vecs, Width>;
    Vec sums[Width][Vecs];
    for (int j = 0; j < Width; ++j)
        for (int v = 0; v < Vecs; ++v) sums[j][v] = Eigen::Map<const Vec>(bias + lane0 + v * lanes);
    auto load_weights = [&](const float* tap, Vec(&weights)[Vecs]) {
        for (int v = 0; v < Vecs; ++v) {
            weights[v] = Eigen::Map<const Vec>(tap + v * lanes);
            if constexpr (fits_in_registers(Width * Vecs, (paired ? 2 : 1) * Vecs))
                keep_in_register(weights[v]);
        }
    };
    for (std::int64_t c = 0; c < g.in_channels; ++c)
        for (std::int64_t r = 0; r < g.R; ++r) {
            const float* in = image + (c * g.rows + p * g.stride_h + r) * g.cols + q0 * stride_w;
            const float* taps = filters + (c * g.R + r) * g.S * g.out_lanes + lane0;
            std::int64_t t = 0;
            if constexpr (paired)
                for (; t + 1 < g.S; t += 2) {
                    Vec first[Vecs], second[Vecs];  // the weights of taps t and t + 1
                    load_weights(taps + t * g.out_lanes, first);
                    load_weights(taps + (t + 1) * g.out_lanes, second);
                    const float* window = in + t;
                    opaque(window);
                    Vec values[Width + 1];
#pragma GCC unroll 32
                    for (int j = 0; j <= Width; ++j) broadcast(values[j], window[j]);
#pragma GCC unroll 32
                    for (int j = 0; j < Width; ++j)
                        for (int v = 0; v < Vecs; ++v) {
                            sums[j][v] += values[j] * first[v];
                            sums[j][v] += values[j + 1] * second[v];
                        }
                }
            for (; t < g.S; ++t) {
                Vec weights[Vecs];
                load_weights(taps + t * g.out_lanes, weights);
                const float* window = in + t;
                opaque(window);
#pragma GCC unroll 32
                for (int j = 0; j < Width; ++j) {
                    const float value = window[j * stride_w];
                    for (int v = 0; v < Vecs; ++v) sums[j][v] += value * weights[v];
                }
            }
        }
    for (int j = 0; j < Width; ++j)
        for (int v = 0; v < Vecs; ++v) Eigen::Map<Vec>(tile + (j * Vecs + v) * lanes) = sums[j][v];
}

// out_rows[k*plane + j] = tile[j*Vecs*lanes + k] for k < channels, j < pixels: a block's tile
// (pixel, channel) transposed into the output's (channel, pixel) rows, `plane` floats apart.
// With AVX or AVX-512, `lanes` pixels at a time by Eigen's in-register transpose of a square
// block of Vecs (ptranspose: channel k's pixels become one Vec) and a masked store of the pixels
// that exist, where more than half of the Vecs are pixels (LeNet conv2's blocks of 10; ResNet's
// 6, done so, ran no faster). Element by element, LeNet conv2's forward spent a measurable share
// of its time here (perf: 160 scalar loads and 160 scalar stores per block of 10 pixels).
template <int Vecs, int Width>
void store_transposed(const float* tile, std::int64_t channels, std::int64_t pixels,
                      std::int64_t plane, float* out_rows) {
    constexpr std::int64_t tile_lanes = Vecs * lanes;
#if defined(__AVX__)
// Packet is __m512 (or __m256), whose alignment attribute GCC drops, with a warning, where it is
// a template argument; harmless here, as in Eigen's own uses of these templates.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
    static_assert(Eigen::internal::unpacket_traits<Packet>::size == lanes);
    using Mask = typename Eigen::internal::unpacket_traits<Packet>::mask_t;
    if constexpr (2 * Width > lanes)
        for (int v = 0; v < Vecs; ++v)
            for (std::int64_t j0 = 0; j0 < pixels; j0 += lanes) {
                Eigen::internal::PacketBlock<Packet, lanes> block;
                for (int i = 0; i < lanes; ++i)
                    block.packet[i] = j0 + i < Width ? Eigen::internal::ploadu<Packet>(
                                                           tile + (j0 + i) * tile_lanes + v * lanes)
                                                     : Eigen::internal::pset1<Packet>(0.0f);
                Eigen::internal::ptranspose(block);  // packet[k]: channel v*lanes + k, pixels j0 ..
                const std::int64_t count = std::min(lanes, pixels - j0);
                const Mask mask = static_cast<Mask>((std::uint32_t{1} << count) - 1);
                for (std::int64_t k = 0; k < std::min(lanes, channels - v * lanes); ++k)
                    Eigen::internal::pstoreu(out_rows + (v * lanes + k) * plane + j0,
                                             block.packet[k], mask);
            }
    else
        for (std::int64_t k = 0; k < channels; ++k) {
            float* out_row = out_rows + k * plane;
            for (std::int64_t j = 0; j < pixels; ++j) out_row[j] = tile[j * tile_lanes + k];
        }
#pragma GCC diagnostic pop
#else
    for (std::int64_t k = 0; k < channels; ++k)
        for (std::int64_t j = 0; j < pixels; ++j)
            out_rows[k * plane + j] = tile[j * tile_lanes + k];
#endif
}

// out (out_channels, P, Q) = the correlation of one padded image, block by block, each block's
// tile (pixel, channel) transposed into out's (channel, pixel) planes. Kept out of line, as
// correlate_flat_block is: inlined into correlate_batch once it had three kernels to call, its
// AVX2 blocks of 12 sums had a register fewer, spilled one sum to the stack in the innermost
// loop, and ResNet's 3x3 forward ran about twice as slow (an AVX2 build on a Zen 5).
template <int Vecs, int Width, typename Stride>
[[gnu::noinline]] void correlate_by_channels(const Correlation& g, const float* image,
                                             const float* filters, const float* bias,
                                             Stride stride_w, float* out) {
    constexpr std::int64_t tile_lanes = Vecs * lanes;
    alignas(64) float tile[Width * tile_lanes];
    for (std::int64_t p = 0; p < g.P; ++p)
        for (std::int64_t q0 = 0; q0 < g.Q; q0 += Width)
            for (std::int64_t lane0 = 0; lane0 < g.out_lanes; lane0 += tile_lanes) {
                correlate_block<Vecs, Width>(g, image, filters, bias, p, q0, lane0, stride_w, tile);
                store_transposed<Vecs, Width>(tile, std::min(tile_lanes, g.out_channels - lane0),
                                              std::min<std::int64_t>(Width, g.Q - q0), g.P * g.Q,
                                              out + (lane0 * g.P + p) * g.Q + q0);
            }
}

template <int... Widths>
using WidthList = std::integer_sequence<int, Widths...>;

// Calls body(vecs, stride_w, widths) with the block shapes correlate_by_channels is compiled
// for. With AVX-512: 4 Vecs of channels (64) by 5 or 6 pixels when out_lanes is a multiple of 64,
// 24 sums with the 4 weight Vecs and a broadcast beside them, 29 of the 32 registers; each input
// broadcast then serves 4 multiply-adds and each weight Vec 6. ResNet's 3x3 (64 channels both
// ways) ran its forward measurably faster with these than with 2 Vecs by 8 pixels (16 sums) on a
// Zen 5, though its rows of 56 are computed as 60. 4 by 7 (28 sums, one spilled to the stack)
// ran between the two. Else 2 Vecs (32 channels) when out_lanes is a multiple of 32, 1
// otherwise, widths up to 24 sums. With AVX2, 2 Vecs (16 channels) by 5 or 6 pixels, 12 sums
// with the 2 weight Vecs and a broadcast, 15 of the 16 registers; 1 Vec up to 12 sums. Blocks of
// 4 Vecs by 4 to 8 pixels (16 to 32 sums), once chosen for ResNet's 3x3 on a Zen 3, spilled sums
// to the stack: in an AVX2 build (-march=znver3) on the Zen 5 (3 alternating runs), ResNet's
// forward and its forward+backward ran markedly faster with the 2 Vecs by 5 or 6. Narrower blocks
// that cut a row exactly ran slower (2 by 4 on ResNet's 56; 2 by 7, 14 sums, one spilled), so the
// widths start at 5. A stride of 1 is a compile-time constant with a choice of widths, so that a
// row splits into blocks with little waste (LeNet's Q = 10 and 28 exactly); a larger stride, rare,
// gets one width.
template <typename Body>
void with_block_shapes(const Correlation& g, Body body) {
    using OneVec = std::integral_constant<int, 1>;
    using TwoVecs = std::integral_constant<int, 2>;
    const bool two = g.out_lanes % (2 * lanes) == 0;
    if (g.stride_w == 1) {
        const UnitStride unit;
        if constexpr (many_registers) {
            if (g.out_lanes % (4 * lanes) == 0)
                body(std::integral_constant<int, 4>{}, unit, WidthList<5, 6>{});
            else if (two)
                body(TwoVecs{}, unit, WidthList<4, 6, 8, 10, 12>{});
            else
                body(OneVec{}, unit, WidthList<4, 8, 10, 12, 14, 16, 20, 24>{});
        } else {
            if (two)
                body(TwoVecs{}, unit, WidthList<5, 6>{});
            else
                body(OneVec{}, unit, WidthList<4, 6, 7, 8, 10, 12>{});
        }
    } else {
        constexpr int width = many_registers ? 8 : 4;
        if (two)
            body(TwoVecs{}, g.stride_w, WidthList<width>{});
        else
            body(OneVec{}, g.stride_w, WidthList<width>{});
    }
}

template <int Vecs, typename Stride, int... Widths>
void correlate_by_channels_of_width(const Correlation& g, WidthList<Widths...>, const float* image,
                                    const float* filters, const float* bias, Stride stride_w,
                                    float* out) {
    ((g.width == Widths
          ? correlate_by_channels<Vecs, Widths>(g, image, filters, bias, stride_w, out)
          : void()),
     ...);
}

// By pixels (stride 1 only): output (p, q) reads input (p + r, q + t), so in the padded image
// seen flat, output i = p*cols + q reads input i + r*cols + t. Computed for every i of the flat
// plane (the columns q >= Q of each row too, dropped afterwards), 16 consecutive outputs read 16
// consecutive inputs: one unaligned Vec load per tap, times each channel's weight.

// The Vecs of outputs per block for `channels` output channels: about 12 sums in all, enough to
// hide the multiply-add's latency (4 cycles, 2 issued per cycle); with AVX2's 16 registers at
// most 12, leaving room for the inputs.
constexpr std::int64_t flat_vecs(std::int64_t channels) {
    return many_registers ? ceil_div<std::int64_t>(12, channels)
                          : std::max<std::int64_t>(1, 12 / channels);
}

// flat_out[k, i0 .. i0 + flat_vecs*lanes - 1] = bias[k] + the correlation there, for every one of
// the Channels (= out_channels) channels. Filter rows r with live[r] false are skipped: every input
// the block reads through them is padding (a zero). Kept out of line: GCC once inlined it into
// correlate_batch's loop after an unrelated change there, and LeNet conv2's forward+backward,
// whose backward_data runs it, ran measurably slower.
template <int Channels>
[[gnu::noinline]] void correlate_flat_block(const Correlation& g, const float* image,
                                            const float* filters, const float* bias,
                                            std::int64_t i0, const char* live, float* flat_out) {
    constexpr int Vecs = flat_vecs(Channels);
    Vec sums[Channels][Vecs];
    for (int k = 0; k < Channels; ++k)
        for (int v = 0; v < Vecs; ++v) broadcast(sums[k][v], bias[k]);
    for (std::int64_t c = 0; c < g.in_channels; ++c)
        for (std::int64_t r = 0; r < g.R; ++r) {
            if (!live[r]) continue;
            for (std::int64_t t = 0; t < g.S; ++t) {
                const float* in = image + (c * g.rows + r) * g.cols + t + i0;
                const float* weights = filters + ((c * g.R + r) * g.S + t) * g.out_lanes;
                Vec values[Vecs];
                for (int v = 0; v < Vecs; ++v) {
                    values[v] = Eigen::Map<const Vec>(in + v * lanes);
                    if constexpr (fits_in_registers(Channels * Vecs, Vecs))
                        keep_in_register(values[v]);
                }
#pragma GCC unroll 32
                for (int k = 0; k < Channels; ++k)
                    for (int v = 0; v < Vecs; ++v) sums[k][v] += weights[k] * values[v];
            }
        }
    for (int k = 0; k < Channels; ++k)
        for (int v = 0; v < Vecs; ++v)
            Eigen::Map<Vec>(flat_out + k * g.flat + i0 + v * lanes) = sums[k][v];
}

// Which filter rows each block of correlate_by_pixels (or correlate_by_inputs) reads any data
// through: live[b*R + r] is false when every input that block b (the g.block sums of the flat
// plane from b*g.block on) reads through filter row r is padding, so the block skips that row. The
// transposed convolution of backward_data reads dy padded by R - 1 - pad_h rows above and below
// (and, with a stride, spread by zero rows): up to 2 in 7 of LeNet conv2's row reads. The same for
// every image, so it is worked out once per call, from the rows an input row is placed on
// (Placement).
std::vector<char> live_rows(const Correlation& g, std::int64_t H, Placement at) {
    const std::int64_t block = g.block;
    std::vector<char> data(static_cast<std::size_t>(g.rows), 0);
    for (std::int64_t h = 0; h < H; ++h) {
        const std::int64_t row = at.top + h * at.step_h;
        if (row >= 0 && row < g.rows) data[static_cast<std::size_t>(row)] = 1;
    }
    const std::int64_t blocks = g.flat / block;
    std::vector<char> live(static_cast<std::size_t>(blocks * g.R), 0);
    for (std::int64_t b = 0; b < blocks; ++b) {
        // the block's outputs lie on rows first .. last of the flat plane; filter row r reads
        // the padded rows first + r .. last + r
        const std::int64_t first = b * block / g.cols, last = ((b + 1) * block - 1) / g.cols;
        for (std::int64_t r = 0; r < g.R; ++r)
            for (std::int64_t row = first + r; row <= last + r; ++row)
                if (data[static_cast<std::size_t>(row)])
                    live[static_cast<std::size_t>(b * g.R + r)] = 1;
    }
    return live;
}

// out (out_channels, P, Q) = the correlation of one padded image, through flat_out
// (out_channels, flat): block by block, then the first Q outputs of each row copied out.
template <int Channels>
void correlate_by_pixels(const Correlation& g, const float* image, const float* filters,
                         const float* bias, const char* live, float* flat_out, float* out) {
    constexpr std::int64_t block = flat_vecs(Channels) * lanes;
    for (std::int64_t i0 = 0; i0 < g.flat; i0 += block)
        correlate_flat_block<Channels>(g, image, filters, bias, i0, live + i0 / block * g.R,
                                       flat_out);
    for (std::int64_t k = 0; k < Channels; ++k)
        for (std::int64_t p = 0; p < g.P; ++p) {
            const float* row = flat_out + k * g.flat + p * g.cols;
            std::copy(row, row + g.Q, out + (k * g.P + p) * g.Q);
        }
}

// By inputs (stride 1, few output channels), for inputs much narrower than the padded rows by
// pixels would compute over: backward_data's dy, padded by S - 1 - pad_w zero columns on each
// side. By pixels spends lanes on those zeros: LeNet conv2's backward_data reads rows of 10 inputs
// through flat rows of 14, and a third of its multiply-adds multiply a zero. Here the Vecs run
// along the input's own rows instead (padded above and below, not at the sides), and each filter
// column t keeps sums of its own:
//     taps[k, t, p, q] = the sum over c and r of f[c, r, t, k] * in[c, row p + r, column q]
// for every input column q, and each output adds them up, each column's shifted by its t:
//     out[k, p, j] = bias[k] + the sum over t of taps[k, t, p, j + t - left]
// where `left` is the padded column of input column 0 (a column outside the input adds nothing).
// In the input plane seen flat, with rows of W, the sum at i = p*W + q reads input i + r*W, as by
// pixels does: 16 consecutive sums, 16 consecutive inputs, one Vec load. Per channel and tap,
// LeNet conv2's backward_data computes 14 rows of 10 sums, where by pixels computed 14 rows of 14
// outputs (before both round up to whole blocks).

// The most sums of a block of correlate_inputs_block, with room for the inputs' Vecs and a
// broadcast weight: 24 of AVX-512's 32 registers, 12 of AVX2's 16.
constexpr int inputs_sums = many_registers ? 24 : 12;

// Vecs of sums per channel and filter column in a block: 2 where the sums allow, so that each
// broadcast weight serves two multiply-adds, as by pixels' do. With one Vec (and blocks of 3 and 2
// filter columns with AVX-512), every multiply-add loaded a weight of its own, and LeNet conv2's
// backward_data ran no faster than by pixels, though it does a fifth fewer multiply-adds.
constexpr int inputs_vecs(std::int64_t channels) { return 2 * channels <= inputs_sums ? 2 : 1; }

// The most floats of filter-column sums (out_channels x S x the flat plane) that by inputs keeps
// per thread: 32 KiB, an L1 data cache, where add_shifted_taps reads back what the blocks wrote.
// Past it by inputs lost to by pixels: a 9 x 9 filter on 4 channels of 32 x 32 (144 KiB of sums)
// ran markedly slower, on 16 x 16 (36 KiB) measurably slower (Zen 5, an interleaved A/B of the two
// kernels). Within it the count can still be wrong where it is close: on 8 x 8 (9 KiB), by inputs
// counts 20 against 24 and ran slightly slower.
constexpr std::int64_t most_tap_sums = 8192;

// What plan() counts for one masked load-and-add of add_shifted_taps, in multiply-adds of the
// kernels: about 4, from the share perf gave it (a fifth of a 9 x 9 forward on 8 x 8 images).
constexpr std::int64_t shifted_add_cost = 4;

// Filter columns per block for `channels` output channels, at most 12.
constexpr int inputs_taps(std::int64_t channels) {
    return static_cast<int>(
        std::clamp<std::int64_t>(inputs_sums / (channels * inputs_vecs(channels)), 1, 12));
}

// taps[k, t0 + j, i0 .. i0 + Vecs*lanes - 1] for every channel k < Channels and the filter
// columns t0 .. t0 + Taps - 1; taps is (Channels, S, flat). Filter rows r with live[r] false are
// skipped: every input the block reads through them is a row of padding.
template <int Channels, int Taps>
[[gnu::noinline]] void correlate_inputs_block(const Correlation& g, const float* image,
                                              const float* filters, std::int64_t i0,
                                              std::int64_t t0, const char* live, float* taps) {
    constexpr int Vecs = inputs_vecs(Channels);
    Vec sums[Channels][Taps][Vecs];
    for (int k = 0; k < Channels; ++k)
        for (int j = 0; j < Taps; ++j)
            for (int v = 0; v < Vecs; ++v) broadcast(sums[k][j][v], 0.0f);
    for (std::int64_t c = 0; c < g.in_channels; ++c)
        for (std::int64_t r = 0; r < g.R; ++r) {
            if (!live[r]) continue;
            const float* in = image + (c * g.rows + r) * g.cols + i0;
            Vec values[Vecs];
            for (int v = 0; v < Vecs; ++v) {
                values[v] = Eigen::Map<const Vec>(in + v * lanes);
                if constexpr (fits_in_registers(Channels * Taps * Vecs, Vecs))
                    keep_in_register(values[v]);
            }
            const float* weights = filters + ((c * g.R + r) * g.S + t0) * g.out_lanes;
#pragma GCC unroll 32
            for (int j = 0; j < Taps; ++j)
                for (int k = 0; k < Channels; ++k)
                    for (int v = 0; v < Vecs; ++v)
                        sums[k][j][v] += weights[j * g.out_lanes + k] * values[v];
        }
    for (int k = 0; k < Channels; ++k)
        for (int j = 0; j < Taps; ++j)
            for (int v = 0; v < Vecs; ++v)
                Eigen::Map<Vec>(taps + (k * g.S + t0 + j) * g.flat + i0 + v * lanes) =
                    sums[k][j][v];
}

// out[k, p, j] = bias[k] + the sum over t of taps[k, t, p, j + t - left], for j < Q, the columns
// added in the order of t. With AVX, a Vec of outputs at a time: each filter column's sums are
// loaded under a mask of the lanes whose input column exists (g.column_masks; the other lanes are
// not read, and count as zeros), and the outputs stored under a mask of those that exist. Four
// rows at a time, so that four chains of adds overlap (one row at a time, each add waited for the
// one before it). taps must have `lanes` floats to spare before and after it: a masked load's
// address may lie up to lanes - 1 floats outside its row.
void add_shifted_taps(const Correlation& g, const float* taps, const float* bias, float* out) {
    const auto column = [&](std::int64_t j, std::int64_t t) { return j + t - g.left; };
#if defined(__AVX__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"  // as in store_transposed
    using Mask = typename Eigen::internal::unpacket_traits<Packet>::mask_t;
    static_assert(Eigen::internal::unpacket_traits<Packet>::size == lanes);
    constexpr int rows_at_once = 4;
    const std::int64_t blocks = ceil_div(g.Q, lanes);
    for (std::int64_t k = 0; k < g.out_channels; ++k)
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t j0 = b * lanes, count = std::min(lanes, g.Q - j0);
            const auto stored = static_cast<Mask>((std::uint32_t{1} << count) - 1);
            for (std::int64_t p0 = 0; p0 < g.P; p0 += rows_at_once) {
                const std::int64_t rows = std::min<std::int64_t>(rows_at_once, g.P - p0);
                Packet sums[rows_at_once];
                for (int i = 0; i < rows_at_once; ++i)
                    sums[i] = Eigen::internal::pset1<Packet>(bias[k]);
                for (std::int64_t t = 0; t < g.S; ++t) {
                    const auto mask =
                        static_cast<Mask>(g.column_masks[static_cast<std::size_t>(t * blocks + b)]);
                    if (mask == 0) continue;
                    const float* at = taps + (k * g.S + t) * g.flat + p0 * g.cols + column(j0, t);
                    for (int i = 0; i < rows_at_once; ++i)
                        if (i < rows)
                            sums[i] = Eigen::internal::padd(
                                sums[i], Eigen::internal::ploadu<Packet>(at + i * g.cols, mask));
                }
                for (int i = 0; i < rows; ++i)
                    Eigen::internal::pstoreu(out + (k * g.P + p0 + i) * g.Q + j0, sums[i], stored);
            }
        }
#pragma GCC diagnostic pop
#else
    for (std::int64_t k = 0; k < g.out_channels; ++k)
        for (std::int64_t p = 0; p < g.P; ++p)
            for (std::int64_t j = 0; j < g.Q; ++j) {
                float sum = bias[k];
                for (std::int64_t t = 0; t < g.S; ++t) {
                    const std::int64_t q = column(j, t);
                    if (q >= 0 && q < g.cols) sum += taps[(k * g.S + t) * g.flat + p * g.cols + q];
                }
                out[(k * g.P + p) * g.Q + j] = sum;
            }
#endif
}

// out (out_channels, P, Q) = the correlation of one image padded by rows, through taps
// (Channels, S, flat): block by block of sums and of filter columns, then the columns added up.
// A filter's S columns go in as few blocks as inputs_taps allows, of nearly equal widths, so that
// no block is left with too few sums to hide the multiply-add's latency (5 columns in blocks of
// at most 4: 3 and 2, not 4 and 1).
template <int Channels>
void correlate_by_inputs(const Correlation& g, const float* image, const float* filters,
                         const float* bias, const char* live, float* taps, float* out) {
    constexpr int most = inputs_taps(Channels);
    constexpr std::int64_t block = inputs_vecs(Channels) * lanes;
    const std::int64_t per_block = ceil_div<std::int64_t>(g.S, ceil_div<std::int64_t>(g.S, most));
    for (std::int64_t i0 = 0; i0 < g.flat; i0 += block)
        for (std::int64_t t0 = 0; t0 < g.S; t0 += per_block)
            with_constant<most>(std::min(per_block, g.S - t0), [&](auto taps_here) {
                correlate_inputs_block<Channels, decltype(taps_here)::value>(
                    g, image, filters, i0, t0, live + i0 / block * g.R, taps);
            });
    add_shifted_taps(g, taps, bias, out);
}

// Of `widths` (ascending), the one that computes the fewest outputs for a row of Q (whole
// blocks); the widest of those.
template <int... Widths>
std::int64_t best_width(std::int64_t Q, WidthList<Widths...>) {
    std::int64_t best = 0, fewest = std::numeric_limits<std::int64_t>::max();
    for (std::int64_t width : {Widths...})
        if (ceil_div(Q, width) * width <= fewest) {
            best = width;
            fewest = ceil_div(Q, width) * width;
        }
    return best;
}

// The flat planes of by pixels for a P x Q output and an R x S filter at stride 1: rows of
// cols = Q + S - 1 - margin, flat = P*cols rounded up to whole blocks of `block` outputs, and the
// rows the padded input needs for the last block's last tap (it reads up to
// flat - 1 + (R-1)*cols + S-1).
//
// A padded row is Q + S - 1 wide, but where it begins and ends with `margin` columns of zeros
// (shared_margin), neighbouring rows may share them: the flat row is `margin` shorter, and an
// output near its end whose taps run past it reads the next row's first columns, zeros, where
// the wider row's last columns, zeros too, would have been. So every output is the same, and
// `margin` fewer outputs per row are computed and dropped. LeNet conv2's backward_data, dy
// (10 wide) padded by 4 on each side, gets rows of 14 for 18: 18% fewer multiply-adds.
struct FlatPlanes {
    std::int64_t cols, flat, rows;
};

FlatPlanes flat_planes(std::int64_t P, std::int64_t Q, std::int64_t R, std::int64_t S,
                       std::int64_t block, std::int64_t margin) {
    const std::int64_t cols = Q + S - 1 - margin;
    const std::int64_t flat = ceil_div(P * cols, block) * block;
    return {cols, flat, ceil_div(flat + (R - 1) * cols + S - 1, cols)};
}

// The zero columns that the rows of a (width W, placed `at`) input, padded for a stride-1
// correlation into Q outputs with S taps, have at both ends: at most S - 1, 0 where the
// placement cuts the input off.
std::int64_t shared_margin(std::int64_t Q, std::int64_t S, std::int64_t W, Placement at) {
    const std::int64_t last = at.left + (W - 1) * at.step_w;  // the last input column
    const std::int64_t right = Q + S - 1 - 1 - last;          // the zero columns after it
    return std::clamp<std::int64_t>(std::min(at.left, right), 0, S - 1);
}

// A correlation of an input (in_channels, H, W) placed `at`, with its kernel and block shape
// chosen and its padded plane sized. Each kernel's cost is counted in Vec multiply-adds per
// (input channel, r, t), and the cheapest taken: by channels out_lanes/16 per output pixel
// computed; by pixels out_channels per 16 outputs of the flat plane (rows of cols); by inputs
// out_channels per 16 sums (P rows of W), plus adding the filter columns up (one masked add per
// output Vec and filter column, counted as shifted_add_cost). LeNet's conv1 goes by pixels, conv2's
// backward_data by inputs (65 against 84 by pixels, with AVX-512), conv2 and ResNet's 3x3 by
// channels.
Correlation plan(std::int64_t in_channels, std::int64_t out_channels, std::int64_t R,
                 std::int64_t S, std::int64_t stride_h, std::int64_t stride_w, std::int64_t P,
                 std::int64_t Q, std::int64_t W, Placement at) {
    Correlation g{.in_channels = in_channels,
                  .out_channels = out_channels,
                  .out_lanes = ceil_div(out_channels, lanes) * lanes,
                  .R = R,
                  .S = S,
                  .stride_h = stride_h,
                  .stride_w = stride_w,
                  .P = P,
                  .Q = Q};
    with_block_shapes(g, [&](auto, auto, auto widths) { g.width = best_width(Q, widths); });
    const std::int64_t by_channels_cost = g.out_lanes / lanes * P * ceil_div(Q, g.width) * g.width;
    const bool few_channels =
        stride_h == 1 && stride_w == 1 && out_channels <= most_channels_by_pixels;
    const std::int64_t pixels_block = flat_vecs(out_channels) * lanes;
    const FlatPlanes flat = flat_planes(P, Q, R, S, pixels_block, shared_margin(Q, S, W, at));
    const std::int64_t by_pixels_cost = out_channels * flat.flat / lanes;
    const std::int64_t inputs_block = inputs_vecs(out_channels) * lanes;
    const std::int64_t inputs_flat = ceil_div(P * W, inputs_block) * inputs_block;
    const std::int64_t by_inputs_cost =
        out_channels * inputs_flat / lanes +
        ceil_div(shifted_add_cost * out_channels * P * ceil_div(Q, lanes), in_channels * R);
    // by inputs' sums (S per position of the flat plane of inputs) and masks (S per Vec of outputs)
    // within most_tap_sums, written so that no product can overflow
    const bool inputs_fit = inputs_flat <= most_tap_sums / (out_channels * S) &&
                            S * ceil_div(Q, lanes) <= most_tap_sums;
    if (few_channels && at.step_w == 1 && inputs_fit &&
        by_inputs_cost < std::min(by_pixels_cost, by_channels_cost)) {
        g.kernel = Kernel::by_inputs;
        g.flat = inputs_flat;
        g.block = inputs_block;
        g.cols = W;
        g.rows = R - 1 + ceil_div(inputs_flat, W);  // the last block's last filter row
        g.left = at.left;
        const std::int64_t blocks = ceil_div(Q, lanes);
        g.column_masks.assign(static_cast<std::size_t>(S * blocks), 0);
        for (std::int64_t t = 0; t < S; ++t)
            for (std::int64_t j = 0; j < Q; ++j)
                if (const std::int64_t q = j + t - g.left; q >= 0 && q < W)
                    g.column_masks[static_cast<std::size_t>(t * blocks + j / lanes)] |=
                        std::uint32_t{1} << (j % lanes);
    } else if (few_channels && by_pixels_cost < by_channels_cost) {
        g.kernel = Kernel::by_pixels;
        g.flat = flat.flat;
        g.block = pixels_block;
        g.cols = flat.cols;
        g.rows = flat.rows;
    } else {
        g.rows = (P - 1) * stride_h + R;
        g.cols = (ceil_div(Q, g.width) * g.width - 1) * stride_w + S;
    }
    return g;
}

// What a correlation works out once per call, for every image: the plane its input is placed
// in, which filter rows each block reads data through (by pixels and by inputs), and the scratch
// each thread needs.
struct Prepared {
    Correlation g;
    std::int64_t H, W;
    Placement placed;
    std::vector<char> live;
    // Where the padded plane would be the input itself (no padding, no spread, blocks that end
    // at its edges: LeNet's conv2 forward), the kernels read the input where it lies.
    bool in_place;
    std::int64_t padded_size, sums_size;
};

Prepared prepare(const Correlation& g, std::int64_t H, std::int64_t W, Placement at) {
    // By inputs, the input is padded above and below only, its columns where they are.
    const Placement placed =
        g.kernel == Kernel::by_inputs ? Placement{at.top, 0, at.step_h, 1} : at;
    const bool in_place = g.kernel == Kernel::by_channels && at.top == 0 && at.left == 0 &&
                          at.step_h == 1 && at.step_w == 1 && g.rows == H && g.cols == W;
    // by pixels: the flat outputs; by inputs: the filter columns' sums, `lanes` spare at each end
    const std::int64_t sums_size = g.kernel == Kernel::by_pixels ? g.out_channels * g.flat
                                   : g.kernel == Kernel::by_inputs
                                       ? g.out_channels * g.S * g.flat + 2 * lanes
                                       : 0;
    return {g,
            H,
            W,
            placed,
            g.kernel == Kernel::by_channels ? std::vector<char>{} : live_rows(g, H, at),
            in_place,
            in_place ? 0 : g.in_channels * g.rows * g.cols,
            sums_size};
}

// out (out_channels, P, Q) = bias + the correlation of one image (in_channels, H, W), padded
// into `padded` (prepared.padded_size floats) unless in place, with `sums` (sums_size) for the
// kernels that keep their sums apart.
void correlate_image(const Prepared& prepared, const float* image, const float* filters,
                     const float* bias, float* padded, float* sums, float* out) {
    const Correlation& g = prepared.g;
    if (!prepared.in_place) {
        place_padded(image, g.in_channels, prepared.H, prepared.W, prepared.placed, padded, g.rows,
                     g.cols);
        image = padded;
    }
    switch (g.kernel) {
        case Kernel::by_pixels:
            with_constant<most_channels_by_pixels>(g.out_channels, [&](auto channels) {
                correlate_by_pixels<channels()>(g, image, filters, bias, prepared.live.data(), sums,
                                                out);
            });
            break;
        case Kernel::by_inputs:
            with_constant<most_channels_by_pixels>(g.out_channels, [&](auto channels) {
                correlate_by_inputs<channels()>(g, image, filters, bias, prepared.live.data(),
                                                sums + lanes, out);
            });
            break;
        case Kernel::by_channels:
            with_block_shapes(g, [&](auto vecs, auto stride_w, auto widths) {
                correlate_by_channels_of_width<vecs()>(g, widths, image, filters, bias, stride_w,
                                                       out);
            });
            break;
    }
}

// out (N, out_channels, P, Q) = bias + the correlation of every image of in (N, in_channels,
// H, W), placed `at` in g's padded plane. OpenMP over batches of images; each thread pads one image
// at a time into its own scratch.
void correlate_batch(const Correlation& g, std::int64_t N, const float* in, std::int64_t H,
                     std::int64_t W, Placement at, const float* filters, const float* bias,
                     float* out) {
    const Prepared prepared = prepare(g, H, W, at);
    const std::int64_t out_size = g.out_channels * g.P * g.Q;
    const std::int64_t multiply_adds = out_size * g.in_channels * g.R * g.S;
    for_each_batch(N, multiply_adds, [&](std::int64_t begin, std::int64_t count) {
        const auto padded = scratch(prepared.padded_size);
        const auto sums = scratch(prepared.sums_size);
        for (std::int64_t n = begin; n < begin + count; ++n)
            correlate_image(prepared, in + n * g.in_channels * H * W, filters, bias, padded.get(),
                            sums.get(), out + n * out_size);
    });
}

// The filters as correlate_batch reads them, (in_channels, R, S, out_lanes), zeros past
// out_channels. Forward: in = C, out = K, f[c, r, t, k] = w[k, c, r, t]. Backward_data
// (`flipped`): in = K, out = C, f[k, r, t, c] = w[k, c, R-1-r, S-1-t].
Scratch filters_by_tap(const Conv2dShape& s, const Correlation& g, const float* w, bool flipped) {
    auto f = scratch(g.in_channels * s.R * s.S * g.out_lanes);
    Eigen::Map<Array>(f.get(), g.in_channels * s.R * s.S * g.out_lanes).setZero();
    for (std::int64_t k = 0; k < s.K; ++k)
        for (std::int64_t c = 0; c < s.C; ++c)
            for (std::int64_t r = 0; r < s.R; ++r)
                for (std::int64_t t = 0; t < s.S; ++t) {
                    const float weight = w[((k * s.C + c) * s.R + r) * s.S + t];
                    if (flipped)
                        f[((k * s.R + s.R - 1 - r) * s.S + s.S - 1 - t) * g.out_lanes + c] = weight;
                    else
                        f[((c * s.R + r) * s.S + t) * g.out_lanes + k] = weight;
                }
    return f;
}

// A pass's correlation, and where its input goes in the plane the correlation reads.
struct Pass {
    Correlation g;
    Placement at;
};

// forward: x padded by (pad_h, pad_w), correlated with the filters, C channels in and K out.
Pass forward_pass(const Conv2dShape& s) {
    const Placement padded{s.pad_h, s.pad_w, 1, 1};
    return {plan(s.C, s.K, s.R, s.S, s.stride_h, s.stride_w, s.P(), s.Q(), s.W, padded), padded};
}

// backward_data: dy spread out by the stride and padded by R-1-pad_h and S-1-pad_w, correlated
// at stride 1 with the filters flipped, K channels in and C out.
Pass backward_data_pass(const Conv2dShape& s) {
    const Placement spread{s.R - 1 - s.pad_h, s.S - 1 - s.pad_w, s.stride_h, s.stride_w};
    return {plan(s.K, s.C, s.R, s.S, 1, 1, s.H, s.W, s.Q(), spread), spread};
}

const char* kernel_name(Kernel kernel) {
    switch (kernel) {
        case Kernel::by_channels:
            return "by channels";
        case Kernel::by_pixels:
            return "by pixels";
        case Kernel::by_inputs:
            return "by inputs";
    }
    return "?";
}

// --- backward_weights ------------------------------------------------------------------------

// dst[j*dst_stride + i] = src[i*cols + j] for i < rows, j < cols: a row-major (rows, cols) matrix
// transposed. With AVX or AVX-512, square blocks of `lanes` x `lanes` go through registers
// (Eigen's ptranspose: lanes loads, a few dozen shuffles, lanes stores), the edges element by
// element. Element by element throughout (reading src in order, which was already faster than
// writing dst in order), it was a measurable share of ResNet 3x3's forward+backward (perf): 3.2
// million scalar loads and stores for its 16 images' dy.
void transpose(const float* src, std::int64_t rows, std::int64_t cols, float* dst,
               std::int64_t dst_stride) {
    std::int64_t full_rows = 0, full_cols = 0;  // the part done by blocks
#if defined(__AVX__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"  // as in store_transposed
    full_rows = rows / lanes * lanes;
    full_cols = cols / lanes * lanes;
    for (std::int64_t i0 = 0; i0 < full_rows; i0 += lanes)
        for (std::int64_t j0 = 0; j0 < full_cols; j0 += lanes) {
            Eigen::internal::PacketBlock<Packet, lanes> block;
            for (int i = 0; i < lanes; ++i)
                block.packet[i] = Eigen::internal::ploadu<Packet>(src + (i0 + i) * cols + j0);
            Eigen::internal::ptranspose(block);  // packet[j]: column j0 + j, rows i0 ..
            for (int j = 0; j < lanes; ++j)
                Eigen::internal::pstoreu(dst + (j0 + j) * dst_stride + i0, block.packet[j]);
        }
#pragma GCC diagnostic pop
#endif
    for (std::int64_t i = 0; i < rows; ++i)  // what the blocks left: the last columns, then rows
        for (std::int64_t j = i < full_rows ? full_cols : 0; j < cols; ++j)
            dst[j * dst_stride + i] = src[i * cols + j];
}

// The most images one chunk of weight_gradient_chunk holds: a batch of 64 makes 8 chunks, work for
// every thread, and 8 LeNet images (padded inputs and transposed gradients, 0.4 MiB at most) stay
// in L2 while every block of taps reads them.
constexpr std::int64_t chunk_images = 8;

// A block of weight_gradient_block: Taps consecutive taps (r, t0 .. t0 + Taps - 1) in each of
// Rows consecutive filter rows, for Vecs Vecs of channels: Vecs x Rows x Taps sums, up to
// gradient_sums. Within a row the taps' offsets are then compile-time constants (immediates in
// the loads) and only each row's offset needs a register. With an offset held for every tap, GCC
// ran out of general registers and reloaded one from the stack for every multiply-add, which ran
// LeNet's conv2 at a third of the multiply-add rate. Taps is the filter width S itself up to 12
// (TapWidths), so that no tap of a row is wasted; the filter's rows go in blocks of
// block_rows(Taps, Vecs), the last block taking what is left (ResNet's 3x3 with AVX-512: one
// block of 2 Vecs x 3 rows x 3 taps, 18 sums; LeNet's conv2: 4 rows of 5 taps, then 1). Blocks
// of a fixed 12 / Taps rows computed 4 rows of ResNet's 3 (the fourth dropped) and 6 of LeNet's 5.
constexpr int gradient_sums = many_registers ? 24 : 12;
constexpr int most_block_rows = 4;  // each a register for its offset, and one more block shape

constexpr int block_rows(int taps, int vecs) {
    return std::clamp(gradient_sums / (taps * vecs), 1, most_block_rows);
}
using TapWidths = WidthList<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>;

// One chunk of images, as weight_gradient_block reads them:
//   images    (count, C, rows, cols): x padded, rows = (P-1)*stride_h + R,
//             cols = (Q-1)*stride_w + S;
//   gradients (count, P*Q, out_lanes): dy[n, k, p, q] at [n, p*Q + q, k], zeros past K.
struct GradientChunk {
    std::int64_t count, rows, cols, out_lanes;
    float* images;
    float* gradients;
};

// running += the sum over image n's pixels of dy[n, k, p, q] * x_padded[n, c, p*stride_h + r,
// q*stride_w + t], for every k and the taps of the block at (r0, t0): running holds out_lanes/16
// Vecs of channels, each with Rows x Taps Vecs, one per tap, and takes Vecs of them at a time
// (each input broadcast then serves Vecs multiply-adds).
template <int Taps, int Rows, int Vecs>
void weight_gradient_block(const Conv2dShape& s, const GradientChunk& in, std::int64_t n,
                           std::int64_t c, std::int64_t r0, std::int64_t t0, float* running) {
    const std::int64_t P = s.P(), Q = s.Q();
    std::int64_t row_offsets[Rows];  // of each filter row's first tap from the window's corner
    for (int i = 0; i < Rows; ++i) row_offsets[i] = (r0 + i) * in.cols + t0;
    for (std::int64_t lane0 = 0; lane0 < in.out_lanes; lane0 += Vecs * lanes) {
        float* group = running + lane0 * Rows * Taps;
        Vec sums[Vecs][Rows][Taps];
        for (int v = 0; v < Vecs; ++v)
            for (int i = 0; i < Rows; ++i)
                for (int j = 0; j < Taps; ++j)
                    sums[v][i][j] =
                        Eigen::Map<const Vec>(group + ((v * Rows + i) * Taps + j) * lanes);
        for (std::int64_t p = 0; p < P; ++p) {
            const float* row = in.images + ((n * s.C + c) * in.rows + p * s.stride_h) * in.cols;
            const float* grad = in.gradients + (n * P + p) * Q * in.out_lanes + lane0;
            for (std::int64_t q = 0; q < Q; ++q) {
                Vec g[Vecs];
                for (int v = 0; v < Vecs; ++v) {
                    g[v] = Eigen::Map<const Vec>(grad + q * in.out_lanes + v * lanes);
                    if constexpr (fits_in_registers(Vecs * Rows * Taps, Vecs))
                        keep_in_register(g[v]);
                }
                // Not opaque, unlike correlate_block's window: carrying inputs from one pixel to
                // the next saved GCC more loads here than its moves cost. Made opaque, LeNet
                // conv2's forward+backward and large_11x11's both ran measurably slower.
                const float* window = row + q * s.stride_w;
#pragma GCC unroll 32
                for (int i = 0; i < Rows; ++i)
                    for (int j = 0; j < Taps; ++j) {
                        const float value = window[row_offsets[i] + j];
                        for (int v = 0; v < Vecs; ++v) sums[v][i][j] += value * g[v];
                    }
            }
        }
        for (int v = 0; v < Vecs; ++v)
            for (int i = 0; i < Rows; ++i)
                for (int j = 0; j < Taps; ++j)
                    Eigen::Map<Vec>(group + ((v * Rows + i) * Taps + j) * lanes) = sums[v][i][j];
    }
}

// partial (K, C, R, S) = the chunk's weight gradient by weight_gradient_block, with the width of
// `widths` that computes the fewest taps of a filter row (whole blocks). Image by image, as
// weight_gradient_flat_chunk goes (below): one image's planes stay in L1 while every block reads
// them, each block's sums carried in `running` from one image to the next.
template <int... Widths>
void weight_gradient_by_blocks(const Conv2dShape& s, const GradientChunk& in,
                               WidthList<Widths...> widths, float* partial) {
    const std::int64_t width = best_width(s.S, widths);
    auto blocks = [&](auto taps, auto vecs) {
        constexpr int Taps = decltype(taps)::value, Vecs = decltype(vecs)::value;
        constexpr int Rows = block_rows(Taps, Vecs);
        const std::int64_t row_blocks = ceil_div<std::int64_t>(s.R, Rows);
        const std::int64_t tap_blocks = ceil_div<std::int64_t>(s.S, Taps);
        const std::int64_t row_size = in.out_lanes * Taps;  // floats of sums per filter row
        // (C, tap_blocks, R, out_lanes/16, Taps) Vecs, a block's rows taking its part of the R
        // rows, in which its Vecs lie (channel Vec, row, tap)
        const auto running = scratch(s.C * tap_blocks * s.R * row_size);
        Eigen::Map<Array>(running.get(), s.C * tap_blocks * s.R * row_size).setZero();
        auto block_sums = [&](std::int64_t c, std::int64_t tb, std::int64_t r0) {
            return running.get() + ((c * tap_blocks + tb) * s.R + r0) * row_size;
        };
        for (std::int64_t n = 0; n < in.count; ++n)
            for (std::int64_t c = 0; c < s.C; ++c)
                for (std::int64_t rb = 0; rb < row_blocks; ++rb)
                    for (std::int64_t tb = 0; tb < tap_blocks; ++tb)
                        with_constant<Rows>(
                            std::min<std::int64_t>(Rows, s.R - rb * Rows), [&](auto rows) {
                                weight_gradient_block<Taps, decltype(rows)::value, Vecs>(
                                    s, in, n, c, rb * Rows, tb * Taps,
                                    block_sums(c, tb, rb * Rows));
                            });
        const std::int64_t RS = s.R * s.S;
        for (std::int64_t c = 0; c < s.C; ++c)
            for (std::int64_t r = 0; r < s.R; ++r)
                for (std::int64_t t = 0; t < s.S; ++t) {
                    const std::int64_t r0 = r / Rows * Rows;
                    const std::int64_t rows = std::min<std::int64_t>(Rows, s.R - r0);
                    const float* sums = block_sums(c, t / Taps, r0);
                    for (std::int64_t k = 0; k < s.K; ++k)
                        partial[(k * s.C + c) * RS + r * s.S + t] =
                            sums[((k / lanes * rows + r - r0) * Taps + t % Taps) * lanes +
                                 k % lanes];
                }
    };
    // 2 Vecs of channels (each broadcast input then serves two multiply-adds) where out_lanes
    // allows it and a filter row's taps for both fit the sums. With AVX-512, always. With AVX2's
    // 12 sums, only where that makes fewer passes over the chunk's images (row blocks times
    // groups of channels). An AVX2 build (-march=znver3) on a Zen 5, 3 alternating runs, with 2
    // Vecs against 1: LeNet conv2's forward+backward (5 taps: 5 passes against 6) ran measurably
    // faster; ResNet's 3x3 (8 passes either way) slightly slower; large_11x11's (11 taps, 22 sums
    // in 16 registers) measurably slower.
    const bool two = in.out_lanes % (2 * lanes) == 0;
    auto passes = [&](int taps, int vecs) {
        return ceil_div<std::int64_t>(s.R, block_rows(taps, vecs)) * in.out_lanes / (vecs * lanes);
    };
    auto of_width = [&](auto taps) {
        constexpr int Taps = decltype(taps)::value;
        if constexpr (2 * Taps <= gradient_sums) {
            if (two && (many_registers || passes(Taps, 2) < passes(Taps, 1))) {
                blocks(taps, std::integral_constant<int, 2>{});
                return;
            }
        }
        blocks(taps, std::integral_constant<int, 1>{});
    };
    ((width == Widths ? of_width(std::integral_constant<int, Widths>{}) : void()), ...);
}

// partial (K, C, R, S) = the weight gradient of images first .. first + in.count - 1 alone.
void weight_gradient_chunk(const Conv2dShape& s, const float* x, const float* dy,
                           std::int64_t first, const GradientChunk& in, float* partial) {
    const std::int64_t PQ = s.P() * s.Q(), image_size = s.C * in.rows * in.cols;
    for (std::int64_t i = 0; i < in.count; ++i) {
        const std::int64_t n = first + i;
        place_padded(x + n * s.C * s.H * s.W, s.C, s.H, s.W, Placement{s.pad_h, s.pad_w, 1, 1},
                     in.images + i * image_size, in.rows, in.cols);
        // dy[n] (K, P*Q) transposed, zeros past K
        float* grad = in.gradients + i * PQ * in.out_lanes;
        if (s.K < in.out_lanes) Eigen::Map<Array>(grad, PQ * in.out_lanes).setZero();
        transpose(dy + n * s.K * PQ, s.K, PQ, grad, in.out_lanes);
    }
    weight_gradient_by_blocks(s, in, TapWidths{}, partial);
}

// --- backward_weights by pixels ------------------------------------------------------------
//
// For few filters (K <= 8) and stride 1, the weight gradient is vectorised over pixels instead,
// as correlate_by_pixels is: the padded image seen flat with rows of cols (flat_planes: Q + S - 1
// less the shared margin), and dy[n, k] laid out on rows of the same length (zeros in the
// columns past Q and after the last row), so that
//     dw[k, c, r, t] = the sum over i of dy_flat[k, i] * x_flat[c, i + r*cols + t].
// Sixteen consecutive i at a time: one Vec of dy per filter and one unaligned Vec of x per tap,
// multiplied lane by lane into Vec sums, whose 16 lanes are added once at the end. A block of taps
// keeps Channels x Taps sums (24 at most) in registers while every image of the chunk streams
// past. LeNet's conv1 (K = 6) then costs 6 multiply-adds per 16 pixels and tap, where by channels
// it cost one Vec of 16 lanes per pixel and tap, 10 of them on filters that do not exist.

// Taps per block for `channels` filters: 24 sums, with room left for the Vecs of dy and x; 12
// with AVX2's 16 registers.
constexpr std::int64_t flat_taps(std::int64_t channels) {
    return std::max<std::int64_t>(1, (many_registers ? 24 : 12) / channels);
}

// One chunk of images, as weight_gradient_flat_block reads them:
//   images    (count, C, plane): x padded, each plane `plane` = rows * cols floats, its rows
//             enough for the last Vec of the last tap;
//   gradients (count, K, flat): dy[n, k, p, q] at [n, k, p*cols + q], zeros elsewhere; flat is
//             P*cols rounded up to whole Vecs.
struct FlatGradientChunk {
    std::int64_t count, cols, flat, plane;
    float* images;
    float* gradients;
};

// running[k, j] += the sum over image n's i of dy_flat[n, k, i] * x_flat[n, c, i + offset of tap
// tap0 + j], lane by lane, for every filter k and the taps tap0 .. tap0 + Taps - 1 (flattened
// r*S + t); running holds Channels x Taps Vecs.
template <int Channels, int Taps>
void weight_gradient_flat_block(const Conv2dShape& s, const FlatGradientChunk& in, std::int64_t n,
                                std::int64_t c, std::int64_t tap0, float* running) {
    const std::int64_t RS = s.R * s.S;
    std::int64_t offsets[Taps];  // of each tap's input from the output's; 0 past R*S
    for (int j = 0; j < Taps; ++j)
        offsets[j] = tap0 + j < RS ? (tap0 + j) / s.S * in.cols + (tap0 + j) % s.S : 0;
    Vec sums[Channels][Taps];
    for (int k = 0; k < Channels; ++k)
        for (int j = 0; j < Taps; ++j)
            sums[k][j] = Eigen::Map<const Vec>(running + (k * Taps + j) * lanes);
    const float* image = in.images + (n * s.C + c) * in.plane;
    const float* grad = in.gradients + n * Channels * in.flat;
    for (std::int64_t i0 = 0; i0 < in.flat; i0 += lanes) {
        Vec values[Taps];
        for (int j = 0; j < Taps; ++j) values[j] = Eigen::Map<const Vec>(image + i0 + offsets[j]);
#pragma GCC unroll 32
        for (int k = 0; k < Channels; ++k) {
            const Vec g = Eigen::Map<const Vec>(grad + k * in.flat + i0);
            for (int j = 0; j < Taps; ++j) sums[k][j] += g * values[j];
        }
    }
    for (int k = 0; k < Channels; ++k)
        for (int j = 0; j < Taps; ++j)
            Eigen::Map<Vec>(running + (k * Taps + j) * lanes) = sums[k][j];
}

// partial (K, C, R, S) = the weight gradient of images first .. first + in.count - 1 alone, by
// pixels; K = Channels. Image by image: one image's dy (Channels planes) and x (C planes), 24 KiB
// for LeNet's conv1, stay in L1 while every block of taps reads them, each block's Vec sums
// carried from image to image in `running`. Block by block instead, every block read the chunk's
// 8 images again (190 KiB, from L2), and the pass took about a quarter longer. Either way each
// lane adds its products in the same order, so the results are the same.
template <int Channels>
void weight_gradient_flat_chunk(const Conv2dShape& s, const float* x, const float* dy,
                                std::int64_t first, const FlatGradientChunk& in, float* partial) {
    const std::int64_t P = s.P(), Q = s.Q(), rows = in.plane / in.cols, RS = s.R * s.S;
    for (std::int64_t i = 0; i < in.count; ++i) {
        const std::int64_t n = first + i;
        place_padded(x + n * s.C * s.H * s.W, s.C, s.H, s.W, Placement{s.pad_h, s.pad_w, 1, 1},
                     in.images + i * s.C * in.plane, rows, in.cols);
        float* grad = in.gradients + i * Channels * in.flat;
        Eigen::Map<Array>(grad, Channels * in.flat).setZero();
        for (std::int64_t k = 0; k < Channels; ++k)
            for (std::int64_t p = 0; p < P; ++p) {
                const float* row = dy + ((n * s.K + k) * P + p) * Q;
                std::copy(row, row + Q, grad + k * in.flat + p * in.cols);
            }
    }
    constexpr std::int64_t taps = flat_taps(Channels);
    const std::int64_t blocks = ceil_div(RS, taps), block_size = Channels * taps * lanes;
    const auto running = scratch(s.C * blocks * block_size);  // (C, blocks, Channels, taps) Vecs
    Eigen::Map<Array>(running.get(), s.C * blocks * block_size).setZero();
    for (std::int64_t i = 0; i < in.count; ++i)
        for (std::int64_t c = 0; c < s.C; ++c)
            for (std::int64_t b = 0; b < blocks; ++b)
                weight_gradient_flat_block<Channels, taps>(
                    s, in, i, c, b * taps, running.get() + (c * blocks + b) * block_size);
    for (std::int64_t c = 0; c < s.C; ++c)
        for (std::int64_t tap = 0; tap < RS; ++tap) {
            const float* sums = running.get() + (c * blocks + tap / taps) * block_size;
            for (std::int64_t k = 0; k < Channels; ++k)
                partial[(k * s.C + c) * RS + tap] =
                    Eigen::Map<const Vec>(sums + (k * taps + tap % taps) * lanes).sum();
        }
}

// The flat planes of backward_weights by pixels: x padded, dy on rows of the same length.
FlatPlanes weight_gradient_planes(const Conv2dShape& s) {
    const Placement padded{s.pad_h, s.pad_w, 1, 1};
    return flat_planes(s.P(), s.Q(), s.R, s.S, lanes, shared_margin(s.Q(), s.S, s.W, padded));
}

// Whether backward_weights goes by pixels: stride 1, at most most_channels_by_pixels filters, and
// fewer Vec multiply-adds than by channels (per image: blocks of taps times Vecs of pixels times
// filters, against blocks of taps times pixels times Vecs of filters).
bool weight_gradient_by_pixels(const Conv2dShape& s) {
    if (s.stride_h != 1 || s.stride_w != 1 || s.K > most_channels_by_pixels) return false;
    const std::int64_t RS = s.R * s.S;
    const std::int64_t width = best_width(s.S, TapWidths{});
    const std::int64_t by_channels =  // one Vec of K per tap computed and pixel
        s.R * ceil_div(s.S, width) * width * s.P() * s.Q();
    const std::int64_t taps = flat_taps(s.K);
    const std::int64_t by_pixels =
        ceil_div(RS, taps) * taps * weight_gradient_planes(s).flat / lanes * s.K;
    return by_pixels < by_channels;
}

}  // namespace

void conv2d_forward_direct(const Conv2dShape& s, const float* x, const float* w, const float* b,
                           float* y) {
    const auto [g, padded] = forward_pass(s);
    const auto filters = filters_by_tap(s, g, w, false);
    const auto bias = scratch(g.out_lanes);  // b, zeros past K
    Eigen::Map<Array>(bias.get(), g.out_lanes).setZero();
    Eigen::Map<Array>(bias.get(), s.K) = Eigen::Map<const Array>(b, s.K);
    correlate_batch(g, s.N, x, s.H, s.W, padded, filters.get(), bias.get(), y);
}

void conv2d_backward_data_direct(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
    const auto [g, spread] = backward_data_pass(s);
    const auto filters = filters_by_tap(s, g, w, true);
    const auto zeros = scratch(g.out_lanes);
    Eigen::Map<Array>(zeros.get(), g.out_lanes).setZero();
    correlate_batch(g, s.N, dy, s.P(), s.Q(), spread, filters.get(), zeros.get(), dx);
}

DirectKernels conv2d_direct_kernels(const Conv2dShape& s) {
    return {kernel_name(forward_pass(s).g.kernel), kernel_name(backward_data_pass(s).g.kernel)};
}

struct DirectCorrelation::Plan {
    Prepared prepared;
    Scratch zeros;  // the bias: none
};

DirectCorrelation::DirectCorrelation(std::int64_t in_channels, std::int64_t out_channels,
                                     std::int64_t R, std::int64_t S, std::int64_t H,
                                     std::int64_t W) {
    const Placement at{0, 0, 1, 1};
    const Correlation g = plan(in_channels, out_channels, R, S, 1, 1, H - R + 1, W - S + 1, W, at);
    plan_ = std::make_unique<Plan>(Plan{prepare(g, H, W, at), scratch(g.out_lanes)});
    Eigen::Map<Array>(plan_->zeros.get(), g.out_lanes).setZero();
}

DirectCorrelation::~DirectCorrelation() = default;

std::int64_t DirectCorrelation::filter_lanes() const { return plan_->prepared.g.out_lanes; }

std::int64_t DirectCorrelation::scratch_floats() const {
    return plan_->prepared.padded_size + plan_->prepared.sums_size;
}

void DirectCorrelation::correlate(const float* image, const float* filters, float* out,
                                  float* work) const {
    correlate_image(plan_->prepared, image, filters, plan_->zeros.get(), work,
                    work + plan_->prepared.padded_size, out);
}

void conv2d_backward_weights_direct(const Conv2dShape& s, const float* x, const float* dy,
                                    float* dw) {
    // Each chunk of images gets its own partial sum, added up in chunk order: the chunks are
    // fixed by the shape, so the result does not depend on the thread count.
    const std::int64_t P = s.P(), Q = s.Q(), filter_size = s.K * s.C * s.R * s.S;
    const std::int64_t rows = (P - 1) * s.stride_h + s.R, cols = (Q - 1) * s.stride_w + s.S;
    const std::int64_t out_lanes = ceil_div(s.K, lanes) * lanes;
    const std::int64_t per_chunk = std::min(chunk_images, s.N);
    const std::int64_t chunks = ceil_div(s.N, per_chunk);
    const auto partials = scratch(chunks * filter_size);
    const std::int64_t multiply_adds = per_chunk * P * Q * out_lanes * s.C * s.R * s.S;
    const bool by_pixels = weight_gradient_by_pixels(s);
    const FlatPlanes flat = weight_gradient_planes(s);
    for_each_batch(chunks, multiply_adds, [&](std::int64_t begin, std::int64_t count) {
        const auto images =
            scratch(per_chunk * s.C * (by_pixels ? flat.rows * flat.cols : rows * cols));
        const auto gradients =
            scratch(per_chunk * (by_pixels ? s.K * flat.flat : P * Q * out_lanes));
        for (std::int64_t chunk = begin; chunk < begin + count; ++chunk) {
            const std::int64_t first = chunk * per_chunk;
            const std::int64_t images_here = std::min(per_chunk, s.N - first);
            float* partial = partials.get() + chunk * filter_size;
            if (by_pixels) {
                const FlatGradientChunk in{.count = images_here,
                                           .cols = flat.cols,
                                           .flat = flat.flat,
                                           .plane = flat.rows * flat.cols,
                                           .images = images.get(),
                                           .gradients = gradients.get()};
                with_constant<most_channels_by_pixels>(s.K, [&](auto channels) {
                    weight_gradient_flat_chunk<channels()>(s, x, dy, first, in, partial);
                });
                continue;
            }
            const GradientChunk in{.count = images_here,
                                   .rows = rows,
                                   .cols = cols,
                                   .out_lanes = out_lanes,
                                   .images = images.get(),
                                   .gradients = gradients.get()};
            weight_gradient_chunk(s, x, dy, first, in, partial);
        }
    });
    add_in_chunk_order(partials.get(), chunks, filter_size, dw);
}

}  // namespace triptych::cpu_eigen_omp
