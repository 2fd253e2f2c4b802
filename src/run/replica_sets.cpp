#include "simmer/run/replica_sets.hpp"

#include <cstdint>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::run {

ReplicaSets::ReplicaSets(const Problem& p) {
  if (!p.parallel_rungs() || p.ladder.exchange_every <= 0) return;
  every_ = p.ladder.exchange_every;
  total_steps_ = p.total_steps();
  rungs_ = p.stages();
  if (p.run.trajectories % rungs_ != 0) {
    throw Error("internal: " + std::to_string(p.run.trajectories) + " trajectories are not sets of " +
                std::to_string(rungs_) + " rungs");
  }
  for (std::int64_t g = 0; g < p.run.trajectories / rungs_; ++g) {
    ladders_.emplace_back(p.ladder.rungs);
    streams_.push_back(Rng::named(p.run.seed, static_cast<std::uint64_t>(g), RngPurpose::exchange));
  }
}

std::vector<Swap> ReplicaSets::round(std::int64_t steps, const std::vector<double>& loss_by_trajectory) {
  if (static_cast<std::int64_t>(loss_by_trajectory.size()) != static_cast<std::int64_t>(ladders_.size()) * rungs_) {
    throw Error("internal: replica exchange with " + std::to_string(loss_by_trajectory.size()) + " losses");
  }
  // Round n (1-based) after n k steps: even n proposes the pairs (0,1),(2,3),..., odd n the others.
  const std::int64_t n = steps / every_;
  std::vector<Swap> swaps;
  round_losses_.insert(round_losses_.end(), loss_by_trajectory.begin(), loss_by_trajectory.end());
  const std::size_t row = round_swaps_.size();
  round_swaps_.resize(row + loss_by_trajectory.size(), 0);
  for (std::size_t g = 0; g < ladders_.size(); ++g) {
    train::ReplicaLadder& ladder = ladders_[g];
    const auto first = static_cast<std::int64_t>(g) * rungs_;
    // The potential of replica r is the loss of the trajectory at its rung. The prior's energy
    // T Σ x²/2σ² is left out: it is T times a function of x, so it cancels from the ratio.
    std::vector<double> by_replica(static_cast<std::size_t>(rungs_));
    for (int r = 0; r < ladder.rungs(); ++r) {
      by_replica[static_cast<std::size_t>(r)] = loss_by_trajectory[static_cast<std::size_t>(first + ladder.rung_of(r))];
    }
    const train::ExchangeRound out = ladder.exchange(n, by_replica, streams_[g]);
    for (std::size_t i = 0; i < out.accepted.size(); ++i) {
      if (!out.accepted[i]) continue;
      const int low = out.lower_rungs[i];
      swaps.push_back({first + low, first + low + 1, ladder.temperature(low), ladder.temperature(low + 1)});
      round_swaps_[row + static_cast<std::size_t>(first + low)] = 1;
      round_swaps_[row + static_cast<std::size_t>(first + low + 1)] = 1;
    }
  }
  rounds_ += 1;
  return swaps;
}

std::vector<std::int64_t> ReplicaSets::summed(PairCounts counts) const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(rungs_ > 0 ? rungs_ - 1 : 0), 0);
  for (const auto& l : ladders_) {
    for (std::size_t k = 0; k < out.size(); ++k) out[k] += (l.*counts)()[k];
  }
  return out;
}

std::vector<std::int64_t> ReplicaSets::round_trips() const {
  std::vector<std::int64_t> out;
  for (const auto& l : ladders_) out.insert(out.end(), l.round_trips().begin(), l.round_trips().end());
  return out;
}

std::vector<std::int64_t> ReplicaSets::position_of_configuration() const {
  std::vector<std::int64_t> out;
  for (std::size_t g = 0; g < ladders_.size(); ++g) {
    for (int r = 0; r < ladders_[g].rungs(); ++r)
      out.push_back(static_cast<std::int64_t>(g) * rungs_ + ladders_[g].rung_of(r));
  }
  return out;
}

}  // namespace simmer::run
