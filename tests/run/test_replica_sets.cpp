// Replica exchange's bookkeeping in a run (run/replica_sets.hpp): sets of K trajectories, rounds
// on the schedule, decisions from each set's own stream, and the state through a checkpoint.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "simmer/core/visit.hpp"
#include "simmer/run/replica_sets.hpp"

using namespace simmer;

namespace {

run::Problem parallel_problem(std::int64_t trajectories, std::int64_t every) {
  run::Problem p;
  p.ladder.rungs = {0.5, 1.0, 2.0};
  p.ladder.mode = run::LadderMode::parallel;
  p.ladder.exchange_every = every;
  p.run.trajectories = trajectories;
  p.run.steps = 100;
  p.run.seed = 11;
  return p;
}

}  // namespace

TEST_CASE("replica sets: rounds on the schedule, each set's decisions its own ladder's", "[exchange]") {
  const run::Problem p = parallel_problem(6, 10);
  run::ReplicaSets sets(p);
  REQUIRE(sets.enabled());
  CHECK_FALSE(sets.due(0));
  CHECK(sets.due(10));
  CHECK_FALSE(sets.due(15));
  CHECK(sets.due(90));
  CHECK_FALSE(sets.due(100));  // not after the last step
  CHECK_FALSE(run::ReplicaSets(parallel_problem(6, 0)).enabled());

  // The same rounds by hand: two ladders, each with its set's named stream.
  std::vector<train::ReplicaLadder> ladders{train::ReplicaLadder(p.ladder.rungs), train::ReplicaLadder(p.ladder.rungs)};
  std::vector<Rng> streams{Rng::named(11, 0, RngPurpose::exchange), Rng::named(11, 1, RngPurpose::exchange)};
  // Losses close enough that some swaps are accepted and some not.
  Rng noise(5);
  std::int64_t accepted = 0, rejected = 0;
  for (std::int64_t steps = 10; steps < 100; steps += 10) {
    std::vector<double> loss;
    for (int i = 0; i < 6; ++i) loss.push_back(1.0 + 0.8 * noise.uniform());
    const auto swaps = sets.round(steps, loss);
    std::vector<run::Swap> expected;
    for (std::size_t g = 0; g < 2; ++g) {
      std::vector<double> by_replica;
      for (int r = 0; r < 3; ++r) by_replica.push_back(loss[g * 3 + static_cast<std::size_t>(ladders[g].rung_of(r))]);
      const auto round = ladders[g].exchange(steps / 10, by_replica, streams[g]);
      for (std::size_t i = 0; i < round.accepted.size(); ++i) {
        const auto first = static_cast<std::int64_t>(g) * 3;
        if (round.accepted[i]) {
          expected.push_back({first + round.lower_rungs[i], first + round.lower_rungs[i] + 1,
                              p.ladder.rungs[static_cast<std::size_t>(round.lower_rungs[i])],
                              p.ladder.rungs[static_cast<std::size_t>(round.lower_rungs[i] + 1)]});
          ++accepted;
        } else {
          ++rejected;
        }
      }
    }
    REQUIRE(swaps.size() == expected.size());
    for (std::size_t i = 0; i < swaps.size(); ++i) {
      CHECK(swaps[i].a == expected[i].a);
      CHECK(swaps[i].b == expected[i].b);
      CHECK(swaps[i].b == swaps[i].a + 1);
      CHECK(swaps[i].temperature_a == expected[i].temperature_a);
      CHECK(swaps[i].temperature_b == expected[i].temperature_b);
    }
  }
  CHECK(accepted > 0);
  CHECK(rejected > 0);
  CHECK(sets.rounds() == 9);
  // 9 rounds: 4 even (pair 0-1) and 5 odd (pair 1-2), in each of the 2 sets.
  CHECK(sets.proposed() == std::vector<std::int64_t>{8, 10});
  CHECK(sets.accepted()[0] + sets.accepted()[1] == accepted);
  // A stopped trajectory (NaN loss) is never swapped.
  std::vector<double> loss(6, 1.0);
  loss[0] = loss[1] = loss[2] = std::nan("");
  for (const auto& s : sets.round(100 - 10, loss)) CHECK(s.a >= 3);
}

TEST_CASE("replica sets: the state through a checkpoint continues the same decisions", "[exchange]") {
  const run::Problem p = parallel_problem(9, 5);
  run::ReplicaSets a(p);
  Rng noise(9);
  const auto losses = [&] {
    std::vector<double> l;
    for (int i = 0; i < 9; ++i) l.push_back(2.0 + noise.uniform());
    return l;
  };
  for (std::int64_t s = 5; s <= 40; s += 5) a.round(s, losses());
  ByteWriter w;
  Saver save(w);
  save(a);
  run::ReplicaSets b(p);
  ByteReader r(w.bytes().data(), w.bytes().size(), "replica sets");
  Loader load(r);
  load(b);
  CHECK(b.rounds() == a.rounds());
  CHECK(b.position_of_configuration() == a.position_of_configuration());
  for (std::int64_t s = 45; s < 100; s += 5) {
    const auto l = losses();
    const auto x = a.round(s, l), y = b.round(s, l);
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i].a == y[i].a);
  }
  CHECK(a.accepted() == b.accepted());
  CHECK(a.round_trips() == b.round_trips());
}
