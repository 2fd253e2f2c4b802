#pragma once
/// \file
/// What the optimiser and the integrator see: a function of one flat parameter vector with
/// `evaluate_with_gradient(x, grad)` (ensmallen's shape).

#include <vector>

#include "simmer/core/types.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/model/network.hpp"

namespace simmer::train {

class Objective {
 public:
  virtual ~Objective() = default;
  [[nodiscard]] virtual Index parameter_count() const = 0;
  /// L(x); writes ∇L(x) into `grad` (size parameter_count()).
  virtual double evaluate_with_gradient(const Vector& x, Vector& grad) = 0;
  /// L(x) alone.
  virtual double evaluate(const Vector& x) = 0;
};

/// Training loss of a network on a fixed data set, in target units: the network's output is
/// un-scaled (raw = out ⊙ output_scale + output_offset, per output column) before the loss, as
/// SIMMERING.md §6 asks. Passing the network's own parameter vector (and, for the gradient, its
/// own gradient vector) avoids every copy: this is the hot path of a simmering step.
class NetworkObjective final : public Objective {
 public:
  /// `x` and `y` must outlive the objective. Empty scale/offset mean identity.
  NetworkObjective(model::Network& net, model::LossKind loss, const Matrix& x, const Matrix& y,
                   Eigen::RowVectorXd output_scale = {}, Eigen::RowVectorXd output_offset = {});

  [[nodiscard]] Index parameter_count() const override { return net_->parameter_count(); }
  double evaluate_with_gradient(const Vector& params, Vector& grad) override;
  double evaluate(const Vector& params) override;

  /// Loss and gradient on the rows `rows` of the data (a mini-batch). Copies those rows into a
  /// buffer sized at the first call; the result is in the network's gradient().
  double evaluate_batch_with_gradient(const std::vector<std::int64_t>& rows);

  /// Network predictions in target units for `x` (scaled inputs); valid until the next call.
  ConstBatchView predict(ConstBatchView x);

  [[nodiscard]] model::Network& network() { return *net_; }
  [[nodiscard]] Index rows() const { return x_->rows(); }

 private:
  double loss_on(ConstBatchView x, ConstBatchView y, bool with_gradient);
  void load(const Vector& params);

  model::Network* net_;
  model::LossKind loss_;
  const Matrix* x_;
  const Matrix* y_;
  Eigen::RowVectorXd scale_;
  Eigen::RowVectorXd offset_;
  bool scaled_ = false;
  Matrix raw_;      ///< un-scaled predictions
  Matrix batch_x_;  ///< mini-batch rows
  Matrix batch_y_;
};

}  // namespace simmer::train
