// Replica exchange between parallel rungs (run_session.hpp, Run::exchange; docs/MIXING.md): the
// decisions are run::ReplicaSets's; here the losses reach every rank and the configurations of
// accepted pairs move between the ranks that hold them.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "run_session.hpp"
#include "simmer/core/bytes.hpp"
#include "simmer/core/error.hpp"

namespace simmer::parallel::detail {

namespace layout = run::layout;

void Run::exchange() {
  const double t0 = run::cpu_seconds();
  // Every trajectory's loss at its current position, on every rank: each group's leader gives
  // its chains' (every rank of a group evaluates, the evaluation being collective there), the
  // others 0, so the sum is exact.
  const auto C = static_cast<std::size_t>(p_.run.trajectories);
  std::vector<double> loss(C, 0.0);
  for (auto& ch : chains_) {
    const double l = ch->exchange_loss();
    if (leader_) loss[static_cast<std::size_t>(ch->index())] = l;
  }
  MPI_Allreduce(MPI_IN_PLACE, loss.data(), static_cast<int>(C), MPI_DOUBLE, MPI_SUM, comm_);
  const std::vector<run::Swap> swaps = replicas_.round(step_, loss);
  if (swaps.empty()) {
    comm_io_seconds_ += run::cpu_seconds() - t0;
    return;
  }
  // Trajectory i is on group i mod groups; rank j of one group trades with rank j of the other.
  const int k = static_cast<int>(p_.run.ranks_per_trajectory);
  const int groups = size_ / k;
  const int group = rank_ / k;
  const auto group_of = [&](std::int64_t i) { return static_cast<int>(i % groups); };
  std::map<std::int64_t, run::Chain*> local;
  for (auto& ch : chains_) local[ch->index()] = ch.get();
  // Every configuration this rank's swaps need, saved before any is replaced.
  std::map<std::int64_t, std::vector<unsigned char>> mine;
  for (const auto& s : swaps) {
    for (const std::int64_t i : {s.a, s.b}) {
      if (group_of(i) != group) continue;
      ByteWriter w;
      local.at(i)->save_configuration(w);
      mine[i] = w.bytes();
    }
  }
  // Sends and receives in the swaps' order (MPI keeps the order between two ranks on one tag).
  std::vector<MPI_Request> requests;
  std::map<std::int64_t, std::vector<unsigned char>> theirs;  // by the trajectory that receives it
  const int kTag = 7301;
  for (const auto& s : swaps) {
    const std::int64_t pair[2][2] = {{s.a, s.b}, {s.b, s.a}};  // {receiver, sender}
    for (const auto& [to, from] : pair) {
      const bool hold_to = group_of(to) == group, hold_from = group_of(from) == group;
      if (hold_to && hold_from) {
        theirs[to] = mine.at(from);
      } else if (hold_to) {
        auto& buffer = theirs[to];
        buffer.resize(mine.at(to).size());  // every configuration of a run has one size
        requests.emplace_back();
        MPI_Irecv(buffer.data(), static_cast<int>(buffer.size()), MPI_BYTE, group_of(from) * k + rank_ % k, kTag, comm_,
                  &requests.back());
      } else if (hold_from) {
        const auto& bytes = mine.at(from);
        requests.emplace_back();
        MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, group_of(to) * k + rank_ % k, kTag, comm_,
                  &requests.back());
      }
    }
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  for (const auto& s : swaps) {
    for (const auto& [to, from, t_to, t_from] : {std::make_tuple(s.a, s.b, s.temperature_a, s.temperature_b),
                                                 std::make_tuple(s.b, s.a, s.temperature_b, s.temperature_a)}) {
      if (group_of(to) != group) continue;
      const auto& bytes = theirs.at(to);
      ByteReader r(bytes.data(), bytes.size(), "the configuration of trajectory " + std::to_string(from));
      local.at(to)->load_configuration(r, t_from, t_to);
    }
  }
  comm_io_seconds_ += run::cpu_seconds() - t0;
}

void Run::write_exchange() {
  auto& f = archive_->file();
  const std::vector<std::int64_t> proposed = replicas_.proposed(), accepted = replicas_.accepted();
  const auto pairs = static_cast<std::int64_t>(proposed.size());
  std::vector<double> rate;
  for (std::size_t k = 0; k < proposed.size(); ++k) {
    rate.push_back(proposed[k] > 0 ? static_cast<double>(accepted[k]) / static_cast<double>(proposed[k])
                                   : std::nan(""));
  }
  f.put(layout::kExchangeProposed, proposed, {pairs});
  f.put(layout::kExchangeAccepted, accepted, {pairs});
  f.put(layout::kExchangeAcceptance, rate, {pairs});
  f.attribute(
      layout::kExchangeAcceptance, layout::kMeaning,
      std::string("accepted / proposed swaps of rungs (k, k + 1), k = 0..K-2, over every set of K trajectories"));
  const std::vector<std::int64_t> trips = replicas_.round_trips();
  f.put(layout::kRoundTrips, trips, {p_.run.trajectories});
  f.attribute(layout::kRoundTrips, layout::kMeaning,
              std::string("per configuration (the one that started at trajectory i): its trips from the coldest rung "
                          "to the hottest and back"));
  // Where each configuration is, as the states carried it; the bookkeeping must agree, or a swap
  // moved a label without its state (or a state without its label).
  std::vector<std::int64_t> held(static_cast<std::size_t>(p_.run.trajectories), 0);
  for (const auto& ch : chains_) {
    if (leader_) held[static_cast<std::size_t>(ch->index())] = ch->configuration();
  }
  MPI_Allreduce(MPI_IN_PLACE, held.data(), static_cast<int>(held.size()), MPI_INT64_T, MPI_SUM, comm_);
  const std::vector<std::int64_t> position = replicas_.position_of_configuration();
  for (std::size_t c = 0; c < position.size(); ++c) {
    if (held[static_cast<std::size_t>(position[c])] != static_cast<std::int64_t>(c)) {
      throw Error("internal: replica exchange's bookkeeping puts configuration " + std::to_string(c) +
                  " at trajectory " + std::to_string(position[c]) + ", which holds configuration " +
                  std::to_string(held[static_cast<std::size_t>(position[c])]));
    }
  }
  f.put(layout::kConfigurationHeld, held, {p_.run.trajectories});
  f.attribute(layout::kConfigurationHeld, layout::kMeaning,
              std::string("per trajectory: the configuration it holds at the end, by the trajectory that configuration "
                          "started at (carried with the state through every swap)"));
  if (replicas_.rounds() > 0) {
    // Every round's energies and swaps (the same on every rank: each rank ran every decision).
    const std::vector<std::int64_t> dims{replicas_.rounds(), p_.run.trajectories};
    f.put(layout::kExchangeLoss, replicas_.round_losses(), dims);
    f.attribute(
        layout::kExchangeLoss, layout::kMeaning,
        std::string("per exchange round (after exchange_every, 2 exchange_every, ... steps) and trajectory: its "
                    "loss U (loss units) that the round's decisions used; rungs (k, k + 1) of a set swap with "
                    "probability min(1, exp((1/T_k - 1/T_k+1)(U_k - U_k+1)))"));
    const std::vector<std::int8_t>& swapped = replicas_.round_swaps();
    f.put(layout::kExchangeSwapped, std::vector<std::int64_t>(swapped.begin(), swapped.end()), dims);
    f.attribute(layout::kExchangeSwapped, layout::kMeaning,
                std::string("per exchange round and trajectory: 1 where its configuration was swapped with a "
                            "neighbouring rung's in that round"));
  }
  f.attribute(layout::kLadder, layout::kExchangeEvery, p_.ladder.exchange_every);
  f.attribute(layout::kLadder, layout::kExchangeRounds, replicas_.rounds());
  if (rank_ != 0) return;
  std::string rates;
  for (std::size_t k = 0; k < rate.size(); ++k) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%zu-%zu %.3f", k > 0 ? ", " : "", k, k + 1, rate[k]);
    rates += buf;
  }
  std::int64_t total = 0;
  for (const auto t : trips) total += t;
  std::printf(
      "replica exchange: %lld rounds every %lld steps; acceptance by rung pair %s; %lld round trips "
      "(coldest -> hottest -> coldest) by %lld configurations (/ladder/exchange_acceptance, round_trips)\n",
      static_cast<long long>(replicas_.rounds()), static_cast<long long>(p_.ladder.exchange_every), rates.c_str(),
      static_cast<long long>(total), static_cast<long long>(trips.size()));
  std::fflush(stdout);
}

}  // namespace simmer::parallel::detail
