// Every enum's name table (core/names.hpp): each name parses to its value and prints back the
// same; names and values are unique; every enumerator has a name; an unknown name is refused
// listing exactly the table's choices, by the library and by the configuration check alike.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <tuple>

#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/core/names.hpp"
#include "simmer/core/types.hpp"
#include "simmer/data/dataset.hpp"
#include "simmer/ensemble/predictive.hpp"
#include "simmer/ensemble/selection.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/model/activation.hpp"
#include "simmer/model/conv.hpp"
#include "simmer/model/initializer.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/model/pool.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/train/masses.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/posterior.hpp"
#include "simmer/train/trajectory.hpp"

using namespace simmer;
using Catch::Matchers::Contains;

namespace {

/// Every table, once.
const auto kAllTables = std::make_tuple(
    model::kActivationNames, model::kPoolNames, model::kConvAlgorithmNames, model::kInitNames, model::kLossNames,
    train::kStartModeNames, train::kStartVelocityNames, train::kAdamKeepNames, train::kPriorScalingNames,
    train::kThermostatNames, kPrecisionNames, ensemble::kSelectByNames, ensemble::kSelectRuleNames,
    ensemble::kVerdictNames, data::kTaskNames, run::kProgressNames, run::kOnDivergenceNames, run::kStabilityCheckNames,
    run::kCurvatureReportNames, run::kLadderModeNames, train::kParameterMassesNames, ensemble::kNoiseSourceNames,
    cli::kDataSourceNames, cli::kSimmerModeNames, cli::kPriorNames, cli::kTemperatureUnitNames);

template <class E, std::size_t N>
void check_table(const Names<E, N>& names) {
  INFO("table of " << names.what);
  std::set<std::string> seen_names;
  std::set<int> seen_values;
  for (const auto& [value, name] : names.table) {
    CHECK(names.parse(name) == value);
    CHECK(names.name(value) == name);
    CHECK(names.contains(name));
    CHECK(seen_names.insert(std::string(name)).second);
    CHECK(seen_values.insert(static_cast<int>(value)).second);
  }
  // The enums are 0..N-1 with no gaps: every enumerator has a name.
  for (int i = 0; i < static_cast<int>(N); ++i) CHECK(seen_values.count(i) == 1);
  CHECK(names.list().size() == N);
  CHECK_FALSE(names.contains("no_such_name"));
  CHECK_THROWS_WITH(names.parse("no_such_name"), Contains("unknown " + std::string(names.what) +
                                                          " 'no_such_name' (choices: " + names.choices() + ")"));
}

cli::Config from_ini(const std::string& text) {
  cli::Config c = test::paper_defaults();
  cli::apply_ini(text, "names.ini", c);
  return c;
}

}  // namespace

TEST_CASE("every enum's names parse and print back identically", "[names]") {
  std::apply([](const auto&... table) { (check_table(table), ...); }, kAllTables);
  // Printing goes through the same tables.
  CHECK(model::to_string(model::Activation::tanh) == "tanh");
  CHECK(ensemble::to_string(ensemble::Verdict::not_mixed) == "not mixed");
  CHECK(train::to_string(train::Thermostat::nose_hoover_chain) == "nose_hoover");
  CHECK(to_string(Precision::float32) == "float32");
}

TEST_CASE("the configuration refuses an unknown choice listing the enum table's names", "[names][config]") {
  const auto refused = [](const std::string& section, const std::string& key, const std::string& choices) {
    INFO(section << "." << key);
    CHECK_THROWS_WITH(
        cli::validated(from_ini("[" + section + "]\n" + key + " = no_such_name\n"), 1),
        Contains(section + "." + key) && Contains("no_such_name") && Contains("must be one of " + choices));
  };
  refused("model", "activation", model::kActivationNames.choices(" | "));
  refused("model", "output", model::kActivationNames.choices(" | "));
  refused("model", "loss", std::string("auto | ") + model::kLossNames.choices(" | "));
  refused("model", "init", model::kInitNames.choices(" | "));
  refused("model", "pooling", model::kPoolNames.choices(" | "));
  refused("data", "task", data::kTaskNames.choices(" | "));
  refused("simmer", "thermostat", std::string("auto | ") + train::kThermostatNames.choices(" | "));
  refused("simmer", "prior_scaling", train::kPriorScalingNames.choices(" | "));
  refused("simmer", "curvature_report", run::kCurvatureReportNames.choices(" | "));
  refused("simmer", "on_divergence", run::kOnDivergenceNames.choices(" | "));
  refused("simmer", "stability_check", run::kStabilityCheckNames.choices(" | "));
  refused("ensemble", "select_by", ensemble::kSelectByNames.choices(" | "));
  refused("ensemble", "select_rule", ensemble::kSelectRuleNames.choices(" | "));
  refused("run", "precision", kPrecisionNames.choices(" | "));
  refused("run", "progress", run::kProgressNames.choices(" | "));
  refused("data", "source", cli::kDataSourceNames.choices(" | "));
  refused("simmer", "mode", cli::kSimmerModeNames.choices(" | "));
  refused("simmer", "prior", cli::kPriorNames.choices(" | "));
  refused("simmer", "temperature_unit", cli::kTemperatureUnitNames.choices(" | "));
  refused("simmer", "start_velocity", "auto | " + train::kStartVelocityNames.choices(" | "));
  refused("ensemble", "store_dtype", "auto | " + kPrecisionNames.choices(" | "));
}
