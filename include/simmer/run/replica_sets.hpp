#pragma once
/// \file
/// Replica exchange in a run with parallel rungs (simmer.ladder_mode = parallel,
/// simmer.exchange_every = k; docs/MIXING.md): trajectories i = gK, ..., gK + K − 1 form set g, one
/// per rung, and every k simmering steps each set runs one train::ReplicaLadder round on its
/// trajectories' losses. An accepted pair swaps *configurations* (parameters, velocities and
/// thermostat state, rescaled to the new temperature), so trajectory i stays at rung i mod K and
/// its members stay at one temperature. Each set's decisions come from its own named stream
/// (seed, set, RngPurpose::exchange): the same on every rank, whatever the rank count. No MPI
/// here: parallel/driver moves the configurations.

#include <cstdint>
#include <vector>

#include "simmer/core/rng.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/train/exchange.hpp"

namespace simmer::run {

/// One accepted swap: trajectories a (at T_a) and b (at T_b = the next rung up) exchange
/// configurations.
struct Swap {
  std::int64_t a = 0, b = 0;
  double temperature_a = 0.0, temperature_b = 0.0;
};

class ReplicaSets {
 public:
  /// The sets of `p` (none unless its rungs run in parallel with exchange_every > 0).
  explicit ReplicaSets(const Problem& p);

  [[nodiscard]] bool enabled() const { return every_ > 0; }
  /// Whether a round follows simmering step count `steps` (steps completed, > 0, < the run's).
  [[nodiscard]] bool due(std::int64_t steps) const {
    return every_ > 0 && steps > 0 && steps % every_ == 0 && steps < total_steps_;
  }
  /// The round after `steps` steps, given every trajectory's loss L (by trajectory index; NaN:
  /// stopped, never swapped): the accepted swaps, in set and pair order.
  std::vector<Swap> round(std::int64_t steps, const std::vector<double>& loss_by_trajectory);

  /// Summed over the sets: proposed and accepted swaps of each rung pair (k, k + 1).
  [[nodiscard]] std::vector<std::int64_t> proposed() const { return summed(&train::ReplicaLadder::proposed); }
  [[nodiscard]] std::vector<std::int64_t> accepted() const { return summed(&train::ReplicaLadder::accepted); }
  /// Round trips (coldest → hottest → coldest) of the configuration that started at trajectory i.
  [[nodiscard]] std::vector<std::int64_t> round_trips() const;
  /// The trajectory whose configuration is now the one that started at trajectory i.
  [[nodiscard]] std::vector<std::int64_t> position_of_configuration() const;
  [[nodiscard]] std::int64_t rounds() const { return rounds_; }
  /// Every round's energies as the decisions saw them: rounds() × trajectories, row-major (each
  /// trajectory's loss; /ladder/exchange_loss), so the acceptances can be checked against the
  /// exact Metropolis probabilities.
  [[nodiscard]] const std::vector<double>& round_losses() const { return round_losses_; }
  /// rounds() × trajectories: 1 where the trajectory's configuration was swapped in that round
  /// (/ladder/exchange_swapped).
  [[nodiscard]] const std::vector<std::int8_t>& round_swaps() const { return round_swaps_; }

  /// Checkpoint fields (core/visit.hpp): every set's ladder and stream, the rounds run and their log.
  template <class Ar>
  void fields(Ar& ar) {
    ar(fixed(ladders_), fixed(streams_), rounds_, round_losses_, round_swaps_);
  }

 private:
  using PairCounts = const std::vector<std::int64_t>& (train::ReplicaLadder::*)() const;
  /// A per-pair count of every set's ladder, summed over the sets.
  [[nodiscard]] std::vector<std::int64_t> summed(PairCounts counts) const;
  std::int64_t every_ = 0, total_steps_ = 0, rungs_ = 0;
  std::vector<train::ReplicaLadder> ladders_;  ///< per set
  std::vector<Rng> streams_;                   ///< per set
  std::int64_t rounds_ = 0;
  std::vector<double> round_losses_;
  std::vector<std::int8_t> round_swaps_;
};

}  // namespace simmer::run
