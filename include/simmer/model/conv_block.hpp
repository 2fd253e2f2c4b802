#pragma once
/// \file
/// Convolution → activation → pooling as one layer, computed a few images at a time.
///
/// As three layers, each pass over a batch streams the full-resolution feature maps through
/// memory several times (LeNet-5's first convolution gives 37 KB per image, 376 MB for 10 000
/// images: written by the convolution, read and written by the activation, read by the
/// pooling, and as often again backward). The block runs the three on a chunk of images whose
/// feature maps stay in cache and writes only the pooled output, plus what backward needs:
///   max pooling: out = f(max z) over each window, with each window's arg-max of z; backward
///     takes f' from the pooled output and sends it to the arg-max. Every activation here is
///     non-decreasing, so in exact arithmetic this is f then max, with the gradient going to
///     the same place wherever it is non-zero. In floating point f can round two different z
///     to the same value (elu or sigmoid near 0, tanh saturated; the vectorised tanh is
///     monotone only to a few ulp): there the three layers send the gradient to the window's
///     first maximum of f(z) and the block to the largest z, and the values may differ by a
///     few ulp. Random inputs do not meet such ties (the block's test compares the two to
///     1e-12).
///   average pooling: what f' needs at full resolution: f(z) (tanh, elu, sigmoid), one byte
///     z > 0 per value (relu: an eighth of the memory traffic), or nothing (linear).
/// The parameters are the convolution's (same tensors, same order, same initialisation), so a
/// network's parameter vector is the same with the block as with the three layers.

#include <cstdint>
#include <vector>

#include "simmer/model/activation.hpp"
#include "simmer/model/conv.hpp"
#include "simmer/model/pool.hpp"

namespace simmer::model {

template <class S>
class BasicConvBlock final : public BasicLayer<S> {
 public:
  SIMMER_SCALAR_TYPES(S);
  /// Conv2D(height, width, in_channels, filters, kernel, padding, algorithm), then `activation`,
  /// then `pool` pooling of pool_size × pool_size windows. Throws as those layers do.
  BasicConvBlock(Index height, Index width, Index in_channels, Index filters, Index kernel, Padding padding,
                 Activation activation, PoolKind pool, Index pool_size = 2,
                 ConvAlgorithm algorithm = ConvAlgorithm::automatic);

  /// "conv2d_<activation>_<max|average>_pool2d", e.g. "conv2d_relu_max_pool2d".
  [[nodiscard]] std::string kind() const override;
  [[nodiscard]] Index input_size() const override { return conv_.input_size(); }
  [[nodiscard]] Index output_size() const override;
  [[nodiscard]] Index out_height() const { return pool_shape_.out_height(); }
  [[nodiscard]] Index out_width() const { return pool_shape_.out_width(); }
  [[nodiscard]] const BasicConv2D<S>& conv() const { return conv_; }
  /// Images per chunk: the convolution's im2col chunk, or (direct) as many as keep the chunk's
  /// feature maps under kChunkBytes.
  [[nodiscard]] Index chunk_images() const { return chunk_; }
  /// Another chunk size (at least 1; tests use it to split small batches). Re-sizes the
  /// buffers if reserve() ran.
  void set_chunk_images(Index images);
  static constexpr Index kChunkBytes = Index{1} << 17;

  [[nodiscard]] std::vector<TensorSpec> tensors() const override { return conv_.tensors(); }
  void bind(const S* params, S* grads) override { conv_.bind(params, grads); }
  void initialize(S* params, Init scheme, Rng& rng) const override { conv_.initialize(params, scheme, rng); }
  void reserve(Index rows) override;
  /// The convolution's scratch, two chunks of feature maps, and per image either the arg-maxes
  /// (max) or the activated feature maps (average).
  [[nodiscard]] Index scratch_values(Index rows) const override;
  void forward(ConstBatchView in, BatchView out) override;
  void backward(ConstBatchView in, ConstBatchView out, BatchView grad_out, BatchView* grad_in) override;

 private:
  enum class Kept { argmax, nothing, relu_mask, activations };
  [[nodiscard]] Kept kept() const;

  BasicConv2D<S> conv_;
  Activation activation_;
  PoolKind pool_;
  PoolShape pool_shape_;
  Index chunk_ = 1;
  Index capacity_ = 0;
  Vector maps_;                          ///< a chunk's feature maps z (forward) or dL/dz (backward)
  Vector activated_;                     ///< average pooling after tanh, elu, sigmoid: f(z), [rows][maps]
  std::vector<std::int32_t> argmax_;     ///< max pooling: per pooled value, its window's arg-max
  std::vector<std::uint8_t> relu_mask_;  ///< average pooling after relu: z > 0, [rows][maps]
};

using ConvBlock = BasicConvBlock<double>;

}  // namespace simmer::model
