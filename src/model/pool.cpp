#include "simmer/model/pool.hpp"

#include <algorithm>
#include <limits>

#include "simmer/core/error.hpp"

namespace simmer::model {

template <class S>
BasicPool2D<S>::BasicPool2D(Index height, Index width, Index channels, PoolKind pool, Index size)
    : height_(height),
      width_(width),
      channels_(channels),
      pool_(pool),
      size_(size),
      out_height_(size > 0 ? height / size : 0),
      out_width_(size > 0 ? width / size : 0) {
  if (height <= 0 || width <= 0 || channels <= 0 || size <= 0) {
    throw Error("pool2d layer: height, width, channels and size must be positive (got " + std::to_string(height) +
                ", " + std::to_string(width) + ", " + std::to_string(channels) + ", " + std::to_string(size) + ")");
  }
  if (out_height_ == 0 || out_width_ == 0) {
    throw Error("pool2d layer: a " + std::to_string(size) + "x" + std::to_string(size) + " window does not fit a " +
                std::to_string(height) + "x" + std::to_string(width) + " image");
  }
  if (input_size() > std::numeric_limits<std::int32_t>::max()) {
    throw Error("pool2d layer: images of " + std::to_string(input_size()) +
                " values are too large for 32-bit arg-max indices");
  }
}

template <class S>
std::string BasicPool2D<S>::kind() const {
  return pool_ == PoolKind::max ? "max_pool2d" : "average_pool2d";
}

template <class S>
Index BasicPool2D<S>::scratch_values(Index rows) const {
  return pool_ == PoolKind::max ? values_for_bytes<S>(rows * output_size() * 4) : 0;
}

template <class S>
void BasicPool2D<S>::reserve(Index rows) {
  if (rows <= capacity_) return;
  if (pool_ == PoolKind::max) argmax_.resize(static_cast<std::size_t>(rows * output_size()));
  capacity_ = rows;
}

namespace {

/// One image's pooling: average when `arg` is null, else max with the arg-max offsets written to
/// `arg`. `Size` > 0 fixes the window size at compile time (2, the common case: the loops then
/// unroll); 0 takes it from `runtime_size`.
template <class S, int Size>
void pool_image(const S* image, S* pooled, std::int32_t* arg, Index out_height, Index out_width, Index channels,
                Index width, Index runtime_size) {
  const Index size = Size > 0 ? Size : runtime_size;
  const Index row_values = width * channels;
  const S inv_area = S(1) / static_cast<S>(size * size);
  for (Index oy = 0; oy < out_height; ++oy) {
    for (Index ox = 0; ox < out_width; ++ox) {
      const Index o = (oy * out_width + ox) * channels;
      const Index corner = (oy * row_values + ox * channels) * size;
      if (arg == nullptr) {
        for (Index c = 0; c < channels; ++c) {
          S sum = 0;
          for (Index ky = 0; ky < size; ++ky) {
            for (Index kx = 0; kx < size; ++kx) {
              sum += image[corner + ky * row_values + kx * channels + c];
            }
          }
          pooled[o + c] = sum * inv_area;
        }
        continue;
      }
      for (Index c = 0; c < channels; ++c) {
        // Window in row-major order; strictly greater keeps the first maximum on ties.
        Index best_at = corner + c;
        S best = image[best_at];
        for (Index ky = 0; ky < size; ++ky) {
          for (Index kx = 0; kx < size; ++kx) {
            const Index at = corner + ky * row_values + kx * channels + c;
            if (image[at] > best) {
              best = image[at];
              best_at = at;
            }
          }
        }
        pooled[o + c] = best;
        arg[o + c] = static_cast<std::int32_t>(best_at);
      }
    }
  }
}

}  // namespace

template <class S>
void pool_forward(PoolKind kind, const PoolShape& shape, const S* in, S* out, std::int32_t* arg, Index images) {
  const Index in_size = shape.height * shape.width * shape.channels;
  const Index out_size = shape.out_height() * shape.out_width() * shape.channels;
  for (Index n = 0; n < images; ++n) {
    const S* image = in + n * in_size;
    S* pooled = out + n * out_size;
    std::int32_t* a = kind == PoolKind::max ? arg + n * out_size : nullptr;
    if (shape.size == 2) {
      pool_image<S, 2>(image, pooled, a, shape.out_height(), shape.out_width(), shape.channels, shape.width,
                       shape.size);
    } else {
      pool_image<S, 0>(image, pooled, a, shape.out_height(), shape.out_width(), shape.channels, shape.width,
                       shape.size);
    }
  }
}

template <class S>
void pool_backward(PoolKind kind, const PoolShape& shape, const S* grad_out, const std::int32_t* arg, S* grad_in,
                   Index images) {
  const Index in_size = shape.height * shape.width * shape.channels;
  const Index out_height = shape.out_height(), out_width = shape.out_width();
  const Index out_size = out_height * out_width * shape.channels;
  const Index size = shape.size, channels = shape.channels;
  const Index row_values = shape.width * channels;
  const Index covered = out_width * size * channels;  // values of a row inside windows
  const S inv_area = S(1) / static_cast<S>(size * size);
  // Average: every input value is written once, in order (its window's share of the gradient,
  // zero outside the windows). Max: the image's gradient is zeroed while it is in cache, then
  // each window's gradient goes to its arg-max (windows do not overlap).
  for (Index n = 0; n < images; ++n) {
    const S* g = grad_out + n * out_size;
    S* gi = grad_in + n * in_size;
    if (kind == PoolKind::max) {
      const std::int32_t* a = arg + n * out_size;
      std::fill_n(gi, in_size, S(0));
      for (Index o = 0; o < out_size; ++o) gi[a[o]] = g[o];
      continue;
    }
    for (Index oy = 0; oy < out_height; ++oy) {
      // The window's rows of dL/din are the same: compute the first, copy it to the others.
      const S* g_row = g + oy * out_width * channels;
      S* first = gi + oy * size * row_values;
      for (Index ox = 0; ox < out_width; ++ox) {
        const S* gw = g_row + ox * channels;
        for (Index kx = 0; kx < size; ++kx) {
          S* d = first + (ox * size + kx) * channels;
          for (Index c = 0; c < channels; ++c) d[c] = inv_area * gw[c];
        }
      }
      std::fill(first + covered, first + row_values, S(0));
      for (Index ky = 1; ky < size; ++ky) std::copy_n(first, row_values, first + ky * row_values);
    }
    std::fill(gi + out_height * size * row_values, gi + in_size, S(0));
  }
}

template <class S>
void BasicPool2D<S>::forward(ConstBatchView in, BatchView out) {
  const Index rows = in.rows();
  if (rows > capacity_) reserve(rows);
  pool_forward(pool_, shape(), in.data(), out.data(), argmax_.data(), rows);
}

template <class S>
void BasicPool2D<S>::backward(ConstBatchView in, ConstBatchView /*out*/, BatchView grad_out, BatchView* grad_in) {
  if (grad_in == nullptr) return;
  pool_backward(pool_, shape(), grad_out.data(), argmax_.data(), grad_in->data(), in.rows());
}

template <class S>
BasicFlatten<S>::BasicFlatten(Index size) : size_(size) {
  if (size <= 0) throw Error("flatten layer: size must be positive");
}

template <class S>
void BasicFlatten<S>::forward(ConstBatchView in, BatchView out) {
  out = in;
}

template <class S>
void BasicFlatten<S>::backward(ConstBatchView /*in*/, ConstBatchView /*out*/, BatchView grad_out, BatchView* grad_in) {
  if (grad_in != nullptr) *grad_in = grad_out;
}

template void pool_forward(PoolKind, const PoolShape&, const double*, double*, std::int32_t*, Index);
template void pool_forward(PoolKind, const PoolShape&, const float*, float*, std::int32_t*, Index);
template void pool_backward(PoolKind, const PoolShape&, const double*, const std::int32_t*, double*, Index);
template void pool_backward(PoolKind, const PoolShape&, const float*, const std::int32_t*, float*, Index);
template class BasicPool2D<double>;
template class BasicPool2D<float>;
template class BasicFlatten<double>;
template class BasicFlatten<float>;

}  // namespace simmer::model
