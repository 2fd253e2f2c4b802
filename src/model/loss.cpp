#include "simmer/model/loss.hpp"

#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::model {

namespace {

/// Shared body: value always, gradient when `grad` is non-null.
template <class S>
double evaluate(LossKind k, ConstBatchViewOf<S> pred, ConstBatchViewOf<S> target, BatchViewOf<S>* grad) {
  using Column = Eigen::Matrix<S, Eigen::Dynamic, 1>;
  const auto rows = static_cast<S>(pred.rows());
  const S zero(0), one(1);
  switch (k) {
    case LossKind::sse:
    case LossKind::mse: {
      const S norm = k == LossKind::sse ? one : one / static_cast<S>(pred.size());
      if (grad != nullptr) {
        grad->noalias() = pred - target;
        const S value = norm * grad->squaredNorm();
        *grad *= S(2) * norm;
        return value;
      }
      return norm * (pred - target).squaredNorm();
    }
    case LossKind::cce: {
      // mean over rows of logsumexp(z) - Σ t z; gradient (softmax(z) - t) / rows.
      // Per-row scratch reused across calls, grown only: no allocation per step, nor when
      // mini-batches of two sizes alternate (a partial last batch).
      thread_local Column zmax_buffer;
      thread_local Column sum_buffer;
      if (zmax_buffer.size() < pred.rows()) {
        zmax_buffer.resize(pred.rows());
        sum_buffer.resize(pred.rows());
      }
      Eigen::Map<Column> zmax(zmax_buffer.data(), pred.rows());
      Eigen::Map<Column> sum(sum_buffer.data(), pred.rows());
      zmax = pred.rowwise().maxCoeff();
      if (grad != nullptr) {
        grad->noalias() = pred.colwise() - zmax;
        grad->array() = grad->array().exp();
        sum = grad->rowwise().sum();
        const S value = ((sum.array().log() + zmax.array()).sum() - (target.array() * pred.array()).sum()) / rows;
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
      const S norm = one / static_cast<S>(pred.size());
      const S value = norm * (z.max(zero) - z * t + (-z.abs()).exp().log1p()).sum();
      if (grad != nullptr) grad->array() = norm * (one / (one + (-z).exp()) - t);
      return value;
    }
  }
  return 0.0;
}

}  // namespace

template <class S>
double loss_value(LossKind k, ConstBatchViewOf<S> pred, ConstBatchViewOf<S> target) {
  return evaluate<S>(k, pred, target, nullptr);
}

template <class S>
double loss_value_and_gradient(LossKind k, ConstBatchViewOf<S> pred, ConstBatchViewOf<S> target, BatchViewOf<S> grad) {
  return evaluate<S>(k, pred, target, &grad);
}

template double loss_value(LossKind, ConstBatchViewOf<double>, ConstBatchViewOf<double>);
template double loss_value(LossKind, ConstBatchViewOf<float>, ConstBatchViewOf<float>);
template double loss_value_and_gradient(LossKind, ConstBatchViewOf<double>, ConstBatchViewOf<double>,
                                        BatchViewOf<double>);
template double loss_value_and_gradient(LossKind, ConstBatchViewOf<float>, ConstBatchViewOf<float>, BatchViewOf<float>);

}  // namespace simmer::model
