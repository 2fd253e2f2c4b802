#include "simmer/train/exchange.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::train {

double exchange_probability(double temperature_a, double potential_a, double temperature_b, double potential_b) {
  const double log_ratio = (1.0 / temperature_a - 1.0 / temperature_b) * (potential_a - potential_b);
  if (std::isnan(log_ratio)) return 0.0;  // a diverged replica never swaps
  return log_ratio >= 0.0 ? 1.0 : std::exp(log_ratio);
}

ReplicaLadder::ReplicaLadder(std::vector<double> temperatures) : temperatures_(std::move(temperatures)) {
  const std::size_t k = temperatures_.size();
  if (k < 2) throw Error("replica exchange needs at least two rungs (got " + std::to_string(k) + ")");
  for (std::size_t i = 0; i < k; ++i) {
    if (!(temperatures_[i] > 0.0) || !std::isfinite(temperatures_[i]) ||
        (i > 0 && temperatures_[i] <= temperatures_[i - 1])) {
      throw Error("replica exchange: the temperatures must be finite, > 0 and ascending");
    }
    rung_of_.push_back(static_cast<int>(i));
    replica_at_.push_back(static_cast<int>(i));
  }
  proposed_.assign(k - 1, 0);
  accepted_.assign(k - 1, 0);
  round_trips_.assign(k, 0);
  heading_up_.assign(k, 0);
  heading_up_[0] = 1;  // replica 0 starts at the coldest rung
}

ExchangeRound ReplicaLadder::exchange(std::int64_t round, const std::vector<double>& potential_by_replica,
                                      Rng& stream) {
  const int k = rungs();
  if (static_cast<int>(potential_by_replica.size()) != k) {
    throw Error("replica exchange: " + std::to_string(potential_by_replica.size()) + " potentials for " +
                std::to_string(k) + " replicas");
  }
  ExchangeRound out;
  for (int low = static_cast<int>(round % 2); low + 1 < k; low += 2) {
    const int a = replica_at_[static_cast<std::size_t>(low)];
    const int b = replica_at_[static_cast<std::size_t>(low + 1)];
    const double p = exchange_probability(temperature(low), potential_by_replica[static_cast<std::size_t>(a)],
                                          temperature(low + 1), potential_by_replica[static_cast<std::size_t>(b)]);
    const bool accept = stream.uniform() < p;
    ++proposed_[static_cast<std::size_t>(low)];
    if (accept) {
      ++accepted_[static_cast<std::size_t>(low)];
      std::swap(replica_at_[static_cast<std::size_t>(low)], replica_at_[static_cast<std::size_t>(low + 1)]);
      rung_of_[static_cast<std::size_t>(a)] = low + 1;
      rung_of_[static_cast<std::size_t>(b)] = low;
    }
    out.lower_rungs.push_back(low);
    out.accepted.push_back(accept);
    out.probability.push_back(p);
  }
  // Round trips: a replica that touched the coldest rung, then the hottest, then the coldest again.
  for (int r = 0; r < k; ++r) {
    int& state = heading_up_[static_cast<std::size_t>(r)];
    const int rung = rung_of_[static_cast<std::size_t>(r)];
    if (rung == k - 1 && state == 1) state = 2;
    if (rung == 0) {
      if (state == 2) ++round_trips_[static_cast<std::size_t>(r)];
      state = 1;
    }
  }
  return out;
}

template <class S>
void rescale_for_temperature(BasicPhaseState<S>& phase, double old_temperature, double new_temperature,
                             bool thermostat_velocities) {
  const double factor = std::sqrt(new_temperature / old_temperature);
  phase.v *= static_cast<S>(factor);
  if (thermostat_velocities) phase.chain.w *= factor;
  phase.kinetic *= new_temperature / old_temperature;
}

template void rescale_for_temperature(BasicPhaseState<double>&, double, double, bool);
template void rescale_for_temperature(BasicPhaseState<float>&, double, double, bool);

}  // namespace simmer::train
