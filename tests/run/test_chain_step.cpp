// A trajectory's step and thermometers (run/chain_step.cpp, issue 29): simmer.time_step = auto
// estimates h where the probe says, fixes it for the window and resumes bit-identically; the
// configurational temperature only looks.
#include <catch2/catch.hpp>

#include <cmath>

#include "chain_fixtures.hpp"
#include "simmer/train/stability.hpp"

using namespace simmer;
using test::check_resume;
using test::small_sine;

TEST_CASE("time_step = auto: a chain saved mid-warm-up or in the window continues bit-identically",
          "[chain][checkpoint][auto_step]") {
  check_resume<double>(train::ParameterMasses::unit, 300, true);
  check_resume<double>(train::ParameterMasses::unit, 900, true);
  check_resume<float>(train::ParameterMasses::adapt, 500, true);
}

TEST_CASE(
    "time_step = auto: h is step_fraction of the measured limit, re-estimated in the warm-up, fixed in the window",
    "[chain][auto_step]") {
  // Langevin: the limit is the curvature's, 2/sqrt(lambda_max) (the chain's own limit is below).
  run::Problem p = small_sine(false);
  p.auto_step.on = true;
  p.auto_step.fraction = 0.2;
  p.nhc.time_step = std::nan("");
  run::BasicChain<double> chain(p, 0), shadow(p, 0);
  const double thermostat =
      train::thermostat_step_limit(p.nhc, static_cast<double>(p.parameters) - p.nhc.dof_offset, p.ramp.target);
  const auto limit = [&](double lambda) { return std::min(2.0 / std::sqrt(lambda), thermostat); };
  chain.train_adam();
  shadow.train_adam();
  // The probe leaves the state as it was and draws from a fresh stream: the shadow's probe at the
  // same point sees what the chain's estimate saw.
  double largest = shadow.stability_probe().lambda_max;
  CHECK(chain.time_step() == 0.2 * limit(largest));
  for (const std::int64_t at : {200, 400, 600}) {  // the warm-up's estimates (steps 0-799, 4 of them)
    chain.advance_to(at);
    shadow.advance_to(at);
    REQUIRE(shadow.parameters() == chain.parameters());
    const double lambda = shadow.stability_probe().lambda_max;
    largest = std::max(largest, lambda);
    chain.advance_to(at + 1);  // the estimate is taken before step `at`
    shadow.advance_to(at + 1);
    INFO("step " << at << ": lambda_max " << lambda);
    CHECK(chain.time_step() == 0.2 * limit(lambda));
  }
  chain.advance_to(801);
  CHECK(chain.time_step() == 0.2 * limit(largest));  // the window's step: the warm-up's stiffest point
  const double window_step = chain.time_step();
  chain.advance_to(1200);
  CHECK(chain.time_step() == window_step);
  CHECK(chain.report().stages.front().summary.time_step == window_step);
  CHECK(std::isfinite(chain.report().stages.front().summary.configurational_temperature));
  // With the Nose-Hoover chain the thermostat's own limit, 2/sqrt(2 N_f T/Q_1), bounds h too.
  run::Problem q = small_sine(true);
  q.auto_step = p.auto_step;
  q.nhc.time_step = std::nan("");
  run::BasicChain<double> nhc(q, 0);
  nhc.train_adam();
  const double curvature = 2.0 / std::sqrt(nhc.stability_probe().lambda_max);
  const double own =
      train::thermostat_step_limit(q.nhc, static_cast<double>(q.parameters) - q.nhc.dof_offset, q.ramp.target);
  INFO("curvature's limit " << curvature << ", the thermostat's " << own);
  CHECK(std::isfinite(own));
  CHECK(nhc.time_step() == 0.2 * std::min(curvature, own));
  // Where the thermostat's limit is the tighter one (a first thermostat mass Q_1 light enough to
  // put it at a quarter of the curvature's, as on the Iris posterior, docs/MIXING.md), h follows
  // it: a step limit without the thermostat's bound fails here.
  run::Problem light = q;
  const double dof = static_cast<double>(q.parameters) - q.nhc.dof_offset;
  light.nhc.masses.assign(static_cast<std::size_t>(q.nhc.chain_length), 1.0);
  light.nhc.masses[0] = std::pow(0.25 * curvature / 2.0, 2.0) * 2.0 * dof * q.ramp.target;
  run::BasicChain<double> bound(light, 0);
  bound.train_adam();
  const double binding = train::thermostat_step_limit(light.nhc, dof, light.ramp.target);
  const double probed = 2.0 / std::sqrt(bound.stability_probe().lambda_max);
  INFO("Q_1 " << light.nhc.masses[0] << ": the thermostat's limit " << binding << ", the curvature's " << probed);
  REQUIRE(binding < 0.5 * probed);
  CHECK(bound.time_step() == 0.2 * binding);
}

TEST_CASE("time_step = auto with curvature masses: the limit is the mass-weighted Hessian's",
          "[chain][auto_step][masses]") {
  // After the mass warm-up (steps 0-299) every estimate is of M^(-1/2) H M^(-1/2): the probe a
  // fresh stream gives with the chain's masses, not the unit-mass one (they differ here by far more
  // than the power iteration's spread), and h follows it.
  run::Problem p = small_sine(false);
  p.auto_step.on = true;
  p.auto_step.fraction = 0.2;
  p.nhc.time_step = std::nan("");
  p.parameter_masses.kind = train::ParameterMasses::curvature;
  p.parameter_masses.warmup = 300;
  run::BasicChain<double> chain(p, 0);
  chain.train_adam();
  chain.advance_to(400);
  REQUIRE(chain.parameter_masses().size() == p.parameters);
  const double chain_probe = chain.stability_probe().lambda_max;
  // The unit-mass probe at the same point: the configuration handed to a unit-mass chain.
  run::Problem q = p;
  q.parameter_masses.kind = train::ParameterMasses::unit;
  q.parameter_masses.warmup = 0;
  run::BasicChain<double> unit(q, 0);
  unit.train_adam();
  unit.advance_to(1);
  ByteWriter w;
  chain.save_configuration(w);
  ByteReader r(w.bytes().data(), w.bytes().size(), "configuration");
  unit.load_configuration(r, 0.01, 0.01);
  REQUIRE(unit.parameters() == chain.parameters());
  const double unit_probe = unit.stability_probe().lambda_max;
  INFO("lambda_max with the chain's masses " << chain_probe << ", with unit masses " << unit_probe);
  CHECK(std::abs(chain_probe / unit_probe - 1.0) > 0.1);
  const double thermostat =
      train::thermostat_step_limit(p.nhc, static_cast<double>(p.parameters) - p.nhc.dof_offset, p.ramp.target);
  chain.advance_to(401);  // the estimate at step 400
  CHECK(chain.time_step() == 0.2 * std::min(2.0 / std::sqrt(chain_probe), thermostat));
}

TEST_CASE("the thermometers only look: sampling T_conf leaves the trajectory's bits as they were",
          "[chain][configurational]") {
  for (const bool plain : {false, true}) {
    INFO((plain ? "paper's chain thermostat" : "Langevin + prior"));
    run::Problem off = small_sine(plain, Precision::float32), on = small_sine(plain, Precision::float32);
    off.diagnostics.configurational_every = 0;
    on.diagnostics.configurational_every = 3;
    run::BasicChain<float> a(off, 1), b(on, 1);
    for (run::BasicChain<float>* ch : {&a, &b}) {
      ch->train_adam();
      ch->advance_to(1200);
    }
    CHECK(a.parameters() == b.parameters());
    CHECK(a.phase().v == b.phase().v);
    CHECK(std::isnan(a.report().stages.front().summary.configurational_temperature));
    const auto s = b.report().stages.front().summary;
    INFO("T_conf " << s.configurational_temperature << ", T_kin " << s.kinetic_temperature << ", T "
                   << s.target_temperature);
    CHECK(std::isfinite(s.configurational_temperature));
    CHECK(s.kinetic_temperature / s.target_temperature == Approx(1.0).epsilon(0.2));
  }
}
