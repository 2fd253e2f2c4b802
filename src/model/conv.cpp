#include "simmer/model/conv.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

#include "simmer/core/error.hpp"
#include "simmer/model/direct_conv.hpp"
#include "simmer/model/initializer.hpp"

namespace simmer::model {

namespace {

/// Block of the im2col copies: one AVX-512 register of Ss. A window row of kw·c values is
/// copied as whole blocks, overrunning into the next slot (written afterwards) or the slack.
constexpr Index kBlock = 8;

Index blocks_of(Index span) { return (span + kBlock - 1) / kBlock; }

/// dst[t] += src[t] for t < n; whole blocks vectorise (fixed trip count), then the tail.
template <class S>
void add_span(S* __restrict dst, const S* __restrict src, Index n) {
  Index t = 0;
  for (; t + kBlock <= n; t += kBlock) {
    for (Index i = 0; i < kBlock; ++i) dst[t + i] += src[t + i];
  }
  for (; t < n; ++t) dst[t] += src[t];
}

}  // namespace

template <class S>
ConvAlgorithm BasicConv2D<S>::choose_algorithm(Index out_width, Index /*in_channels*/, Index filters, Index kernel) {
  if (kernel > direct::kMaxKernel) return ConvAlgorithm::im2col;
  const bool rows_fill_packets = 4 * out_width >= 3 * direct::round_up<S>(out_width);
  const bool few_filters = filters < 8;
  return rows_fill_packets && few_filters ? ConvAlgorithm::direct : ConvAlgorithm::im2col;
}

template <class S>
BasicConv2D<S>::BasicConv2D(Index height, Index width, Index in_channels, Index filters, Index kernel, Padding padding,
                            ConvAlgorithm algorithm)
    : height_(height), width_(width), in_channels_(in_channels), filters_(filters), kernel_(kernel) {
  if (height <= 0 || width <= 0 || in_channels <= 0 || filters <= 0 || kernel <= 0) {
    throw Error(
        "conv2d layer: height, width, in_channels, filters and kernel must be positive "
        "(got " +
        std::to_string(height) + ", " + std::to_string(width) + ", " + std::to_string(in_channels) + ", " +
        std::to_string(filters) + ", " + std::to_string(kernel) + ")");
  }
  if (padding == Padding::same) {
    pad_top_ = (kernel - 1) / 2;
    pad_left_ = (kernel - 1) / 2;
    out_height_ = height;
    out_width_ = width;
  } else {
    if (kernel > height || kernel > width) {
      throw Error("conv2d layer: a " + std::to_string(kernel) + "x" + std::to_string(kernel) +
                  " kernel with valid padding does not fit a " + std::to_string(height) + "x" + std::to_string(width) +
                  " image");
    }
    out_height_ = height - kernel + 1;
    out_width_ = width - kernel + 1;
  }
  padded_height_ = out_height_ + kernel - 1;
  padded_width_ = out_width_ + kernel - 1;
  patch_ = kernel * kernel * in_channels;
  if (algorithm == ConvAlgorithm::direct && kernel > direct::kMaxKernel) {
    throw Error("conv2d layer: the direct algorithm takes kernels up to " + std::to_string(direct::kMaxKernel) + "x" +
                std::to_string(direct::kMaxKernel) + " (got " + std::to_string(kernel) + "x" + std::to_string(kernel) +
                ")");
  }
  algorithm_ =
      algorithm == ConvAlgorithm::automatic ? choose_algorithm(out_width_, in_channels, filters, kernel) : algorithm;
  // Rows start on packet boundaries (strides in whole packets), and so does dL/dout's image
  // inside its margin: the kernel gradient's loads of it are then aligned.
  in_stride_ = direct::round_up<S>(direct::round_up<S>(out_width_) + kernel - 1);
  out_stride_ = direct::round_up<S>(out_width_);
  grad_column_ = direct::round_up<S>(kernel - 1);
  grad_stride_ = direct::round_up<S>(grad_column_ + direct::round_up<S>(padded_width_));
  dpad_stride_ = direct::round_up<S>(padded_width_);
  constexpr Index simd = Eigen::internal::packet_traits<S>::size;
  transposed_output_ = filters % simd != 0;
  set_column_bytes(kDefaultColumnBytes);
}

template <class S>
void BasicConv2D<S>::set_column_bytes(Index column_bytes) {
  const Index per_image = out_height_ * out_width_ * (patch_ + 1) * static_cast<Index>(sizeof(S));
  column_bytes_ = column_bytes;
  chunk_images_ = std::max<Index>(1, column_bytes / per_image);
  if (capacity_ > 0) {
    const Index rows = capacity_;
    capacity_ = 0;
    reserve(rows);
  }
}

template <class S>
std::vector<TensorSpec> BasicConv2D<S>::tensors() const {
  return {{"kernel", {kernel_, kernel_, in_channels_, filters_}}, {"bias", {filters_}}};
}

template <class S>
void BasicConv2D<S>::bind(const S* params, S* grads) {
  params_ = params;
  grads_ = grads;
}

template <class S>
void BasicConv2D<S>::initialize(S* params, Init scheme, Rng& rng) const {
  const Index area = kernel_ * kernel_;
  fill_weights(params, patch_ * filters_, area * in_channels_, area * filters_, scheme, rng);
  std::fill(params + patch_ * filters_, params + (patch_ + 1) * filters_, S(0));
}

template <class S>
Index BasicConv2D<S>::scratch_values(Index rows) const {
  if (algorithm_ == ConvAlgorithm::direct) {
    return in_channels_ * padded_height_ * in_stride_ + filters_ * out_height_ * out_stride_ +
           filters_ * (out_height_ + 2 * (kernel_ - 1)) * grad_stride_ + in_channels_ * padded_height_ * dpad_stride_ +
           patch_ * filters_;
  }
  const Index images = std::min(rows, chunk_images_);
  const Index pixels = images * out_height_ * out_width_;
  const Index ld = patch_ + 1;
  const Index image = padded_height_ * padded_width_ * in_channels_ + kBlock;
  Index packed_a = 0, packed_b = 0;  // as reserve() sizes the GEMM workspace
  for (Index count = 1; count <= images; ++count) {
    const Index m = count * out_height_ * out_width_;
    for (const auto& [a, b] :
         {GemmWorkspace<S>::needed(m, filters_, ld, !transposed_output_),
          GemmWorkspace<S>::needed(ld, filters_, m, false), GemmWorkspace<S>::needed(m, patch_, filters_, true)}) {
      packed_a = std::max(packed_a, a);
      packed_b = std::max(packed_b, b);
    }
  }
  return pixels * ld + kBlock + 2 * image + ld * filters_ + (transposed_output_ ? pixels * filters_ : 0) + packed_a +
         packed_b;
}

template <class S>
void BasicConv2D<S>::reserve(Index rows) {
  if (rows <= capacity_) return;
  if (algorithm_ == ConvAlgorithm::direct) {
    // One image's planes, whatever the batch: allocated once, so growing the batch between
    // begin_backward() and backward_images() cannot lose the flipped kernel.
    if (flipped_.size() == 0) {
      in_planes_ = Vector::Zero(in_channels_ * padded_height_ * in_stride_);
      out_planes_ = Vector::Zero(filters_ * out_height_ * out_stride_);
      grad_planes_ = Vector::Zero(filters_ * (out_height_ + 2 * (kernel_ - 1)) * grad_stride_);
      dpadded_planes_ = Vector::Zero(in_channels_ * padded_height_ * dpad_stride_);
      flipped_ = Vector::Zero(patch_ * filters_);
    }
    capacity_ = rows;
    return;
  }
  const Index pixels = std::min(rows, chunk_images_) * out_height_ * out_width_;
  const Index ld = patch_ + 1;
  columns_ = Vector::Zero(pixels * ld + kBlock);
  padded_ = Vector::Zero(padded_height_ * padded_width_ * in_channels_ + kBlock);
  padded_grad_ = Vector::Zero(padded_.size());
  out_scratch_ = Vector::Zero(transposed_output_ ? pixels * filters_ : 0);
  kernel_grad_ = Vector::Zero(ld * filters_);
  // Every chunk size a batch of up to `rows` rows can produce (the last chunk is partial).
  for (Index images = 1; images <= std::min(rows, chunk_images_); ++images) {
    const Index m = images * out_height_ * out_width_;
    gemm_.reserve(m, filters_, ld, !transposed_output_);  // forward
    gemm_.reserve(ld, filters_, m, false);                // kernel gradient
    gemm_.reserve(m, patch_, filters_, true);             // dL/dcols
  }
  capacity_ = rows;
}

template <class S>
void BasicConv2D<S>::im2col(const S* in, Index count) {
  const Index ld = patch_ + 1;
  const Index span = kernel_ * in_channels_;  // one window row: kw pixels × channels
  const Index blocks = blocks_of(span);
  const Index row_values = width_ * in_channels_;
  const Index padded_row = padded_width_ * in_channels_;
  S* cols = columns_.data();
  S* padded = padded_.data();  // borders stay zero; only the interior is rewritten
  for (Index n = 0; n < count; ++n) {
    const S* image = in + n * height_ * row_values;
    for (Index y = 0; y < height_; ++y) {
      std::memcpy(padded + (y + pad_top_) * padded_row + pad_left_ * in_channels_, image + y * row_values,
                  static_cast<std::size_t>(row_values) * sizeof(S));
    }
    for (Index oy = 0; oy < out_height_; ++oy) {
      for (Index ox = 0; ox < out_width_; ++ox) {
        S* d = cols + ((n * out_height_ + oy) * out_width_ + ox) * ld;
        const S* s = padded + oy * padded_row + ox * in_channels_;
        for (Index ky = 0; ky < kernel_; ++ky) {
          S* dk = d + ky * span;
          const S* sk = s + ky * padded_row;
          for (Index b = 0; b < blocks; ++b) {
            std::memcpy(dk + b * kBlock, sk + b * kBlock, kBlock * sizeof(S));
          }
        }
        d[patch_] = S(1);  // after the overrun of the last window row
      }
    }
  }
}

template <class S>
void BasicConv2D<S>::col2im(S* grad_in, Index count) {
  const Index ld = patch_ + 1;
  const Index span = kernel_ * in_channels_;
  const Index row_values = width_ * in_channels_;
  const Index padded_row = padded_width_ * in_channels_;
  const S* cols = columns_.data();
  S* padded = padded_grad_.data();
  for (Index n = 0; n < count; ++n) {
    std::fill_n(padded, padded_height_ * padded_row, S(0));
    for (Index oy = 0; oy < out_height_; ++oy) {
      for (Index ox = 0; ox < out_width_; ++ox) {
        const S* s = cols + ((n * out_height_ + oy) * out_width_ + ox) * ld;
        S* d = padded + oy * padded_row + ox * in_channels_;
        for (Index ky = 0; ky < kernel_; ++ky) add_span(d + ky * padded_row, s + ky * span, span);
      }
    }
    S* image = grad_in + n * height_ * row_values;
    for (Index y = 0; y < height_; ++y) {
      std::memcpy(image + y * row_values, padded + (y + pad_top_) * padded_row + pad_left_ * in_channels_,
                  static_cast<std::size_t>(row_values) * sizeof(S));
    }
  }
}

template <class S>
void BasicConv2D<S>::to_planes(const S* image) {
  S* planes = in_planes_.data();
  const Index plane = padded_height_ * in_stride_;
  for (Index y = 0; y < height_; ++y) {
    const S* src = image + y * width_ * in_channels_;
    S* dst = planes + (y + pad_top_) * in_stride_ + pad_left_;
    if (in_channels_ == 1) {
      std::memcpy(dst, src, static_cast<std::size_t>(width_) * sizeof(S));
      continue;
    }
    for (Index x = 0; x < width_; ++x) {
      for (Index c = 0; c < in_channels_; ++c) dst[c * plane + x] = src[x * in_channels_ + c];
    }
  }
}

template <class S>
void BasicConv2D<S>::forward_direct(const S* in, Index count, S* out) {
  const direct::ConstPlanes<S> in_planes{in_planes_.data(), padded_height_ * in_stride_, in_stride_};
  const direct::Planes<S> out_planes{out_planes_.data(), out_height_ * out_stride_, out_stride_};
  const S* bias = params_ + patch_ * filters_;
  for (Index n = 0; n < count; ++n) {
    to_planes(in + n * input_size());
    direct::correlate(params_, bias, in_channels_, filters_, kernel_, in_planes, out_planes, out_height_, out_width_);
    S* dst = out + n * output_size();
    for (Index f = 0; f < filters_; ++f) {
      const S* plane = out_planes_.data() + f * out_planes.plane_stride;
      for (Index y = 0; y < out_height_; ++y) {
        const S* src = plane + y * out_stride_;
        S* d = dst + y * out_width_ * filters_ + f;
        for (Index x = 0; x < out_width_; ++x) d[x * filters_] = src[x];
      }
    }
  }
}

template <class S>
void BasicConv2D<S>::backward_direct(const S* in, Index count, const S* grad_out, S* grad_in) {
  const Index margin = kernel_ - 1;
  const Index grad_plane = (out_height_ + 2 * margin) * grad_stride_;
  const direct::ConstPlanes<S> in_planes{in_planes_.data(), padded_height_ * in_stride_, in_stride_};
  // dL/dout with its margin of kernel − 1 zeros (the input gradient's correlation reads it)
  // and the image itself, at row `margin` and column grad_column_.
  const direct::ConstPlanes<S> grad_planes{grad_planes_.data() + grad_column_ - margin, grad_plane, grad_stride_};
  const direct::ConstPlanes<S> grad_image{grad_planes_.data() + margin * grad_stride_ + grad_column_, grad_plane,
                                          grad_stride_};
  const direct::Planes<S> dpadded{dpadded_planes_.data(), padded_height_ * dpad_stride_, dpad_stride_};
  S* bias_grad = grads_ + patch_ * filters_;
  for (Index n = 0; n < count; ++n) {
    to_planes(in + n * input_size());
    const S* g = grad_out + n * output_size();
    for (Index y = 0; y < out_height_; ++y) {
      for (Index f = 0; f < filters_; ++f) {
        const S* src = g + y * out_width_ * filters_ + f;
        S* dst = grad_planes_.data() + f * grad_plane + (y + margin) * grad_stride_ + grad_column_;
        S sum = 0;
        for (Index x = 0; x < out_width_; ++x) {
          dst[x] = src[x * filters_];
          sum += dst[x];
        }
        bias_grad[f] += sum;
      }
    }
    direct::correlate_weights(in_planes, grad_image, in_channels_, filters_, kernel_, out_height_, out_width_, grads_);
    if (grad_in == nullptr) continue;
    direct::correlate<S>(flipped_.data(), nullptr, filters_, in_channels_, kernel_, grad_planes, dpadded,
                         padded_height_, padded_width_);
    S* gi = grad_in + n * input_size();
    const Index plane = padded_height_ * dpad_stride_;
    for (Index y = 0; y < height_; ++y) {
      const S* src = dpadded_planes_.data() + (y + pad_top_) * dpad_stride_ + pad_left_;
      S* dst = gi + y * width_ * in_channels_;
      for (Index x = 0; x < width_; ++x) {
        for (Index c = 0; c < in_channels_; ++c) dst[x * in_channels_ + c] = src[c * plane + x];
      }
    }
  }
}

template <class S>
void BasicConv2D<S>::forward_images(const S* in, Index count, S* out) {
  if (count > capacity_) reserve(count);
  if (algorithm_ == ConvAlgorithm::direct) {
    forward_direct(in, count, out);
    return;
  }
  const Index ld = patch_ + 1;
  for (Index first = 0; first < count; first += chunk_images_) {
    const Index images = std::min(chunk_images_, count - first);
    const Index pixels = images * out_height_ * out_width_;
    S* dst = out + first * output_size();
    im2col(in + first * input_size(), images);
    // out[pixels][filters] = cols[pixels][patch + 1] · [K; b]
    const GemmOperand<S> cols{columns_.data(), ld, true};
    const GemmOperand<S> kernel_bias{params_, filters_, true};
    if (!transposed_output_) {
      gemm(pixels, filters_, ld, cols, kernel_bias, {dst, filters_, true}, false, gemm_);
      continue;
    }
    const S* channel_major = out_scratch_.data();
    gemm(pixels, filters_, ld, cols, kernel_bias, {out_scratch_.data(), pixels, false}, false, gemm_);
    for (Index p = 0; p < pixels; ++p) {
      for (Index f = 0; f < filters_; ++f) dst[p * filters_ + f] = channel_major[f * pixels + p];
    }
  }
}

template <class S>
void BasicConv2D<S>::begin_backward() {
  if (capacity_ == 0) reserve(1);
  if (algorithm_ == ConvAlgorithm::im2col) {
    kernel_grad_.setZero();
    return;
  }
  std::fill_n(grads_, (patch_ + 1) * filters_, S(0));
  // dL/dpadded[c][y][x] = Σ K[ky][kx][c][f] dL/dout[f][y − ky][x − kx]: a correlation of the
  // margin-padded dL/dout with the kernel rotated 180°, filters and channels swapped.
  for (Index ky = 0; ky < kernel_; ++ky) {
    for (Index kx = 0; kx < kernel_; ++kx) {
      const S* src = params_ + ((kernel_ - 1 - ky) * kernel_ + (kernel_ - 1 - kx)) * in_channels_ * filters_;
      S* dst = flipped_.data() + (ky * kernel_ + kx) * filters_ * in_channels_;
      for (Index c = 0; c < in_channels_; ++c) {
        for (Index f = 0; f < filters_; ++f) dst[f * in_channels_ + c] = src[c * filters_ + f];
      }
    }
  }
}

template <class S>
void BasicConv2D<S>::backward_images(const S* in, Index count, const S* grad_out, S* grad_in) {
  if (count > capacity_) reserve(count);
  if (algorithm_ == ConvAlgorithm::direct) {
    backward_direct(in, count, grad_out, grad_in);
    return;
  }
  const Index ld = patch_ + 1;
  for (Index first = 0; first < count; first += chunk_images_) {
    const Index images = std::min(chunk_images_, count - first);
    const Index pixels = images * out_height_ * out_width_;
    im2col(in + first * input_size(), images);
    const GemmOperand<S> g{grad_out + first * output_size(), filters_, true};
    // d[K; b] += colsᵀ · dOut (the ones column gives the bias gradient, dOut's column sums),
    // accumulated column-major: the kernel then vectorises along patch_ + 1, not filters_.
    gemm(ld, filters_, pixels, {columns_.data(), ld, false}, g, {kernel_grad_.data(), ld, false}, true, gemm_);
    if (grad_in != nullptr) {
      // dL/dcols = dOut · Kᵀ overwrites the columns (not the ones column), then scatters back.
      gemm(pixels, patch_, filters_, g, {params_, filters_, false}, {columns_.data(), ld, true}, false, gemm_);
      col2im(grad_in + first * input_size(), images);
    }
  }
}

template <class S>
void BasicConv2D<S>::end_backward() {
  if (algorithm_ == ConvAlgorithm::direct) return;
  const Index ld = patch_ + 1;
  for (Index r = 0; r < ld; ++r) {
    for (Index f = 0; f < filters_; ++f) grads_[r * filters_ + f] = kernel_grad_[f * ld + r];
  }
}

template <class S>
void BasicConv2D<S>::forward(ConstBatchView in, BatchView out) {
  forward_images(in.data(), in.rows(), out.data());
}

template <class S>
void BasicConv2D<S>::backward(ConstBatchView in, ConstBatchView /*out*/, BatchView grad_out, BatchView* grad_in) {
  begin_backward();
  backward_images(in.data(), in.rows(), grad_out.data(), grad_in != nullptr ? grad_in->data() : nullptr);
  end_backward();
}

template class BasicConv2D<double>;
template class BasicConv2D<float>;

}  // namespace simmer::model
