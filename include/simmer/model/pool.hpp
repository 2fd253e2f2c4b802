#pragma once
/// \file
/// Parameter-free image layers: 2-D pooling and flatten. Images are HWC inside a row (see
/// conv.hpp): row[(y·width + x)·channels + c].

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/core/names.hpp"
#include "simmer/model/layer.hpp"

namespace simmer::model {

enum class PoolKind { average, max };

inline constexpr Names<PoolKind, 2> kPoolNames{"pooling", {{{PoolKind::average, "average"}, {PoolKind::max, "max"}}}};
/// "average" / "max" -> PoolKind; throws simmer::Error naming the text and the choices.
inline PoolKind parse_pool_kind(const std::string& name) { return kPoolNames.parse(name); }
inline std::string to_string(PoolKind k) { return std::string(kPoolNames.name(k)); }

/// Geometry of size × size pooling (stride size) of height × width × channels HWC images.
struct PoolShape {
  Index height = 0, width = 0, channels = 0, size = 2;
  [[nodiscard]] Index out_height() const { return height / size; }
  [[nodiscard]] Index out_width() const { return width / size; }
};

/// Pool `images` consecutive images (rows of height·width·channels values into rows of
/// out_height·out_width·channels): average, or max writing each output's arg-max offset within
/// its image row to `arg` (max only; ignored for average).
template <class S>
void pool_forward(PoolKind kind, const PoolShape& shape, const S* in, S* out, std::int32_t* arg, Index images);

/// dL/din of `images` images from dL/dout and (max) the arg-maxes of pool_forward: every input
/// value is written (zero outside the windows, and off the arg-max for max).
template <class S>
void pool_backward(PoolKind kind, const PoolShape& shape, const S* grad_out, const std::int32_t* arg, S* grad_in,
                   Index images);

/// size × size windows with stride size, per channel. An image side that size does not divide
/// is floored (Keras's valid pooling): the last height % size rows and width % size columns
/// are dropped, and get zero gradient. Max pooling sends the gradient to the window's first
/// maximum (row-major order within the window), remembered from the last forward().
template <class S>
class BasicPool2D final : public BasicLayer<S> {
 public:
  SIMMER_SCALAR_TYPES(S);
  BasicPool2D(Index height, Index width, Index channels, PoolKind pool, Index size = 2);

  /// "max_pool2d" or "average_pool2d".
  [[nodiscard]] std::string kind() const override;
  [[nodiscard]] Index input_size() const override { return height_ * width_ * channels_; }
  [[nodiscard]] Index output_size() const override { return out_height_ * out_width_ * channels_; }
  [[nodiscard]] Index out_height() const { return out_height_; }
  [[nodiscard]] Index out_width() const { return out_width_; }
  [[nodiscard]] PoolKind pool() const { return pool_; }
  [[nodiscard]] PoolShape shape() const { return {height_, width_, channels_, size_}; }

  void reserve(Index rows) override;
  /// Max pooling's arg-max indices (32-bit; counted in values of S).
  [[nodiscard]] Index scratch_values(Index rows) const override;
  void forward(ConstBatchView in, BatchView out) override;
  void backward(ConstBatchView in, ConstBatchView out, BatchView grad_out, BatchView* grad_in) override;

 private:
  Index height_, width_, channels_;
  PoolKind pool_;
  Index size_;
  Index out_height_, out_width_;
  Index capacity_ = 0;
  /// Max pooling: per output value, the offset within the input row of the maximum.
  std::vector<std::int32_t> argmax_;
};

/// Identity on [rows][size] (kind "flatten"): with HWC rows an image already is a flat feature
/// row, so this only marks where the dense head starts (as Keras's Flatten does). Forward is
/// one copy; backward passes the gradient through.
template <class S>
class BasicFlatten final : public BasicLayer<S> {
 public:
  SIMMER_SCALAR_TYPES(S);
  explicit BasicFlatten(Index size);
  [[nodiscard]] std::string kind() const override { return "flatten"; }
  [[nodiscard]] Index input_size() const override { return size_; }
  [[nodiscard]] Index output_size() const override { return size_; }
  void forward(ConstBatchView in, BatchView out) override;
  void backward(ConstBatchView in, ConstBatchView out, BatchView grad_out, BatchView* grad_in) override;

 private:
  Index size_;
};

using Pool2D = BasicPool2D<double>;
using Flatten = BasicFlatten<double>;

}  // namespace simmer::model
