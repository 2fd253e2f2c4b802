// The Nosé–Hoover–Langevin thermostats (NhcOptions::thermostat, issue 37): exp(−U/T) on a
// harmonic and the quartic chain (T_conf and T_kin within 2 % at a small step), and a stiff
// harmonic pair, on which one global deterministic chain is not ergodic and the massive
// thermostat is.
#include <catch2/catch.hpp>

#include <cmath>

#include "quartic_chain.hpp"
#include "simmer/train/configurational.hpp"
#include "simmer/train/nhc.hpp"

using namespace simmer;
using namespace simmer::train;
using simmer::test::QuarticChain;

namespace {

using simmer::test::Harmonic;

/// Per coordinate of two decoupled oscillators: ⟨k_i x_i²⟩ / T and ⟨v_i²⟩ / T.
struct PairTemperatures {
  double position[2] = {0, 0}, velocity[2] = {0, 0};
  [[nodiscard]] double worst() const {
    double w = 0;
    for (int i = 0; i < 2; ++i) w = std::max({w, std::abs(position[i] - 1), std::abs(velocity[i] - 1)});
    return w;
  }
};

PairTemperatures pair(Thermostat thermostat, double k2, double T, double h, int steps, std::uint64_t seed) {
  Vector k(2);
  k << 1.0, k2;
  Harmonic f(k, 0.0);
  NhcOptions opt;
  opt.time_step = h;
  opt.thermostat = thermostat;
  opt.thermostat_steps = 50;
  const NoseHooverChain nhc(opt, 2);
  Rng rng(seed);
  Vector x(2), g(2);
  x << 1.0, 0.0;  // the energy in the soft oscillator, the stiff one nearly at rest
  PhaseState p = nhc.rest_start();
  p.v(1) = 1e-3;
  p.kinetic = nhc.twice_kinetic(p.v);
  PairTemperatures out;
  for (int s = 0; s < steps; ++s) {
    nhc.step(x, p, T, f, g, &rng);
    for (int i = 0; i < 2; ++i) {
      out.position[i] += k(i) * x(i) * x(i);
      out.velocity[i] += static_cast<double>(p.v(i) * p.v(i));
    }
  }
  for (int i = 0; i < 2; ++i) {
    out.position[i] /= steps * T;
    out.velocity[i] /= steps * T;
  }
  return out;
}

}  // namespace

TEST_CASE("massive NHL: T_conf and T_kin within 2 percent on a harmonic and the quartic chain", "[nhl]") {
  // 4000 time units at h = 0.01, a sample every 10 steps. Measured (seed 7): harmonic 0.9946 and
  // 0.9924, quartic 0.9957 and 0.9980 (with Rng::normal's draws for ξ: 1.0015, 0.9979, 1.0074,
  // 0.9986). One global such variable gave T_conf/T 0.948 and 0.969
  // here (not offered: NhcOptions::thermostat_steps).
  const auto [a, b] = simmer::test::small_step_reference(Thermostat::massive_nose_hoover_langevin);
  INFO("harmonic T_conf/T " << a.configurational << " T_kin/T " << a.kinetic << "; quartic " << b.configurational << " "
                            << b.kinetic);
  CHECK(a.configurational == Approx(1.0).epsilon(0.02));
  CHECK(a.kinetic == Approx(1.0).epsilon(0.02));
  CHECK(b.configurational == Approx(1.0).epsilon(0.02));
  CHECK(b.kinetic == Approx(1.0).epsilon(0.02));
}

TEST_CASE("massive NHL: a stiff harmonic pair equilibrates where one global chain does not", "[nhl]") {
  // k = 1 and 100, the energy in the soft oscillator at the start, 10 000 time units. One global
  // Nosé–Hoover chain moves energy between the two only through its one friction: measured ⟨k x²⟩/T
  // 1.065 and 0.916, ⟨v²⟩/T 1.088 and 0.919 (still 4 % off after 40 000 time units). The massive
  // thermostat's ratios over the same time scatter by ±2.6 % from seed to seed (seeds 1–12,
  // sampling noise around 1), so four seeds are pooled: their mean is within 1.2 % (seeds 1–4),
  // 0.25 % (5–8) and 0.6 % (9–12).
  const double T = 0.5, h = 0.01;
  const PairTemperatures chain = pair(Thermostat::nose_hoover_chain, 100.0, T, h, 1000000, 5);
  INFO("global chain: worst |ratio - 1| " << chain.worst());
  CHECK(chain.worst() > 0.05);
  PairTemperatures pooled;
  for (const std::uint64_t seed : {5, 6, 7, 8}) {
    const PairTemperatures one = pair(Thermostat::massive_nose_hoover_langevin, 100.0, T, h, 1000000, seed);
    for (int i = 0; i < 2; ++i) {
      pooled.position[i] += one.position[i] / 4;
      pooled.velocity[i] += one.velocity[i] / 4;
    }
  }
  INFO("massive, seeds 5-8 pooled: position " << pooled.position[0] << " " << pooled.position[1] << ", velocity "
                                              << pooled.velocity[0] << " " << pooled.velocity[1]);
  CHECK(pooled.worst() < 0.02);
}

TEST_CASE("massive NHL: the same bits from the same seed, and no step at T = 0", "[nhl]") {
  QuarticChain f(20);
  NhcOptions opt;
  opt.time_step = 0.02;
  opt.thermostat = Thermostat::massive_nose_hoover_langevin;
  const NoseHooverChain nhc(opt, 20);
  const auto run = [&](std::uint64_t seed) {
    Rng rng(seed);
    Vector x = Vector::Constant(20, 0.3), g(20);
    PhaseState p = nhc.thermal_start(0.5, rng);
    for (int s = 0; s < 500; ++s) nhc.step(x, p, 0.5, f, g, &rng);
    return x;
  };
  CHECK(run(3) == run(3));
  CHECK(run(3) != run(4));
  Rng rng(1);
  Vector x = Vector::Zero(20), g(20);
  PhaseState p = nhc.rest_start();
  CHECK(p.chain.w.size() == 20);
  CHECK_THROWS_WITH(nhc.step(x, p, 0.0, f, g, &rng), Catch::Contains("temperature > 0"));
  CHECK_THROWS_WITH(nhc.step(x, p, 0.5, f, g, nullptr), Catch::Contains("random stream"));
}

namespace {

/// ⟨k x²⟩/T of the stiff direction of the harmonic pair k = 1, 100 (ω = 10) at h = 0.1, half its
/// stability limit 2/ω, where (hω/2)² = 0.25: 200 000 steps after 10 000, from a thermal start.
double stiff_position_ratio(Thermostat thermostat, Splitting splitting) {
  Vector k(2);
  k << 1.0, 100.0;
  Harmonic f(k, 0.0);
  NhcOptions opt;
  opt.time_step = 0.1;
  opt.thermostat = thermostat;
  opt.splitting = splitting;
  const NoseHooverChain nhc(opt, 2);
  const double T = 0.5;
  Rng rng(11);
  Vector x(2), g(2);
  x << 0.5, 0.05;
  PhaseState p = nhc.thermal_start(T, rng);
  const int burn = 10000, steps = 200000;
  double sum = 0;
  for (int s = 0; s < burn + steps; ++s) {
    nhc.step(x, p, T, f, g, &rng);
    if (s >= burn) sum += k(1) * x(1) * x(1);
  }
  return sum / (steps * T);
}

}  // namespace

TEST_CASE("splitting: baoab samples a stiff direction exactly at half its stability limit", "[nhl]") {
  // The massive thermostat's midpoint order (A O B O A) runs the stiff direction's positions cold
  // by 1 − (hω/2)² = 0.75; baoab (A O A B) samples them exactly, as Leimkuhler & Matthews's BAOAB
  // does for Langevin. Langevin's own midpoint order (A B O B A) is within 1 % here (0.993).
  const double massive_midpoint = stiff_position_ratio(Thermostat::massive_nose_hoover_langevin, Splitting::midpoint);
  const double massive_baoab = stiff_position_ratio(Thermostat::massive_nose_hoover_langevin, Splitting::baoab);
  const double langevin_baoab = stiff_position_ratio(Thermostat::langevin, Splitting::baoab);
  const double langevin_midpoint = stiff_position_ratio(Thermostat::langevin, Splitting::midpoint);
  INFO("<k x^2>/T: massive midpoint " << massive_midpoint << ", massive baoab " << massive_baoab << ", langevin baoab "
                                      << langevin_baoab << ", langevin midpoint " << langevin_midpoint);
  CHECK(massive_midpoint == Approx(0.75).epsilon(0.04));
  CHECK(massive_baoab == Approx(1.0).epsilon(0.03));
  CHECK(langevin_baoab == Approx(1.0).epsilon(0.03));
  CHECK(langevin_midpoint == Approx(1.0).epsilon(0.01));
}
