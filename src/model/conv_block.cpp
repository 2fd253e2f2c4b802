#include "simmer/model/conv_block.hpp"

#include <algorithm>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::model {

template <class S>
BasicConvBlock<S>::BasicConvBlock(Index height, Index width, Index in_channels, Index filters, Index kernel,
                                  Padding padding, Activation activation, PoolKind pool, Index pool_size,
                                  ConvAlgorithm algorithm)
    : conv_(height, width, in_channels, filters, kernel, padding, algorithm), activation_(activation), pool_(pool) {
  // Pool2D's constructor validates the pooling geometry (and names what is wrong).
  const BasicPool2D<S> check(conv_.out_height(), conv_.out_width(), filters, pool, pool_size);
  pool_shape_ = check.shape();
  const Index map_bytes = conv_.output_size() * static_cast<Index>(sizeof(S));
  chunk_ =
      conv_.algorithm() == ConvAlgorithm::im2col ? conv_.chunk_images() : std::max<Index>(1, kChunkBytes / map_bytes);
}

template <class S>
void BasicConvBlock<S>::set_chunk_images(Index images) {
  chunk_ = std::max<Index>(1, images);
  if (capacity_ > 0) {
    const Index rows = capacity_;
    capacity_ = 0;
    reserve(rows);
  }
}

template <class S>
std::string BasicConvBlock<S>::kind() const {
  return "conv2d_" + to_string(activation_) + "_" + to_string(pool_) + "_pool2d";
}

template <class S>
Index BasicConvBlock<S>::output_size() const {
  return pool_shape_.out_height() * pool_shape_.out_width() * pool_shape_.channels;
}

/// What average pooling keeps per feature-map value for f': nothing for linear (f' = 1), one
/// byte for relu (f' is 0 or 1: z > 0), else f(z) itself.
template <class S>
typename BasicConvBlock<S>::Kept BasicConvBlock<S>::kept() const {
  if (pool_ == PoolKind::max) return Kept::argmax;
  if (activation_ == Activation::linear) return Kept::nothing;
  if (activation_ == Activation::relu) return Kept::relu_mask;
  return Kept::activations;
}

template <class S>
Index BasicConvBlock<S>::scratch_values(Index rows) const {
  Index per_image = 0;  // in values of S
  switch (kept()) {
    case Kept::argmax:
      per_image = values_for_bytes<S>(output_size() * 4);
      break;
    case Kept::nothing:
      break;
    case Kept::relu_mask:
      per_image = values_for_bytes<S>(conv_.output_size());
      break;
    case Kept::activations:
      per_image = conv_.output_size();
      break;
  }
  const Index chunk = std::min(rows, chunk_);
  return conv_.scratch_values(chunk) + chunk * conv_.output_size() + rows * per_image;
}

template <class S>
void BasicConvBlock<S>::reserve(Index rows) {
  if (rows <= capacity_) return;
  conv_.reserve(std::min(rows, chunk_));
  maps_ = Vector::Zero(std::min(rows, chunk_) * conv_.output_size());
  const auto values = static_cast<std::size_t>(rows * conv_.output_size());
  switch (kept()) {
    case Kept::argmax:
      argmax_.assign(static_cast<std::size_t>(rows * output_size()), 0);
      break;
    case Kept::nothing:
      break;
    case Kept::relu_mask:
      relu_mask_.assign(values, 0);
      break;
    case Kept::activations:
      activated_ = Vector::Zero(static_cast<Index>(values));
      break;
  }
  capacity_ = rows;
}

template <class S>
void BasicConvBlock<S>::forward(ConstBatchView in, BatchView out) {
  const Index rows = in.rows();
  if (rows > capacity_) reserve(rows);
  const Index maps = conv_.output_size(), pooled = output_size();
  for (Index first = 0; first < rows; first += chunk_) {
    const Index count = std::min(chunk_, rows - first);
    S* dst = out.data() + first * pooled;
    conv_.forward_images(in.data() + first * in.cols(), count, maps_.data());
    if (pool_ == PoolKind::max) {
      pool_forward(pool_, pool_shape_, maps_.data(), dst, argmax_.data() + first * pooled, count);
      activate(activation_, dst, dst, count * pooled);
      continue;
    }
    const Index n = count * maps;
    if (kept() == Kept::activations) {
      S* activated = activated_.data() + first * maps;
      activate(activation_, maps_.data(), activated, n);
      pool_forward(pool_, pool_shape_, activated, dst, nullptr, count);
      continue;
    }
    activate(activation_, maps_.data(), maps_.data(), n);
    if (kept() == Kept::relu_mask) {
      const S* a = maps_.data();
      std::uint8_t* mask = relu_mask_.data() + first * maps;
      for (Index i = 0; i < n; ++i) mask[i] = a[i] > S(0) ? 1 : 0;
    }
    pool_forward(pool_, pool_shape_, maps_.data(), dst, nullptr, count);
  }
}

template <class S>
void BasicConvBlock<S>::backward(ConstBatchView in, ConstBatchView out, BatchView grad_out, BatchView* grad_in) {
  const Index rows = in.rows();
  if (rows > capacity_) {
    // What backward reads (arg-maxes, mask, activations) comes from forward() on these rows.
    throw Error("conv block: backward on " + std::to_string(rows) +
                " rows without a forward pass on them (buffers for " + std::to_string(capacity_) + ")");
  }
  const Index maps = conv_.output_size(), pooled = output_size();
  conv_.begin_backward();
  for (Index first = 0; first < rows; first += chunk_) {
    const Index count = std::min(chunk_, rows - first);
    S* g = grad_out.data() + first * pooled;
    if (pool_ == PoolKind::max) {
      // dL/d(max z) = dL/dout · f'(out), then to each window's arg-max.
      activation_gradient(activation_, out.data() + first * pooled, g, g, count * pooled);
      pool_backward(pool_, pool_shape_, g, argmax_.data() + first * pooled, maps_.data(), count);
    } else {
      pool_backward(pool_, pool_shape_, g, nullptr, maps_.data(), count);
      S* dz = maps_.data();
      const Index n = count * maps;
      if (kept() == Kept::activations) {
        activation_gradient(activation_, activated_.data() + first * maps, dz, dz, n);
      } else if (kept() == Kept::relu_mask) {
        const std::uint8_t* mask = relu_mask_.data() + first * maps;
        for (Index i = 0; i < n; ++i) dz[i] = mask[i] != 0 ? dz[i] : S(0);
      }
    }
    conv_.backward_images(in.data() + first * in.cols(), count, maps_.data(),
                          grad_in != nullptr ? grad_in->data() + first * grad_in->cols() : nullptr);
  }
  conv_.end_backward();
}

template class BasicConvBlock<double>;
template class BasicConvBlock<float>;

}  // namespace simmer::model
