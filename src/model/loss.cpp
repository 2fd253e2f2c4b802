#include "simmer/model/loss.hpp"

#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::model {

LossKind parse_loss(const std::string& name) {
  if (name == "sse") return LossKind::sse;
  if (name == "mse") return LossKind::mse;
  if (name == "cce" || name == "categorical_crossentropy") return LossKind::cce;
  if (name == "bce" || name == "binary_crossentropy") return LossKind::bce;
  throw Error("unknown loss '" + name + "' (choices: sse, mse, cce, bce)");
}

std::string to_string(LossKind k) {
  switch (k) {
    case LossKind::sse:
      return "sse";
    case LossKind::mse:
      return "mse";
    case LossKind::cce:
      return "cce";
    case LossKind::bce:
      return "bce";
  }
  return "?";
}

namespace {

/// Shared body: value always, gradient when `grad` is non-null.
double evaluate(LossKind k, ConstBatchView pred, ConstBatchView target, BatchView* grad) {
  const auto rows = static_cast<double>(pred.rows());
  switch (k) {
    case LossKind::sse:
    case LossKind::mse: {
      const double norm = k == LossKind::sse ? 1.0 : 1.0 / static_cast<double>(pred.size());
      if (grad != nullptr) {
        grad->noalias() = pred - target;
        const double value = norm * grad->squaredNorm();
        *grad *= 2.0 * norm;
        return value;
      }
      return norm * (pred - target).squaredNorm();
    }
    case LossKind::cce: {
      // mean over rows of logsumexp(z) - Σ t z; gradient (softmax(z) - t) / rows.
      // Per-row scratch reused across calls, grown only: no allocation per step, nor when
      // mini-batches of two sizes alternate (a partial last batch).
      thread_local Eigen::VectorXd zmax_buffer;
      thread_local Eigen::VectorXd sum_buffer;
      if (zmax_buffer.size() < pred.rows()) {
        zmax_buffer.resize(pred.rows());
        sum_buffer.resize(pred.rows());
      }
      Eigen::Map<Eigen::VectorXd> zmax(zmax_buffer.data(), pred.rows());
      Eigen::Map<Eigen::VectorXd> sum(sum_buffer.data(), pred.rows());
      zmax = pred.rowwise().maxCoeff();
      if (grad != nullptr) {
        grad->noalias() = pred.colwise() - zmax;
        grad->array() = grad->array().exp();
        sum = grad->rowwise().sum();
        const double value = ((sum.array().log() + zmax.array()).sum() - (target.array() * pred.array()).sum()) / rows;
        grad->array().colwise() /= sum.array();
        *grad -= target;
        *grad /= rows;
        return value;
      }
      sum = (pred.colwise() - zmax).array().exp().rowwise().sum();
      return ((sum.array().log() + zmax.array()).sum() - (target.array() * pred.array()).sum()) / rows;
    }
    case LossKind::bce: {
      // max(z,0) - z t + log1p(exp(-|z|)); gradient (σ(z) - t) / size.
      const auto z = pred.array();
      const auto t = target.array();
      const double norm = 1.0 / static_cast<double>(pred.size());
      const double value = norm * (z.max(0.0) - z * t + (-z.abs()).exp().log1p()).sum();
      if (grad != nullptr) grad->array() = norm * (1.0 / (1.0 + (-z).exp()) - t);
      return value;
    }
  }
  return 0.0;
}

}  // namespace

double loss_value(LossKind k, ConstBatchView pred, ConstBatchView target) { return evaluate(k, pred, target, nullptr); }

double loss_value_and_gradient(LossKind k, ConstBatchView pred, ConstBatchView target, BatchView grad) {
  return evaluate(k, pred, target, &grad);
}

}  // namespace simmer::model
