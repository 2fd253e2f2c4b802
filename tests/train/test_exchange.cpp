// Replica exchange (train/exchange.hpp): each rung samples its own temperature (detailed
// balance), acceptance rates match the exact ones, the decisions depend on the round count only.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "simmer/train/exchange.hpp"
#include "simmer/train/nhc.hpp"

using namespace simmer;
using namespace simmer::train;

namespace {

/// U = |x|² / 2 in D dimensions: at T, each x_i ~ N(0, T) and U ~ T/2 χ²_D.
class Harmonic final : public Objective {
 public:
  explicit Harmonic(Index n) : n_(n) {}
  [[nodiscard]] Index parameter_count() const override { return n_; }
  double evaluate(const Vector& x) override { return 0.5 * x.squaredNorm(); }
  double evaluate_with_gradient(const Vector& x, Vector& g) override {
    g = x;
    return evaluate(x);
  }

 private:
  Index n_;
};

}  // namespace

TEST_CASE("exchange: the Metropolis probability of a swap", "[exchange]") {
  CHECK(exchange_probability(1.0, 5.0, 2.0, 3.0) == 1.0);  // the cold replica has the higher energy: always
  CHECK(exchange_probability(1.0, 3.0, 2.0, 5.0) == Approx(std::exp(-1.0)));
  CHECK(exchange_probability(1.0, std::nan(""), 2.0, 5.0) == 0.0);
}

TEST_CASE("exchange: every rung samples its own temperature, acceptance as the exact law predicts",
          "[exchange][physics]") {
  const std::vector<double> T = {0.5, 1.0, 2.0, 4.0};
  const int K = 4;
  const Index D = 4;
  Harmonic f(D);
  NhcOptions opt;
  opt.time_step = 0.05;
  opt.thermostat = Thermostat::langevin;
  opt.friction = 0.05;  // slow: a swapped replica's velocities would stay at its old T for ~20 time units
  const NoseHooverChain nhc(opt, D);
  ReplicaLadder ladder(T);
  Rng decisions = Rng::named(7, 0, RngPurpose::exchange);
  std::vector<Rng> noise;
  std::vector<Vector> x;
  std::vector<PhaseState> phase;
  for (int r = 0; r < K; ++r) {
    noise.push_back(Rng::named(7, static_cast<std::uint64_t>(r), RngPurpose::thermostat));
    x.push_back(Vector::Zero(D));
    phase.push_back(nhc.thermal_start(T[static_cast<std::size_t>(r)], noise.back()));
  }
  Vector g(D);
  std::vector<double> xx(K, 0.0), kinetic(K, 0.0);
  std::int64_t samples = 0, round = 0;
  const int every = 10, steps = 600000, burn = 20000;
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < K; ++r) {
      nhc.step(x[static_cast<std::size_t>(r)], phase[static_cast<std::size_t>(r)],
               T[static_cast<std::size_t>(ladder.rung_of(r))], f, g, &noise[static_cast<std::size_t>(r)]);
    }
    if ((s + 1) % every == 0) {
      std::vector<double> u(K);
      for (int r = 0; r < K; ++r) u[static_cast<std::size_t>(r)] = f.evaluate(x[static_cast<std::size_t>(r)]);
      std::vector<int> before(K);
      for (int r = 0; r < K; ++r) before[static_cast<std::size_t>(r)] = ladder.rung_of(r);
      ladder.exchange(round++, u, decisions);
      for (int r = 0; r < K; ++r) {
        const int was = before[static_cast<std::size_t>(r)], now = ladder.rung_of(r);
        if (was != now) {
          rescale_for_temperature(phase[static_cast<std::size_t>(r)], T[static_cast<std::size_t>(was)],
                                  T[static_cast<std::size_t>(now)]);
        }
      }
    }
    if (s >= burn) {  // members collected per temperature, not per replica
      for (int k = 0; k < K; ++k) {
        const int r = ladder.replica_at(k);
        xx[static_cast<std::size_t>(k)] += x[static_cast<std::size_t>(r)].squaredNorm() / static_cast<double>(D);
        kinetic[static_cast<std::size_t>(k)] += nhc.kinetic_temperature(phase[static_cast<std::size_t>(r)]);
      }
      ++samples;
    }
  }
  // The exact acceptance of each pair: E[min(1, exp((1/T_a − 1/T_b)(U_a − U_b)))] with U ~ T/2 χ²_D
  // drawn independently (the stationary law of the extended ensemble is the product).
  Rng exact(99);
  for (int k = 0; k + 1 < K; ++k) {
    double sum = 0.0;
    const int draws = 400000;
    for (int i = 0; i < draws; ++i) {
      double ua = 0.0, ub = 0.0;
      for (Index d = 0; d < D; ++d) {
        ua += 0.5 * T[static_cast<std::size_t>(k)] * std::pow(exact.normal(), 2);
        ub += 0.5 * T[static_cast<std::size_t>(k + 1)] * std::pow(exact.normal(), 2);
      }
      sum += exchange_probability(T[static_cast<std::size_t>(k)], ua, T[static_cast<std::size_t>(k + 1)], ub);
    }
    const double expected = sum / draws;
    const double measured = static_cast<double>(ladder.accepted()[static_cast<std::size_t>(k)]) /
                            static_cast<double>(ladder.proposed()[static_cast<std::size_t>(k)]);
    INFO("pair " << k << ": acceptance " << measured << " of " << ladder.proposed()[static_cast<std::size_t>(k)]
                 << " proposals, exact " << expected);
    CHECK(measured == Approx(expected).margin(0.02));
  }
  for (int k = 0; k < K; ++k) {
    const double variance = xx[static_cast<std::size_t>(k)] / static_cast<double>(samples);
    const double t_kin = kinetic[static_cast<std::size_t>(k)] / static_cast<double>(samples);
    INFO("rung " << k << " (T = " << T[static_cast<std::size_t>(k)] << "): <x^2> " << variance << ", T_kin " << t_kin);
    CHECK(variance == Approx(T[static_cast<std::size_t>(k)]).epsilon(0.05));
    CHECK(t_kin == Approx(T[static_cast<std::size_t>(k)]).epsilon(0.05));
  }
  std::int64_t trips = 0;
  for (const auto t : ladder.round_trips()) trips += t;
  INFO("round trips " << trips);
  CHECK(trips > 10);
}

TEST_CASE("exchange: the decisions depend on the round and the potentials only", "[exchange][determinism]") {
  const std::vector<double> T = {0.1, 0.2, 0.4};
  const std::vector<double> u = {1.0, 0.5, 2.0};
  ReplicaLadder a(T), b(T);
  Rng sa = Rng::named(3, 0, RngPurpose::exchange), sb = Rng::named(3, 0, RngPurpose::exchange);
  for (int round = 0; round < 100; ++round) {
    a.exchange(round, u, sa);
    b.exchange(round, u, sb);
  }
  for (int r = 0; r < 3; ++r) CHECK(a.rung_of(r) == b.rung_of(r));
  CHECK(a.accepted() == b.accepted());
  CHECK(a.proposed() == std::vector<std::int64_t>{50, 50});  // (0,1) on even rounds, (1,2) on odd
  CHECK_THROWS(ReplicaLadder({1.0}));
  CHECK_THROWS(ReplicaLadder({1.0, 0.5}));
  CHECK_THROWS(a.exchange(0, {1.0, 2.0}, sa));
}
