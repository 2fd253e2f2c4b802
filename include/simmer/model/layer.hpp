#pragma once
/// \file
/// The layer interface. A layer maps a batch [rows][input_size] to [rows][output_size] (one
/// sample per row; image layers flatten height × width × channels (HWC) into the row), owns no
/// parameters (they live in the Network's one flat vector and the layer sees them through
/// views bound by `bind`) and keeps whatever scratch space its backward pass needs, sized once
/// by `reserve`. Dense, activation, convolution and pooling layers all fit this shape, so the
/// network container, the optimiser and the integrator never change when a layer kind is added.

#include <memory>
#include <string>
#include <vector>

#include "simmer/core/rng.hpp"
#include "simmer/core/types.hpp"

namespace simmer::model {

/// How a layer's weights are drawn (biases are always zero). docs/METHOD.md §6.
enum class Init { glorot_normal, glorot_uniform, modified_glorot_normal };

/// One named tensor of a layer's parameters, as stored in the flat vector.
struct TensorSpec {
  std::string name;          ///< e.g. "kernel" or "bias"
  std::vector<Index> shape;  ///< row-major shape; the product is the size
  [[nodiscard]] Index size() const;
};

template <class S>
class BasicLayer {
 public:
  SIMMER_SCALAR_TYPES(S);
  virtual ~BasicLayer() = default;

  /// Kind of layer, e.g. "dense", "tanh".
  [[nodiscard]] virtual std::string kind() const = 0;
  [[nodiscard]] virtual Index input_size() const = 0;
  [[nodiscard]] virtual Index output_size() const = 0;

  /// The layer's tensors in storage order; empty for parameter-free layers.
  [[nodiscard]] virtual std::vector<TensorSpec> tensors() const { return {}; }
  [[nodiscard]] Index parameter_count() const;

  /// Point the layer's views at its slice of the network's parameter and gradient vectors
  /// (both of length parameter_count()).
  virtual void bind(const S* /*params*/, S* /*grads*/) {}

  /// Draw initial values into `params` (this layer's slice).
  virtual void initialize(S* /*params*/, Init /*scheme*/, Rng& /*rng*/) const {}

  /// Size scratch space for batches of up to `rows` rows. Never called in the hot loop.
  virtual void reserve(Index /*rows*/) {}

  /// Values (scalars S) of scratch space reserve(rows) allocates, for the run's memory estimate.
  [[nodiscard]] virtual Index scratch_values(Index /*rows*/) const { return 0; }

  /// out = f(in). `out` has in.rows() rows.
  virtual void forward(ConstBatchView in, BatchView out) = 0;

  /// Given in, out = f(in) and dL/dout, write this layer's parameter gradient (overwriting its
  /// gradient slice) and, when `grad_in` is non-null, dL/din into it. dL/dout may be modified.
  virtual void backward(ConstBatchView in, ConstBatchView out, BatchView grad_out, BatchView* grad_in) = 0;
};

template <class S>
using LayerPtrOf = std::unique_ptr<BasicLayer<S>>;
using Layer = BasicLayer<double>;
using LayerPtr = LayerPtrOf<double>;

}  // namespace simmer::model
