#pragma once
/// \file
/// What the optimiser and the integrator see: a function of one flat parameter vector with
/// `evaluate_with_gradient(x, grad)` (ensmallen's shape).

#include <vector>

#include "simmer/core/types.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/model/network.hpp"

namespace simmer::train {

template <class S>
class BasicObjective {
 public:
  SIMMER_SCALAR_TYPES(S);
  virtual ~BasicObjective() = default;
  [[nodiscard]] virtual Index parameter_count() const = 0;
  /// L(x); writes ∇L(x) into `grad` (size parameter_count()).
  virtual double evaluate_with_gradient(const Vector& x, Vector& grad) = 0;
  /// L(x) alone.
  virtual double evaluate(const Vector& x) = 0;
};

/// Sharded gradients (issue 13): several processes evaluate one trajectory's full-batch loss and
/// gradient together, each on its part of the batch. The objective knows nothing of MPI; the
/// combiner (parallel/) exchanges the parts' partial sums.
class GradientCombiner {
 public:
  virtual ~GradientCombiner() = default;
  /// How many processes share the batch, and which one this is (0-based).
  [[nodiscard]] virtual int parts() const = 0;
  [[nodiscard]] virtual int part() const = 0;
  /// Every part's `count` values, in part order, into `out` (parts() × count): an all-gather.
  virtual void all_parts(const double* local, Index count, double* out) = 0;
  virtual void all_parts(const float* local, Index count, float* out) = 0;
};

/// Training loss of a network on a fixed data set, in target units: the network's output is
/// un-scaled (raw = out ⊙ output_scale + output_offset, per output column) before the loss, as
/// docs/METHOD.md §6 asks. Passing the network's own parameter vector (and, for the gradient, its
/// own gradient vector) avoids every copy: this is the hot path of a simmering step.
template <class S>
class BasicNetworkObjective final : public BasicObjective<S> {
 public:
  SIMMER_SCALAR_TYPES(S);
  /// `x` and `y` must outlive the objective. Empty scale/offset mean identity.
  BasicNetworkObjective(model::BasicNetwork<S>& net, model::LossKind loss, const Matrix& x, const Matrix& y,
                        Eigen::RowVectorXd output_scale = {}, Eigen::RowVectorXd output_offset = {});

  [[nodiscard]] Index parameter_count() const override { return net_->parameter_count(); }
  double evaluate_with_gradient(const Vector& params, Vector& grad) override;
  double evaluate(const Vector& params) override;

  /// Loss and gradient on the rows `rows` of the data (a mini-batch). Copies those rows into a
  /// buffer sized at the first call; the result is in the network's gradient().
  double evaluate_batch_with_gradient(const std::vector<std::int64_t>& rows);

  /// Network predictions in target units for `x` (scaled inputs); valid until the next call.
  ConstBatchView predict(ConstBatchView x);

  /// Full-batch loss and gradient as the sum of `chunks` row blocks (a power of two, at most
  /// the row count; block c holds rows [c·n/chunks, (c+1)·n/chunks)), each weighted by its share
  /// of the loss's normalisation and summed pairwise in one fixed tree order. With a combiner of
  /// k parts (k a power of two dividing `chunks`), part p evaluates blocks [p·chunks/k,
  /// (p+1)·chunks/k) — a subtree — and the k subtree sums are combined in the same tree order,
  /// so the result has the same bits for every k. chunks = 1 without a combiner is the plain
  /// full-batch evaluation (the default). Mini-batches (evaluate_batch_with_gradient) are not
  /// chunked. Throws simmer::Error naming run.gradient_chunks when the shape is impossible.
  void set_gradient_chunks(Index chunks, GradientCombiner* combiner = nullptr);
  /// predict(x) cut the same way: `x`'s rows in gradient_chunks() blocks, each part predicting
  /// its blocks and the parts exchanging them (collective with a combiner), so the members'
  /// evaluation is split too and its bits do not depend on k. The plain predict(x) when there
  /// is one block and no combiner.
  ConstBatchView predict_shared(ConstBatchView x);
  [[nodiscard]] Index gradient_chunks() const { return chunks_; }

  [[nodiscard]] model::BasicNetwork<S>& network() { return *net_; }
  [[nodiscard]] Index rows() const { return x_->rows(); }

 private:
  double loss_on(ConstBatchView x, ConstBatchView y, bool with_gradient);
  /// raw = out ⊙ output_scale + output_offset, per output column (target units).
  void unscale(ConstBatchView out, BatchView raw) const;
  double chunked(bool with_gradient, Vector* grad);
  void load(const Vector& params);

  model::BasicNetwork<S>* net_;
  model::LossKind loss_;
  const Matrix* x_;
  const Matrix* y_;
  RowVectorOf<S> scale_;
  RowVectorOf<S> offset_;
  bool scaled_ = false;
  Matrix raw_;      ///< un-scaled predictions
  Matrix batch_x_;  ///< mini-batch rows
  Matrix batch_y_;
  // Chunked evaluation: one column per block this part evaluates (gradient, then the value in
  // the last row), and one per part after the exchange. Column-major: a column is contiguous.
  Index chunks_ = 1;
  GradientCombiner* combiner_ = nullptr;
  Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic> slots_;
  Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic> parts_;
  std::vector<S> shared_local_, shared_all_;  ///< predict_shared: this part's blocks, every part's
  Matrix shared_out_;
};

using Objective = BasicObjective<double>;
using NetworkObjective = BasicNetworkObjective<double>;

}  // namespace simmer::train
