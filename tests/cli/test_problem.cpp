// build_problem: the keys the table maps `into` a Problem member arrive there unchanged, and the
// derived members (temperatures in posterior units, the automatic step, the store's dtype) follow
// from their keys. Every value below differs from its default, so a key mapped into the wrong
// member, or not at all, fails its line.

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "config_fixtures.hpp"
#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/cli/problem.hpp"

using namespace simmer;
using simmer::test::parse;

namespace {

/// A sine run with every plain key away from its default.
cli::Config unusual() {
  // clang-format off
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"model.architecture", "1-7-1"}, {"model.activation", "relu"},
      {"model.output", "tanh"}, {"model.loss", "mse"},
      {"model.init", "glorot_uniform"}, {"adam.lr", "0.003"},
      {"adam.batch", "16"}, {"adam.beta1", "0.8"},
      {"adam.beta2", "0.99"}, {"adam.epsilon", "1e-6"},
      {"adam.patience", "7"}, {"adam.keep", "best_validation"},
      {"data.validation_fraction", "0.2"}, {"adam.checkpoint_every", "11"},
      {"simmer.steps", "900"}, {"simmer.step_fraction", "0.3"}, {"simmer.step_estimates", "6"},
      {"simmer.chain_length", "4"}, {"simmer.thermostat", "langevin"},
      {"simmer.friction", "2.5"}, {"simmer.dof_offset", "1.5"},
      {"simmer.start_jitter", "0.01"}, {"simmer.noise_sd", "0.2"},
      {"simmer.curvature_report", "start_end"}, {"simmer.lanczos_steps", "12"},
      {"simmer.lanczos_probes", "2"}, {"simmer.configurational_every", "13"}, {"simmer.configurational_probes", "3"},
      {"simmer.on_divergence", "warn"}, {"simmer.stability_check", "warn"},
      {"simmer.health_every", "17"}, {"simmer.parameter_masses", "adapt"},
      {"simmer.mass_warmup", "19"}, {"ensemble.window", "600"},
      {"ensemble.stride", "3"}, {"ensemble.blocks", "4"},
      {"ensemble.store_every", "2"}, {"ensemble.track", "1,4"},
      {"ensemble.select_by", "metric"}, {"ensemble.select_rule", "one_se"},
      {"run.trajectories", "3"}, {"run.seed", "23"},
      {"run.gather_interval", "29"}, {"run.trace_every", "31"},
      {"run.output", "elsewhere.h5"}, {"run.progress_seconds", "3.5"},
      {"run.progress", "lines"}, {"run.checkpoint_interval", "37"},
      {"run.sync_every", "41"}, {"run.precision", "float32"},
      {"run.checkpoint_budget", "0.25"},
  };
  // clang-format on
  std::vector<std::string> words{"simmer_mpi"};
  for (const auto& [key, value] : keys) {
    words.push_back("--" + key);
    words.push_back(value);
  }
  std::vector<const char*> argv;
  for (const auto& w : words) argv.push_back(w.c_str());
  const cli::Config base = test::paper_defaults();
  const cli::Invocation inv = cli::parse_command_line(static_cast<int>(argv.size()), argv.data(), &base);
  return cli::validated(inv.config, 1);
}

}  // namespace

TEST_CASE("build_problem: every plain key arrives in its Problem member", "[config][problem]") {
  const run::Problem p = cli::build_problem(unusual());
  CHECK(p.architecture.layers == "1-7-1");
  CHECK(p.architecture.activation == model::Activation::relu);
  CHECK(p.architecture.output == model::Activation::tanh);
  CHECK(p.loss == model::LossKind::mse);
  CHECK(p.init == model::Init::glorot_uniform);
  CHECK(p.adam.learning_rate == 0.003);
  CHECK(p.adam.batch_size == 16);
  CHECK(p.adam.beta1 == 0.8);
  CHECK(p.adam.beta2 == 0.99);
  CHECK(p.adam.epsilon == 1e-6);
  CHECK(p.adam.patience == 7);
  CHECK(p.adam.keep == train::AdamKeep::best_validation);
  CHECK(p.run.adam_checkpoint_every == 11);
  CHECK(p.run.steps == 900);
  CHECK(p.auto_step.fraction == 0.3);
  CHECK(p.auto_step.estimates == 6);
  CHECK(p.nhc.chain_length == 4);
  CHECK(p.nhc.thermostat == train::Thermostat::langevin);
  CHECK(p.nhc.friction == 2.5);
  CHECK(p.nhc.dof_offset == 1.5);
  CHECK(p.start_jitter == 0.01);
  CHECK(p.noise_sd == 0.2);
  CHECK(p.diagnostics.curvature_report == run::DiagnosticsOptions::CurvatureReport::start_end);
  CHECK(p.diagnostics.lanczos_steps == 12);
  CHECK(p.diagnostics.lanczos_probes == 2);
  CHECK(p.diagnostics.configurational_every == 13);
  CHECK(p.diagnostics.configurational_probes == 3);
  CHECK(p.diagnostics.blocks == 4);
  CHECK(p.health.on_divergence == run::HealthOptions::OnDivergence::warn);
  CHECK(p.health.stability_check == run::HealthOptions::StabilityCheck::warn);
  CHECK(p.health.every == 17);
  CHECK(p.parameter_masses == train::ParameterMasses::adapt);
  CHECK(p.mass_warmup == 19);
  CHECK(p.sampling.window == 600);
  CHECK(p.sampling.stride == 3);
  CHECK(p.store.every == 2);
  CHECK(p.store.track == std::vector<std::int64_t>{1, 4});
  CHECK(p.select_by == ensemble::SelectBy::metric);
  CHECK(p.select_rule == ensemble::SelectRule::one_se);
  CHECK(p.run.trajectories == 3);
  CHECK(p.run.seed == 23);
  CHECK(p.run.gather_interval == 29);
  CHECK(p.run.trace_every == 31);
  CHECK(p.run.output == "elsewhere.h5");
  CHECK(p.run.progress_seconds == 3.5);
  CHECK(p.run.progress == run::RunOptions::Progress::lines);
  CHECK(p.run.checkpoint_interval == 37);
  CHECK(p.run.checkpoint_budget == 0.25);
  CHECK(p.run.sync_every == 41);
  CHECK(p.run.precision == Precision::float32);
  // Derived from keys, not copied: float32 /posterior follows run.precision (store_dtype = auto);
  // the step is auto here only when asked.
  CHECK(p.store.float32);
  CHECK_FALSE(p.auto_step.on);
  CHECK(p.nhc.time_step == test::paper_defaults().simmer.time_step);
}

TEST_CASE("build_problem: the ladder's keys and posterior units", "[config][problem]") {
  const cli::Invocation inv = parse({"--data.source",
                                     "sine",
                                     "--data.train",
                                     "65",
                                     "--data.test",
                                     "36",
                                     "--model.architecture",
                                     "1-20-20-1",
                                     "--model.loss",
                                     "sse",
                                     "--simmer.ladder",
                                     "0.5,1,2",
                                     "--simmer.ladder_mode",
                                     "parallel",
                                     "--simmer.exchange_every",
                                     "5",
                                     "--simmer.temperature_unit",
                                     "posterior",
                                     "--simmer.noise_sd",
                                     "0.1",
                                     "--simmer.time_step",
                                     "auto",
                                     "--run.trajectories",
                                     "3",
                                     "--data.validation_fraction",
                                     "0.2",
                                     "--ensemble.select_by",
                                     "none"});
  const run::Problem p = cli::build_problem(cli::validated(inv.config, 1));
  REQUIRE(p.ladder.size() == 3);
  // sse with noise sd s: T_Bayes = 2 s^2 (the rungs are multiples of it).
  CHECK(p.bayes_temperature == Approx(0.02));
  CHECK(p.ladder[0] == Approx(0.5 * p.bayes_temperature));
  CHECK(p.ladder[2] == Approx(2.0 * p.bayes_temperature));
  CHECK(p.ladder_mode == run::LadderMode::parallel);
  CHECK(p.exchange_every == 5);
  CHECK(p.auto_step.on);
  CHECK(std::isnan(p.nhc.time_step));
}

TEST_CASE("build_problem: simmer.thermostat = auto is the massive thermostat in posterior units, the chain otherwise",
          "[config][problem]") {
  using train::Thermostat;
  // From the defaults (thermostat auto, posterior units, the ladder), not the paper's.
  const auto config = [](const std::string& extra) {
    cli::Config c;
    cli::apply_ini("[data]\nsource = sine\n" + extra, "auto.ini", c);
    return cli::validated(c, 1);
  };
  const auto thermostat = [&](const std::string& extra) { return cli::thermostat_of(config(extra)); };
  CHECK(thermostat("") == Thermostat::massive_nose_hoover_langevin);  // the default ladder
  CHECK(thermostat("[simmer]\nladder =\nT_initial = 0.5\nT_target = 1\ndT = 0.5\n") ==
        Thermostat::massive_nose_hoover_langevin);                             // a ramp above 0
  CHECK(thermostat("[simmer]\nladder =\n") == Thermostat::nose_hoover_chain);  // a ramp from T = 0
  CHECK(thermostat("[simmer]\ntemperature_unit = loss\n") == Thermostat::nose_hoover_chain);
  CHECK(thermostat("[simmer]\nmode = adam\n") == Thermostat::nose_hoover_chain);
  CHECK(thermostat("[simmer]\nthermostat = langevin\n") == Thermostat::langevin);  // a choice is kept
  CHECK(thermostat("[simmer]\nthermostat = nose_hoover\n") == Thermostat::nose_hoover_chain);
  // The run integrates with the choice, and its archive records the choice, not "auto" (a resume
  // or a merge reads it as run).
  const run::Problem p = cli::build_problem(config(""));
  CHECK(p.nhc.thermostat == Thermostat::massive_nose_hoover_langevin);
  CHECK_THAT(p.config_ini, Catch::Matchers::Contains("thermostat = massive_nose_hoover_langevin"));
}
