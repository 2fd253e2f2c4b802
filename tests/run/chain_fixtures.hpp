#pragma once
// The shortened sine problem and the save/load check the chain tests share (test_chain.cpp,
// test_chain_step.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/cli/problem.hpp"
#include "simmer/core/bytes.hpp"
#include "simmer/run/chain.hpp"

namespace simmer::test {

/// The sine job shortened: Adam 100 epochs, 1200 steps, members every step of the last 400,
/// a Langevin thermostat (or `stochastic`, the massive Nosé–Hoover–Langevin one, whose ramp then
/// starts at T = 0.01) and a prior so the noise stream and the prior are part of the state.
inline run::Problem small_sine(bool classification_like = false, Precision precision = Precision::float64,
                               train::Thermostat stochastic = train::Thermostat::langevin) {
  cli::Config c = paper_defaults();
  c.run.precision = precision;
  c.adam.epochs = 100;
  c.run.steps = 1200;
  c.simmer.every = 200;
  c.ensemble.window = 400;
  c.simmer.diagnostics.blocks = 4;
  c.ensemble.store.track = {0, 3};
  c.simmer.diagnostics.curvature_report = run::DiagnosticsOptions::CurvatureReport::off;
  c.run.trace_every = 7;
  c.run.trajectories = 2;
  if (!classification_like) {
    c.simmer.thermostat = stochastic;
    c.simmer.prior = cli::Prior::gaussian;
    if (train::is_nose_hoover_langevin(stochastic)) c.simmer.T_initial = 0.01;
  }
  return cli::build_problem(cli::validated(c, 1));
}

inline std::vector<unsigned char> state_of(const run::Chain& ch) {
  ByteWriter w;
  ch.save(w);
  return w.bytes();
}

template <class S>
void check_resume(train::ParameterMasses masses = train::ParameterMasses::unit, std::int64_t at = 900,
                  bool auto_step = false, train::Thermostat stochastic = train::Thermostat::langevin) {
  for (const bool plain : {false, true}) {
    INFO((plain ? "paper's chain thermostat" : to_string(stochastic) + " + prior")
         << ", " << (sizeof(S) == 4 ? "float32" : "float64"));
    run::Problem p = small_sine(plain, sizeof(S) == 4 ? Precision::float32 : Precision::float64, stochastic);
    p.parameter_masses.kind = masses;
    p.parameter_masses.warmup = 600;
    if (auto_step) {  // simmer.time_step = auto: its estimates at 0, 200, 400, 600, fixed at 800
      p.auto_step.on = true;
      p.auto_step.fraction = 0.2;
      p.nhc.time_step = std::nan("");
    }
    run::BasicChain<S> straight(p, 1), interrupted(p, 1);
    for (run::BasicChain<S>* ch : {&straight, &interrupted}) {
      ch->train_adam();
      ch->advance_to(at);  // 900: inside the window: members, blocks and diagnostics are under way
      ch->take_partials();
      ch->take_rows();
    }
    const auto saved = state_of(interrupted);
    run::BasicChain<S> restored(p, 1);
    ByteReader r(saved.data(), saved.size(), "test state");
    restored.load(r, at);
    CHECK(r.done());
    CHECK(state_of(restored) == saved);  // save -> load -> save: every saved field is restored
    straight.advance_to(1200);
    restored.advance_to(1200);
    CHECK(straight.parameters() == restored.parameters());
    CHECK(straight.phase().v == restored.phase().v);
    CHECK(straight.members() == restored.members());
    const auto a = straight.take_partials().front(), b = restored.take_partials().front();
    CHECK(a.members == b.members);
    CHECK(a.means[1].mean() == b.means[1].mean());
    CHECK(a.tracked == b.tracked);
    const auto ra = straight.take_rows(), rb = restored.take_rows();
    CHECK(ra.params == rb.params);
    CHECK(ra.trace == rb.trace);
    CHECK(ra.draw_first == rb.draw_first);
    const auto sa = straight.report(), sb = restored.report();
    CHECK(sa.stages.front().summary.reason == sb.stages.front().summary.reason);
    CHECK(sa.stages.front().summary.block_test_metric == sb.stages.front().summary.block_test_metric);
    CHECK(sa.stages.front().summary.time_step == sb.stages.front().summary.time_step);
    CHECK(sa.stages.front().summary.configurational_temperature ==
          sb.stages.front().summary.configurational_temperature);
  }
}

}  // namespace simmer::test
