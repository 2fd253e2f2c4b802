#pragma once
/// \file
/// Adam with TensorFlow/Keras defaults. Options (what the user sets) are apart from the state
/// (what a checkpoint saves), as in ensmallen.

#include <cstdint>
#include <functional>

#include "simmer/core/names.hpp"
#include "simmer/core/rng.hpp"
#include "simmer/core/types.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::train {

/// adam.keep: which of Adam's iterates a trajectory keeps (its deep-ensemble network and, in a
/// retrofit, simmering's start point).
enum class AdamKeep {
  last,            ///< the last epoch's (the paper)
  best_validation  ///< the epoch with the lowest validation loss (early stopping, adam.patience)
};
inline constexpr Names<AdamKeep, 2> kAdamKeepNames{
    "adam.keep", {{{AdamKeep::last, "last"}, {AdamKeep::best_validation, "best_validation"}}}};

struct AdamOptions {
  double learning_rate = 0.002;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-7;
  std::int64_t epochs = 1000;
  std::int64_t batch_size = 0;     ///< 0: full batch (one update per epoch)
  AdamKeep keep = AdamKeep::last;  ///< which iterate is kept (the chain's policy; train_adam ignores it)
  std::int64_t patience = 0;       ///< best_validation: stop after this many epochs without a new best (0: never)
  /// Throws simmer::Error naming the option ("adam.lr" ...) and value when invalid.
  void validate() const;
};

template <class S>
struct BasicAdamState {
  VectorOf<S> m;           ///< first moment
  VectorOf<S> v;           ///< second moment
  std::int64_t t = 0;      ///< updates taken
  std::int64_t epoch = 0;  ///< epochs completed
  VectorOf<S> previous;    ///< the iterate before the last update (retrofit velocity)

  /// Zero moments for `n` parameters.
  static BasicAdamState zeros(Index n);
};
using AdamState = BasicAdamState<double>;

/// One Adam update of x given ∇L(x); keeps the pre-update x in state.previous.
/// Keras: α_t = lr √(1-β2^t) / (1-β1^t); x ← x - α_t m / (√v + ε).
/// In S; the step size α_t is computed in float64 and rounded once.
template <class S>
void adam_update(const AdamOptions& opt, BasicAdamState<S>& state, VectorOf<S>& x, const VectorOf<S>& grad);

/// Called after every epoch with the epoch (1-based) and the training loss of its last update's
/// batch(es) (mean over the epoch's batches for mini-batching). Returns true to stop training
/// after this epoch (ensmallen's callbacks' convention: early stopping is a callback).
using EpochCallback = std::function<bool(std::int64_t epoch, double train_loss)>;

/// Train `objective`'s network from its current parameters for opt.epochs - state.epoch epochs
/// (so a restored state continues), or until `on_epoch` returns true (state.epoch then says how
/// many ran). Mini-batches are drawn by shuffling with `rng` each epoch.
template <class S>
void train_adam(const AdamOptions& opt, BasicAdamState<S>& state, BasicNetworkObjective<S>& objective, Rng& rng,
                const EpochCallback& on_epoch = {});

}  // namespace simmer::train
