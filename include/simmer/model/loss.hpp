#pragma once
/// \file
/// Losses on network outputs (logits for the classification losses). docs/METHOD.md §6.

#include <memory>
#include <string>

#include "simmer/core/names.hpp"
#include "simmer/core/types.hpp"

namespace simmer::model {

enum class LossKind {
  sse,  ///< Σ (p - t)² over all rows and outputs
  mse,  ///< mean of (p - t)² over rows and outputs
  cce,  ///< categorical cross-entropy of softmax(logits) vs one-hot targets, mean over rows
  bce   ///< binary cross-entropy from logits vs 0/1 targets, mean over rows and outputs
};

inline constexpr Names<LossKind, 4> kLossNames{
    "loss", {{{LossKind::sse, "sse"}, {LossKind::mse, "mse"}, {LossKind::cce, "cce"}, {LossKind::bce, "bce"}}}};
inline LossKind parse_loss(const std::string& name) { return kLossNames.parse(name); }
inline std::string to_string(LossKind k) { return std::string(kLossNames.name(k)); }

/// Loss value, and its gradient with respect to the predictions written into `grad`
/// (same shape as `pred`). Stable for large logits (log-sum-exp, softplus).
/// Computed in S (sums too); the value is returned as a double.
template <class S>
double loss_value(LossKind k, ConstBatchViewOf<S> pred, ConstBatchViewOf<S> target);
template <class S>
double loss_value_and_gradient(LossKind k, ConstBatchViewOf<S> pred, ConstBatchViewOf<S> target, BatchViewOf<S> grad);

}  // namespace simmer::model
