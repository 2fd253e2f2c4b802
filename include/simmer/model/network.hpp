#pragma once
/// \file
/// A feed-forward network: a stack of layers over ONE contiguous parameter vector. Layers see
/// their slices through Eigen::Map views, so Adam, the integrator, MPI messages and HDF5 rows
/// all work on the same flat buffer. Flattening convention: layer by layer, each layer's
/// tensors in its own order (dense: kernel [fan_in][fan_out] row-major, then bias).

#include <string>
#include <vector>

#include "simmer/model/layer.hpp"

namespace simmer::model {

/// Where one tensor lives in the flat parameter vector (what the archive's /model stores).
struct TensorLayout {
  std::string name;  ///< "layer<i>_<kind>/<tensor>", e.g. "layer0_dense/kernel"
  Index offset = 0;
  std::vector<Index> shape;
};

/// The flat layout of `layers` (BasicNetwork::layout of a network made of them), checking that
/// each layer takes what the one before gives (simmer::Error otherwise). Allocates no parameters.
template <class S>
std::vector<TensorLayout> layout_of(const std::vector<LayerPtrOf<S>>& layers);

/// The number of parameters a layout holds.
Index parameter_count(const std::vector<TensorLayout>& layout);

template <class S>
class BasicNetwork {
 public:
  SIMMER_SCALAR_TYPES(S);
  using LayerPtr = LayerPtrOf<S>;
  BasicNetwork() = default;
  explicit BasicNetwork(std::vector<LayerPtr> layers);
  BasicNetwork(BasicNetwork&&) noexcept = default;
  BasicNetwork& operator=(BasicNetwork&&) noexcept = default;
  BasicNetwork(const BasicNetwork&) = delete;
  BasicNetwork& operator=(const BasicNetwork&) = delete;

  [[nodiscard]] Index input_size() const;
  [[nodiscard]] Index output_size() const;
  [[nodiscard]] Index parameter_count() const { return params_.size(); }
  [[nodiscard]] const std::vector<LayerPtr>& layers() const { return layers_; }
  [[nodiscard]] std::vector<TensorLayout> layout() const;

  /// The flat parameter vector (read/write in place) and the gradient of the last backward().
  /// Assigning a new vector to it (even by move, which swaps buffers) is safe: forward() and
  /// backward() re-point the layers' views when the buffer moved.
  Vector& parameters() { return params_; }
  [[nodiscard]] const Vector& parameters() const { return params_; }
  [[nodiscard]] const Vector& gradient() const { return grads_; }
  Vector& gradient() { return grads_; }

  /// Draw all parameters: weights by `scheme`, biases zero.
  void initialize(Init scheme, Rng& rng);

  /// Size buffers for batches of up to `rows` rows (forward grows them when needed, but the
  /// hot loop should never pay for that: reserve the largest batch first).
  void reserve(Index rows);
  [[nodiscard]] Index capacity() const { return capacity_; }

  /// Output for the batch `x` [rows][input_size]; valid until the next forward().
  ConstBatchView forward(ConstBatchView x);

  /// Parameter gradient given dL/d(output) of the last forward() on the same `x`; the result is
  /// in gradient(). `grad_output` is used as scratch.
  void backward(ConstBatchView x, BatchView grad_output);

  /// Scratch of shape [rows][output_size] for dL/d(output), owned by the network.
  BatchView output_gradient_buffer(Index rows);

 private:
  /// Point every layer's views at params_/grads_ (again, when their buffers moved).
  void bind_layers();

  std::vector<LayerPtr> layers_;
  Vector params_;
  Vector grads_;
  const S* bound_params_ = nullptr;
  const S* bound_grads_ = nullptr;
  Index capacity_ = 0;
  Index rows_ = 0;
  std::vector<Matrix> activations_;  ///< outputs of each layer, [capacity][size]
  std::vector<Matrix> deltas_;       ///< dL/d(output) of each layer
};

using Network = BasicNetwork<double>;

}  // namespace simmer::model
