#include "simmer/train/adam.hpp"

#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::train {

void AdamOptions::validate() const {
  if (!(learning_rate > 0.0) || !std::isfinite(learning_rate)) {
    throw FieldError("AdamOptions.learning_rate", std::to_string(learning_rate), "must be a positive number");
  }
  if (!(beta1 >= 0.0 && beta1 < 1.0)) {
    throw FieldError("AdamOptions.beta1", std::to_string(beta1), "must be in [0, 1)");
  }
  if (!(beta2 >= 0.0 && beta2 < 1.0)) {
    throw FieldError("AdamOptions.beta2", std::to_string(beta2), "must be in [0, 1)");
  }
  if (!(epsilon > 0.0)) throw FieldError("AdamOptions.epsilon", std::to_string(epsilon), "must be > 0");
  if (epochs < 0) throw FieldError("AdamOptions.epochs", std::to_string(epochs), "must be >= 0");
  if (batch_size < 0) {
    throw FieldError("AdamOptions.batch_size", std::to_string(batch_size), "must be >= 0 (0: full batch)");
  }
}

template <class S>
BasicAdamState<S> BasicAdamState<S>::zeros(Index n) {
  BasicAdamState s;
  s.m = VectorOf<S>::Zero(n);
  s.v = VectorOf<S>::Zero(n);
  s.previous = VectorOf<S>::Zero(n);
  return s;
}

template <class S>
void adam_update(const AdamOptions& opt, BasicAdamState<S>& state, VectorOf<S>& x, const VectorOf<S>& grad) {
  state.t += 1;
  const auto t = static_cast<double>(state.t);
  const double alpha = opt.learning_rate * std::sqrt(1.0 - std::pow(opt.beta2, t)) / (1.0 - std::pow(opt.beta1, t));
  state.previous = x;
  const auto b1 = static_cast<S>(opt.beta1), b2 = static_cast<S>(opt.beta2);
  state.m = b1 * state.m + (S(1) - b1) * grad;
  state.v = b2 * state.v + (S(1) - b2) * grad.cwiseAbs2();
  x.array() -= static_cast<S>(alpha) * state.m.array() / (state.v.array().sqrt() + static_cast<S>(opt.epsilon));
}

template <class S>
void train_adam(const AdamOptions& opt, BasicAdamState<S>& state, BasicNetworkObjective<S>& objective, Rng& rng,
                const EpochCallback& on_epoch) {
  auto& net = objective.network();
  VectorOf<S>& x = net.parameters();
  VectorOf<S>& grad = net.gradient();
  if (state.m.size() != x.size()) state = BasicAdamState<S>::zeros(x.size());
  const std::int64_t rows = objective.rows();
  const bool full_batch = opt.batch_size == 0 || opt.batch_size >= rows;
  std::vector<std::int64_t> batch;  // both reused from epoch to epoch: no allocation after the
  std::vector<std::int64_t> order;  // first
  for (; state.epoch < opt.epochs;) {
    double loss = 0.0;
    if (full_batch) {
      loss = objective.evaluate_with_gradient(x, grad);
      adam_update(opt, state, x, grad);
    } else {
      permutation(rows, rng, order);
      std::int64_t batches = 0;
      for (std::int64_t start = 0; start < rows; start += opt.batch_size) {
        const std::int64_t end = std::min(rows, start + opt.batch_size);
        batch.assign(order.begin() + start, order.begin() + end);
        loss += objective.evaluate_batch_with_gradient(batch);
        adam_update(opt, state, x, grad);
        ++batches;
      }
      loss /= static_cast<double>(batches);
    }
    state.epoch += 1;
    if (on_epoch && on_epoch(state.epoch, loss)) break;
  }
}

#define SIMMER_INSTANTIATE(S)                                                                          \
  template struct BasicAdamState<S>;                                                                   \
  template void adam_update(const AdamOptions&, BasicAdamState<S>&, VectorOf<S>&, const VectorOf<S>&); \
  template void train_adam(const AdamOptions&, BasicAdamState<S>&, BasicNetworkObjective<S>&, Rng&,    \
                           const EpochCallback&);
SIMMER_INSTANTIATE(double)
SIMMER_INSTANTIATE(float)
#undef SIMMER_INSTANTIATE

}  // namespace simmer::train
