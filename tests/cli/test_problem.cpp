// build_problem: the keys that are a library struct's fields (a Part's, `in` in the table) arrive
// in the Problem's struct unchanged (derived from the table), the choice keys reach their own members (a list written
// independently of the table), and the derived members (temperatures in posterior units, the automatic step, the
// store's dtype) follow from their keys.

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "config_fixtures.hpp"
#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/cli/problem.hpp"
#include "temp_dir.hpp"

using namespace simmer;
using simmer::test::parse;

namespace {

/// Keys another key's value must come with (a rule of `validated` ties them).
std::vector<std::string> needs_also(const std::string& key) {
  if (key == "adam.patience") return {"--adam.keep", "best_validation"};
  if (key == "simmer.mass_warmup") return {"--simmer.parameter_masses", "adapt"};
  if (key == "simmer.exchange_every")
    return {"--simmer.ladder", "0.5,1", "--run.trajectories", "2", "--simmer.ladder_mode", "parallel"};
  if (key == "simmer.ladder_mode" || key == "ensemble.select_by" || key == "ensemble.select_rule")
    return {"--simmer.ladder", "0.5,1", "--run.trajectories", "2"};
  return {};
}

/// The sine job as the paper runs it, with `extra` (--key value ...) on top, validated for one rank.
cli::Config sine(const std::vector<std::string>& extra) {
  std::vector<std::string> words{"simmer_mpi"};
  words.insert(words.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const auto& w : words) argv.push_back(w.c_str());
  const cli::Config base = test::paper_defaults();
  const cli::Invocation inv = cli::parse_command_line(static_cast<int>(argv.size()), argv.data(), &base);
  return cli::validated(inv.config, 1);
}

/// A value of `k` other than the sine job's `current`, from the key's syntax: another choice, the
/// other truth value, or a number moved within every range of the table. The few keys whose
/// values a rule cannot make (lists, paths, values other keys constrain) are given here.
std::string another_value(const cli::KeyInfo& k, const std::string& current) {
  // clang-format off
  static const std::vector<std::pair<std::string, std::string>> given = {
      {"adam.patience", "7"},              // with adam.keep = best_validation (needs_also)
      {"simmer.mass_warmup", "19"},        // >= 10, with parameter_masses = adapt (needs_also)
      {"simmer.ladder", "0.5,1"},          // a list of ascending temperatures
      {"ensemble.track", "1,4"},           // test rows
      {"run.output", "elsewhere.h5"},      // a path
      {"run.trajectories", "3"},           // 0 (one per rank) resolves to 1 here
      {"run.ranks_per_trajectory", "1"},   // a power of 2 up to the ranks (1 here): see below
      {"run.gradient_chunks", "4"},        // a power of two (0 resolves to ranks_per_trajectory)
      {"adam.beta1", "0.8"}, {"adam.beta2", "0.99"},  // in [0, 1)
      {"simmer.step_fraction", "0.3"},     // in (0, 1)
      {"ensemble.fraction", "0.2"},        // in [0, 1), and count = 0
      {"run.checkpoint_budget", "0.25"},   // in (0, 1]
      {"data.validation_fraction", "0.3"},  // (0.2 in the base: adam.keep = best_validation needs one)
  };
  // clang-format on
  for (const auto& [key, value] : given) {
    if (key == k.key) return value;
  }
  for (const auto& choice : k.choices) {
    if (choice != current && choice != cli::kAutoName) return choice;
  }
  if (k.syntax == "true|false" || current == "true" || current == "false") return current == "true" ? "false" : "true";
  const double v = std::stod(current);
  if (k.syntax == "int" || k.syntax == "uint") return std::to_string(static_cast<long long>(v) * 2 + 3);
  std::ostringstream out;
  out.precision(17);
  out << (v == 0.0 ? 0.5 : v * 1.5);
  return out.str();
}

}  // namespace

// Derived from the table: every key that is a Part's field (its table line's `in`) is set alone to
// another value and must arrive in the Problem's struct, and the sine job's own Problem must not
// hold it (so the value was really another). A new key of a Part is covered without a line here.
TEST_CASE("build_problem: every key that fills a Problem member arrives there", "[config][problem]") {
  const cli::Config base = sine({"--data.validation_fraction", "0.2"});
  const run::Problem plain = cli::build_problem(base);
  const std::string ini = cli::to_ini(base);
  std::size_t checked = 0;
  for (const cli::KeyInfo& k : cli::describe_keys()) {
    if (!k.fills_member) continue;
    if (k.key == "run.ranks_per_trajectory") continue;  // > 1 needs that many ranks: mpi: sharded
    // The sine job's value of the key, as the effective INI prints it.
    const std::string name = k.key.substr(k.key.find('.') + 1);
    const std::size_t at = ini.find("\n" + name + " =", ini.find("[" + k.key.substr(0, k.key.find('.')) + "]"));
    REQUIRE(at != std::string::npos);
    std::size_t from = at + name.size() + 3;
    if (ini[from] == ' ') ++from;  // (an empty value has no blank)
    const std::string now = ini.substr(from, ini.find('\n', from) - from);
    const std::string value = another_value(k, now);
    INFO(k.key << ": " << now << " -> " << value);
    const cli::Config c = k.key == "data.validation_fraction" ? sine({"--" + k.key, value}) : sine([&] {
      std::vector<std::string> words{"--data.validation_fraction", "0.2", "--" + k.key, value};
      for (const auto& w : needs_also(k.key)) words.push_back(w);
      return words;
    }());
    const run::Problem p = cli::build_problem(c);
    CHECK(k.arrived(c, p));
    CHECK_FALSE(k.arrived(c, plain));
    ++checked;
  }
  // A library struct's field can only be bound through its Part (config_keys.hpp's Member refuses
  // an inherited field at compile time), so a key of one cannot miss the copy unless its own line
  // says `derived`: no count of them is kept here, and a new key needs no line in this file. The
  // loop did run:
  CHECK(checked > 50);
}

// Deliberately independent of the table: the choice keys and the member each must reach, written
// out by hand, so that a table line naming the wrong member of the same type fails here (and the
// numeric keys whose members share a type and a default with another's, which the derived test
// cannot tell apart either).
TEST_CASE("build_problem: each choice key reaches its own member", "[config][problem]") {
  const run::Problem p = cli::build_problem(sine({"--model.activation",
                                                  "relu",
                                                  "--model.output",
                                                  "tanh",
                                                  "--model.loss",
                                                  "mse",
                                                  "--model.init",
                                                  "glorot_uniform",
                                                  "--adam.keep",
                                                  "best_validation",
                                                  "--data.validation_fraction",
                                                  "0.2",
                                                  "--simmer.thermostat",
                                                  "langevin",
                                                  "--simmer.curvature_report",
                                                  "start_end",
                                                  "--simmer.on_divergence",
                                                  "warn",
                                                  "--simmer.stability_check",
                                                  "warn",
                                                  "--simmer.parameter_masses",
                                                  "adapt",
                                                  "--simmer.mass_warmup",
                                                  "19",
                                                  "--ensemble.select_by",
                                                  "metric",
                                                  "--ensemble.select_rule",
                                                  "one_se",
                                                  "--run.progress",
                                                  "lines",
                                                  "--run.precision",
                                                  "float32",
                                                  "--run.gather_interval",
                                                  "29",
                                                  "--run.checkpoint_interval",
                                                  "37",
                                                  "--run.sync_every",
                                                  "41",
                                                  "--adam.checkpoint_every",
                                                  "11",
                                                  "--simmer.health_every",
                                                  "17",
                                                  "--simmer.lanczos_steps",
                                                  "12",
                                                  "--simmer.lanczos_probes",
                                                  "2"}));
  CHECK(p.architecture.activation == model::Activation::relu);
  CHECK(p.architecture.output == model::Activation::tanh);
  CHECK(p.loss == model::LossKind::mse);
  CHECK(p.architecture.init == model::Init::glorot_uniform);
  CHECK(p.adam.keep == train::AdamKeep::best_validation);
  CHECK(p.nhc.thermostat == train::Thermostat::langevin);
  CHECK(p.diagnostics.curvature_report == run::DiagnosticsOptions::CurvatureReport::start_end);
  CHECK(p.health.on_divergence == run::HealthOptions::OnDivergence::warn);
  CHECK(p.health.stability_check == run::HealthOptions::StabilityCheck::warn);
  CHECK(p.parameter_masses.kind == train::ParameterMasses::adapt);
  CHECK(p.selection.by == ensemble::SelectBy::metric);
  CHECK(p.selection.rule == ensemble::SelectRule::one_se);
  CHECK(p.run.progress == run::RunOptions::Progress::lines);
  CHECK(p.run.precision == Precision::float32);
  CHECK(p.run.gather_interval == 29);
  CHECK(p.run.checkpoint_interval == 37);
  CHECK(p.run.sync_every == 41);
  CHECK(p.run.adam_checkpoint_every == 11);
  CHECK(p.health.every == 17);
  CHECK(p.diagnostics.lanczos_steps == 12);
  CHECK(p.diagnostics.lanczos_probes == 2);
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
  REQUIRE(p.ladder.rungs.size() == 3);
  // sse with noise sd s: T_Bayes = 2 s^2 (the rungs are multiples of it).
  CHECK(p.bayes_temperature == Approx(0.02));
  CHECK(p.ladder.rungs[0] == Approx(0.5 * p.bayes_temperature));
  CHECK(p.ladder.rungs[2] == Approx(2.0 * p.bayes_temperature));
  CHECK(p.ladder.mode == run::LadderMode::parallel);
  CHECK(p.ladder.exchange_every == 5);
  CHECK(p.auto_step.on);
  CHECK(std::isnan(p.nhc.time_step));

  // The Gaussian prior's vector (one per parameter) waits when asked (simmer_mpi: until the
  // node's memory check), with the same rms reported, and fill_prior_precision gives the same bits.
  run::Problem later = cli::build_problem(cli::validated(inv.config, 1), cli::PriorVector::later);
  REQUIRE(p.nhc.prior_precision.size() == p.parameters);
  CHECK(later.nhc.prior_precision.size() == 0);
  CHECK(later.prior_rms == Approx(p.prior_rms).epsilon(1e-14));
  later.fill_prior_precision();
  CHECK(later.nhc.prior_precision == p.nhc.prior_precision);
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

TEST_CASE("build_problem: a class the validation or test rows lack is a warning that names it", "[config][problem]") {
  // 40 rows of classes a and b, and one of c: c can only be a training row.
  std::string text = "x1,x2,label\n";
  for (int i = 0; i < 40; ++i) {
    text += std::to_string(i) + "," + std::to_string((i * 7) % 11) + "," + (i % 2 == 0 ? "a" : "b") + "\n";
  }
  text += "3.5,4.5,c\n";
  const test::TempDir dir("thin_class");
  cli::Config c = test::paper_defaults();
  c.data.source = cli::DataSource::csv;
  c.data.path = dir.write("thin.csv", text);
  c.data.features = {"x1", "x2"};
  c.data.target = "label";
  c.data.task = data::Task::classification;
  c.data.train = 31;
  c.data.test = 10;
  c.data.validation_fraction = 0.2;
  c.data.stratify = true;
  c.model.architecture = "2-4-3";
  c.model.loss = model::LossKind::cce;
  const run::Problem p = cli::build_problem(cli::validated(c, 1));
  REQUIRE(p.has_validation());
  std::vector<std::string> about_c;
  for (const auto& w : p.data_warnings) {
    if (w.find("class 'c'") != std::string::npos) about_c.push_back(w);
  }
  REQUIRE(about_c.size() == 1);
  CHECK_THAT(about_c.front(), Catch::Contains("has 1 training row(s), 0 validation and 0 test row(s)") &&
                                  Catch::Contains("the validation and test scores never see it") &&
                                  !Catch::Contains("data.stratify"));
  for (const auto& w : p.data_warnings) CHECK(w.find("class 'a'") == std::string::npos);  // a and b are in all three
}
