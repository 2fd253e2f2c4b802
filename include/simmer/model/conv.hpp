#pragma once
/// \file
/// 2-D convolution (stride 1): im2col + GEMM, or direct correlation (direct_conv.hpp).
///
/// Image layout inside a batch row (every image layer, stable: the archive's layout depends on
/// it): HWC, i.e. height, width, channels with the channel index fastest:
/// row[(y·width + x)·channels + c]. A batch [images][h·w·c] is then also the row-major matrix
/// [images·h·w][c] of pixels, so the convolution's GEMM result [pixels][filters] is the HWC
/// output itself.
///
/// The batch is processed in chunks of images (chunk_images()) so the im2col buffer stays in
/// cache; backward recomputes each chunk's columns rather than keeping the whole batch's
/// (which for LeNet-5's first layer would be 157 KB per image). Forward and backward allocate
/// nothing: every buffer, including the GEMM packing panels, is sized in reserve().
///
/// Storage (stable): "kernel" [kh][kw][in_channels][filters] row-major, then "bias" [filters].
/// Viewed as a matrix the kernel is [kh·kw·in_channels][filters], rows in im2col's column order
/// (ky, kx, c); since the bias follows it in the flat vector, kernel and bias together are the
/// [kh·kw·in_channels + 1][filters] matrix [K; b], and a column of ones in im2col makes the bias
/// part of the same GEMM (forward) and its gradient part of the weight-gradient GEMM (backward).

#include "simmer/core/names.hpp"
#include "simmer/model/gemm.hpp"
#include "simmer/model/layer.hpp"

namespace simmer::model {

/// valid: no padding, output (h − k + 1) × (w − k + 1). same: zero padding so the output is
/// h × w; ⌊(k − 1)/2⌋ before and the rest after along each axis (Keras/TensorFlow's choice;
/// 2 on each side for k = 5).
enum class Padding { valid, same };

/// How a convolution computes. im2col: copy each output pixel's window into a row and multiply
/// by the kernel matrix (GEMM over chunks of images). direct: correlate channel-planar copies of
/// each image with the kernel in SIMD registers (direct_conv.hpp), no im2col; for kernels up to
/// direct::kMaxKernel. automatic: direct where it was measured faster (see choose_algorithm).
/// Both give the same results up to rounding (the sums run in different orders).
enum class ConvAlgorithm { automatic, im2col, direct };

inline constexpr Names<ConvAlgorithm, 3> kConvAlgorithmNames{
    "convolution algorithm",
    {{{ConvAlgorithm::automatic, "automatic"}, {ConvAlgorithm::im2col, "im2col"}, {ConvAlgorithm::direct, "direct"}}}};
inline std::string to_string(ConvAlgorithm a) { return std::string(kConvAlgorithmNames.name(a)); }

template <class S>
class BasicConv2D final : public BasicLayer<S> {
 public:
  SIMMER_SCALAR_TYPES(S);
  /// Images height × width × in_channels to out_height × out_width × filters; kernel × kernel
  /// window, stride 1. Throws simmer::Error naming a non-positive size or a kernel larger than a
  /// valid-padded image.
  BasicConv2D(Index height, Index width, Index in_channels, Index filters, Index kernel = 5,
              Padding padding = Padding::valid, ConvAlgorithm algorithm = ConvAlgorithm::automatic);

  /// What `automatic` picks: direct when the kernel is at most direct::kMaxKernel, the output
  /// rows fill at least 3/4 of their SIMD packets and there are fewer than 8 filters (a GEMM
  /// result that narrow cannot pay for writing and packing the im2col rows). Measured on
  /// LeNet-5's layers alone over 10 000 images (one core, AVX-512, best of 4): the first
  /// (28×28×1 → 6 filters, same) takes 67 ms forward and 85 ms backward direct against 154–167
  /// and 164–176 ms with im2col; the second (14×14×6 → 16, valid, 10-wide rows, with the input
  /// gradient) 129–133 and 322–326 ms direct against 126–127 and 251–252 ms with im2col.
  /// Other shapes are not measured: pass the algorithm to override.
  [[nodiscard]] static ConvAlgorithm choose_algorithm(Index out_width, Index in_channels, Index filters, Index kernel);
  [[nodiscard]] ConvAlgorithm algorithm() const { return algorithm_; }

  [[nodiscard]] std::string kind() const override { return "conv2d"; }
  [[nodiscard]] Index input_size() const override { return height_ * width_ * in_channels_; }
  [[nodiscard]] Index output_size() const override { return out_height_ * out_width_ * filters_; }
  [[nodiscard]] Index out_height() const { return out_height_; }
  [[nodiscard]] Index out_width() const { return out_width_; }
  [[nodiscard]] Index filters() const { return filters_; }

  /// Default budget of the im2col buffer, in bytes: 256 KiB, i.e. one or two images of
  /// LeNet-5's layers (28×28 same: 163 KB per image; 10×10 valid on 6 channels: 121 KB). The
  /// chunk's columns, output and Eigen's packed panels then stay in L2. Measured on LeNet-5's two
  /// convolutions over 10 000 images (forward + backward, AVX-512): chunks of 1–2 images beat
  /// 1 MB (6–8 images) by 8–11 % and 8 MB by 25–27 %.
  static constexpr Index kDefaultColumnBytes = Index{1} << 18;

  /// Images per im2col chunk: as many as fit `column_bytes` (at least one). The buffer is sized
  /// in reserve(); changing the budget after reserve() re-sizes it (never in the hot loop).
  /// The direct algorithm works image by image and ignores it.
  void set_column_bytes(Index column_bytes);
  [[nodiscard]] Index chunk_images() const { return chunk_images_; }

  [[nodiscard]] std::vector<TensorSpec> tensors() const override;
  void bind(const S* params, S* grads) override;
  /// Glorot draws with Keras's fans for convolutions: fan_in = kh·kw·in_channels,
  /// fan_out = kh·kw·filters. Bias zero.
  void initialize(S* params, Init scheme, Rng& rng) const override;
  void reserve(Index rows) override;
  /// im2col: the column buffer of min(rows, chunk) images and the GEMM workspace; direct: one
  /// image's planes.
  [[nodiscard]] Index scratch_values(Index rows) const override;
  void forward(ConstBatchView in, BatchView out) override;
  void backward(ConstBatchView in, ConstBatchView out, BatchView grad_out, BatchView* grad_in) override;

  /// The same passes on `count` consecutive images (rows of input_size() / output_size()
  /// values), for a layer that fuses the convolution with what follows it (ConvBlock):
  /// forward_images(in, count, out) is forward() on those rows. Backward is split so it can
  /// run over several groups of images: begin_backward(), then backward_images() for each group
  /// (accumulating the kernel gradient; grad_in may be null), then end_backward(); the
  /// gradient slice holds the total after end_backward() (im2col accumulates apart and writes
  /// it there; direct zeroes the slice in begin_backward() and accumulates into it).
  /// grad_out is not modified. Buffers grow as needed (reserve() first keeps that out of the
  /// hot loop).
  void forward_images(const S* in, Index count, S* out);
  void begin_backward();
  void backward_images(const S* in, Index count, const S* grad_out, S* grad_in);
  void end_backward();

 private:
  /// Images [first, first + count) of `in` into the column buffer: one row per output pixel,
  /// (ky, kx, c) along it (zeros for padding), then a 1 (the bias column).
  void im2col(const S* in, Index count);
  /// Scatter-add the first kh·kw·in_channels columns of the buffer (dL/dcols of `count` images)
  /// into `grad_in` (those images' rows, overwritten).
  void col2im(S* grad_in, Index count);
  /// The direct algorithm, image by image.
  void forward_direct(const S* in, Index count, S* out);
  void backward_direct(const S* in, Index count, const S* grad_out, S* grad_in);
  /// Image `image` (HWC) into the interior of in_planes_ (one plane per channel).
  void to_planes(const S* image);

  Index height_, width_, in_channels_, filters_, kernel_;
  Index pad_top_ = 0, pad_left_ = 0;
  Index out_height_ = 0, out_width_ = 0;
  Index padded_height_ = 0, padded_width_ = 0;  ///< the image with its zero padding
  Index patch_ = 0;                             ///< kh·kw·in_channels, the GEMM depth without the bias column
  /// The GEMM writes the output channel-major and a transpose makes it HWC when `filters` is
  /// not a multiple of the SIMD width (Eigen's kernel vectorises along the result's contiguous
  /// dimension: 6 filters run at under half the rate of 784 pixels).
  bool transposed_output_ = false;
  Index column_bytes_ = kDefaultColumnBytes;
  Index chunk_images_ = 1;
  Index capacity_ = 0;
  const S* params_ = nullptr;  ///< [K; b], (patch_ + 1) × filters_ row-major
  S* grads_ = nullptr;
  Vector columns_;      ///< [chunk pixels][patch_ + 1] row-major, + slack for block copies
  Vector padded_;       ///< one zero-padded input image, + slack
  Vector padded_grad_;  ///< dL/d(padded image) of one image, + slack
  Vector out_scratch_;  ///< transposed_output_: [filters][chunk pixels]
  Vector kernel_grad_;  ///< d[K; b] accumulated over chunks, column-major [patch_ + 1][filters]
  GemmWorkspace<S> gemm_;
  ConvAlgorithm algorithm_ = ConvAlgorithm::im2col;
  // The direct algorithm's per-image planes (rows padded to whole SIMD packets, zero outside
  // the image), sized in reserve():
  Index in_stride_ = 0;    ///< in_planes_ row: ≥ round_up(out_width) + kernel − 1
  Index out_stride_ = 0;   ///< out_planes_ row: round_up(out_width)
  Index grad_column_ = 0;  ///< where dL/dout's image starts in a grad_planes_ row
  Index grad_stride_ = 0;  ///< grad_planes_ row: ≥ grad_column_ + round_up(padded_width)
  Index dpad_stride_ = 0;  ///< dpadded_planes_ row: round_up(padded_width)
  Vector in_planes_;       ///< [in_channels][padded_height][in_stride_]
  Vector out_planes_;      ///< [filters][out_height][out_stride_]
  Vector grad_planes_;     ///< dL/dout, [filters][out_height + 2(kernel − 1)][grad_stride_],
                           ///< the image at row kernel − 1, column grad_column_, zero around
  Vector dpadded_planes_;  ///< dL/d(padded input), [in_channels][padded_height][dpad_stride_]
  Vector flipped_;         ///< kernel rotated 180° with channels and filters swapped
};

using Conv2D = BasicConv2D<double>;

}  // namespace simmer::model
