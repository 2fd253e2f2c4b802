#pragma once
/// \file
/// Replica exchange between temperatures (Sugita & Okamoto 1999; docs/MIXING.md): K replicas at
/// T_1 < ... < T_K; every exchange, neighbouring rungs of one parity propose to swap their
/// temperatures, accepted with min(1, exp((1/T_i − 1/T_j)(U_i − U_j))) on the potential
/// U = L + prior energy. The decisions come from one named stream (RngPurpose::exchange) that
/// every rank draws alike, so they do not depend on the rank count; a swap rescales the swapped
/// replicas' velocities and thermostat velocities by sqrt(T_new / T_old). No MPI here.

#include <cstdint>
#include <vector>

#include "simmer/core/rng.hpp"
#include "simmer/core/visit.hpp"
#include "simmer/train/nhc.hpp"

namespace simmer::train {

/// The Metropolis probability of swapping the temperatures of two replicas: replica a at T_a
/// with potential U_a, replica b at T_b with U_b.
double exchange_probability(double temperature_a, double potential_a, double temperature_b, double potential_b);

/// What one exchange round decided, for each neighbouring rung pair (k, k+1) it proposed.
struct ExchangeRound {
  std::vector<int> lower_rungs;  ///< k of every proposed pair (k, k+1)
  std::vector<bool> accepted;    ///< per proposed pair
  std::vector<double> probability;
};

/// The ladder's bookkeeping: which replica sits at which rung, the acceptance counts per
/// neighbouring pair and each replica's round trips (coldest → hottest → coldest).
class ReplicaLadder {
 public:
  /// `rungs` temperatures ascending (K ≥ 2), replica r starting at rung r.
  explicit ReplicaLadder(std::vector<double> temperatures);

  /// One exchange round (the `round`-th; pairs (0,1),(2,3),... on even rounds, (1,2),(3,4),...
  /// on odd ones) given every replica's current potential U_r (by replica index). Draws one
  /// uniform per proposed pair from `stream` in pair order, whether or not it is needed, so the
  /// stream's position depends only on the round count. Updates the rung of each replica.
  ExchangeRound exchange(std::int64_t round, const std::vector<double>& potential_by_replica, Rng& stream);

  [[nodiscard]] int rungs() const { return static_cast<int>(temperatures_.size()); }
  [[nodiscard]] double temperature(int rung) const { return temperatures_.at(static_cast<std::size_t>(rung)); }
  [[nodiscard]] int rung_of(int replica) const { return rung_of_.at(static_cast<std::size_t>(replica)); }
  [[nodiscard]] int replica_at(int rung) const { return replica_at_.at(static_cast<std::size_t>(rung)); }
  /// Proposed and accepted swaps of the pair (k, k+1), k = 0..K−2.
  [[nodiscard]] const std::vector<std::int64_t>& proposed() const { return proposed_; }
  [[nodiscard]] const std::vector<std::int64_t>& accepted() const { return accepted_; }
  /// Completed round trips of each replica: coldest rung → hottest → coldest counts one.
  [[nodiscard]] const std::vector<std::int64_t>& round_trips() const { return round_trips_; }

  /// Checkpoint fields (core/visit.hpp): the temperatures and sizes are the constructor's.
  template <class Ar>
  void fields(Ar& ar) {
    ar(fixed(rung_of_), fixed(replica_at_), fixed(proposed_), fixed(accepted_), fixed(round_trips_),
       fixed(heading_up_));
  }

 private:
  std::vector<double> temperatures_;
  std::vector<int> rung_of_, replica_at_;
  std::vector<std::int64_t> proposed_, accepted_, round_trips_;
  std::vector<int> heading_up_;  ///< per replica: 1 after it touched the coldest rung, 2 after the hottest since
};

/// After a replica moves from T_old to T_new: its velocities and thermostat velocities scaled by
/// sqrt(T_new / T_old) (each keeps its Maxwell–Boltzmann law at the new T; the chain positions
/// s_k are kept), and the kinetic sum with them. A Nosé–Hoover–Langevin variable ξ keeps its
/// value (`thermostat_velocities` false): its law N(0, 1/(N_g τ²)) does not depend on T.
template <class S>
void rescale_for_temperature(BasicPhaseState<S>& phase, double old_temperature, double new_temperature,
                             bool thermostat_velocities = true);

}  // namespace simmer::train
