// The configuration's checks (cli/config_rules.cpp and the key table's ranges): every refusal
// names the key and the value; a ladder's keys replace the ramp's; an unknown choice is refused
// while parsing, naming the file, line, key, value and every choice; the data keys' syntax.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config_fixtures.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/core/error.hpp"

using namespace simmer;
using namespace simmer::cli;
using Catch::Contains;
using simmer::test::from_ini;
using simmer::test::parse;

TEST_CASE("validated names the key and the value", "[config]") {
  struct Case {
    const char* ini;
    const char* key;
    const char* value;
  };
  // Each case edits the (valid) defaults; the message must name the key and the bad value.
  const std::vector<Case> cases = {
      {"[data]\nsource = idx\ntask = classification", "data.path", "''"},
      {"[data]\nsource = higgs\npath = h.csv\ntask = regression", "data.task", "'regression'"},
      {"[data]\nrows = -1", "data.rows", "'-1'"},
      {"[model]\narchitecture = lenet5", "model.architecture", "'lenet5'"},
      {"[data]\nsource = csv\nfeatures = a\ntarget = y", "data.path", "''"},
      {"[data]\nsource = csv\npath = f.csv\ntarget = y", "data.features", "''"},
      {"[data]\nsource = csv\npath = f.csv\nfeatures = a", "data.target", "''"},
      {"[data]\nsource = csv\npath = f.csv\nfeatures = a,b,a\ntarget = y", "data.features", "'a,b,a'"},
      {"[data]\ntrain = -1", "data.train", "'-1'"},
      {"[data]\ntest = -5", "data.test", "'-5'"},
      {"[data]\ntrain = 0\ntrain_fraction = 1", "data.train_fraction", "'1'"},
      {"[data]\ntrain = 0", "data.train", "'0'"},
      {"[data]\nsine_points = 1", "data.sine_points", "'1'"},
      {"[data]\nsine_noise = -0.1", "data.sine_noise", "'-0.1'"},
      {"[data]\nsine_noise = nan", "data.sine_noise", "'nan'"},
      {"[model]\narchitecture = 2-x-3", "model.architecture", "'2-x-3'"},
      {"[model]\narchitecture = 5", "model.architecture", "'5'"},
      {"[model]\nloss = cce", "model.loss", "'cce'"},  // regression task
      {"[data]\ntask = classification", "model.loss", "'sse'"},
      {"[data]\ntask = classification\n[model]\nloss = cce", "model.architecture", "'1-20-20-1'"},
      {"[adam]\nepochs = -1", "adam.epochs", "'-1'"},
      {"[adam]\nlr = 0", "adam.lr", "'0'"},
      {"[adam]\nlr = inf", "adam.lr", "'inf'"},
      {"[adam]\nbatch = -2", "adam.batch", "'-2'"},
      {"[adam]\nbeta1 = 1", "adam.beta1", "'1'"},
      {"[adam]\nbeta2 = -0.5", "adam.beta2", "'-0.5'"},
      {"[adam]\nepsilon = 0", "adam.epsilon", "'0'"},
      {"[adam]\nepochs = 1", "adam.epochs", "'1'"},  // retrofit needs two iterates
      {"[simmer]\ntime_step = 0", "simmer.time_step", "'0'"},
      {"[simmer]\ntime_step = -1e-3", "simmer.time_step", "'-0.001'"},
      {"[simmer]\ntime_step = inf", "simmer.time_step", "'inf'"},
      {"[simmer]\nstep_fraction = 1", "simmer.step_fraction", "'1'"},
      {"[simmer]\nstep_fraction = 0", "simmer.step_fraction", "'0'"},
      {"[simmer]\nsteps = 0", "simmer.steps", "'0'"},
      {"[simmer]\nT_initial = -0.5", "simmer.T_initial", "'-0.5'"},
      {"[simmer]\nT_initial = 0.5\nT_target = 0.1", "simmer.T_target", "'0.1'"},
      {"[simmer]\ndT = -0.01", "simmer.dT", "'-0.01'"},
      {"[simmer]\nevery = 0", "simmer.every", "'0'"},
      {"[simmer]\nchain_length = 0", "simmer.chain_length", "'0'"},
      {"[simmer]\nmasses = 1,2", "simmer.masses", "'1,2'"},
      {"[simmer]\nmasses = 1,0,1", "simmer.masses", "'1,0,1'"},
      {"[simmer]\nmasses = martyna\nT_target = 0\ndT = 0", "simmer.masses", "'martyna'"},
      {"[simmer]\ntau = 0", "simmer.tau", "'0'"},
      {"[simmer]\nfriction = 0", "simmer.friction", "'0'"},
      {"[simmer]\nstart_jitter = 2", "simmer.start_jitter", "'2'"},
      {"[simmer]\nmode = abinitio\nstart_velocity = adam", "simmer.start_velocity", "'adam'"},
      {"[simmer]\nprior_sigma = 0", "simmer.prior_sigma", "'0'"},
      {"[simmer]\ntemperature_unit = posterior", "simmer.noise_sd", "'0'"},
      {"[simmer]\nnoise_sd = -1", "simmer.noise_sd", "'-1'"},
      {"[simmer]\nlanczos_steps = 1", "simmer.lanczos_steps", "'1'"},
      {"[simmer]\nlanczos_probes = 0", "simmer.lanczos_probes", "'0'"},
      {"[ensemble]\nblocks = 0", "ensemble.blocks", "'0'"},
      {"[simmer]\ndof_offset = 1000", "simmer.dof_offset", "'1000'"},
      {"[ensemble]\nwindow = 0", "ensemble.window", "'0'"},
      {"[ensemble]\nwindow = 20000", "ensemble.window", "'20000'"},
      {"[ensemble]\nstride = 0", "ensemble.stride", "'0'"},
      {"[ensemble]\ncount = -1", "ensemble.count", "'-1'"},
      {"[ensemble]\nfraction = 1.5", "ensemble.fraction", "'1.5'"},
      {"[ensemble]\nstore_every = 0", "ensemble.store_every", "'0'"},
      {"[ensemble]\ntrack = 3,-1", "ensemble.track", "'3,-1'"},
      {"[run]\ntrajectories = -1", "run.trajectories", "'-1'"},
      {"[run]\ngather_interval = 0", "run.gather_interval", "'0'"},
      {"[run]\ntrace_every = 0", "run.trace_every", "'0'"},
      {"[run]\noutput = \"\"", "run.output", "''"},
      {"[run]\nprogress_seconds = -1", "run.progress_seconds", "'-1'"},
      {"[data]\nsource = csv\npath = f.csv\nfeatures = *,a\ntarget = y", "data.features", "'*,a'"},
      {"[data]\nsource = csv\npath = f.csv\nfeatures = a\nexclude = b\ntarget = y", "data.exclude", "'b'"},
      {"[data]\nstratify = true", "data.stratify", "'true'"},  // regression
      {"[data]\nsource = idx\npath = d\ntask = classification\nstratify = true\n[model]\nloss = cce\n"
       "architecture = lenet5",
       "data.stratify", "'true'"},
      // Validation split and the temperature ladder (issue 17).
      {"[data]\nvalidation_fraction = 0.95", "data.validation_fraction", "'0.95'"},
      {"[data]\nvalidation_fraction = -0.1", "data.validation_fraction", "'-0.1'"},
      {"[data]\nvalidation_fraction = nan", "data.validation_fraction", "'nan'"},
      {"[simmer]\nladder = 0.01,0.1", "data.validation_fraction", "'0'"},  // a ladder chooses on validation
      {"[data]\nvalidation_fraction = 0.2\n[simmer]\nladder = 0.01,0,0.1", "simmer.ladder", "'0.01,0,0.1'"},
      {"[data]\nvalidation_fraction = 0.2\n[simmer]\nladder = -1", "simmer.ladder", "'-1'"},
      {"[data]\nvalidation_fraction = 0.2\n[simmer]\nladder = 0.1,0.03", "simmer.ladder", "'0.1,0.03'"},
      {"[data]\nvalidation_fraction = 0.2\n[simmer]\nladder = 0.1,0.1", "simmer.ladder", "'0.1,0.1'"},
      {"[data]\nvalidation_fraction = 0.2\n[simmer]\nladder = 0.1,inf", "simmer.ladder", "'0.1,inf'"},
      {"[simmer]\nmode = adam\n[adam]\nepochs = 0", "adam.epochs", "'0'"},
      {"[simmer]\nparameter_masses = adam\nmode = abinitio", "simmer.parameter_masses", "'adam'"},
      {"[simmer]\nparameter_masses = adapt", "simmer.mass_warmup", "'0'"},
      {"[simmer]\nparameter_masses = adapt\nmass_warmup = 8000", "simmer.mass_warmup", "'8000'"},
      {"[simmer]\nmass_warmup = -1", "simmer.mass_warmup", "'-1'"},
      {"[simmer]\nparameter_masses = curvature", "simmer.mass_warmup", "'0'"},
      {"[simmer]\nparameter_masses = curvature\nmass_warmup = 8000", "simmer.mass_warmup", "'8000'"},
      // The massive Nose-Hoover-Langevin thermostat's mass is T tau^2: no T = 0 on the ramp.
      {"[simmer]\nthermostat = massive_nose_hoover_langevin", "simmer.thermostat", "'massive_nose_hoover_langevin'"},
      {"[simmer]\nthermostat_steps = 0", "simmer.thermostat_steps", "'0'"},
      // Parallel rungs need a ladder of two or more and a multiple of its rungs in trajectories;
      // replica exchange needs them.
      {"[simmer]\nladder_mode = parallel", "simmer.ladder_mode", "'parallel'"},
      {"[data]\nvalidation_fraction = 0.2\n[simmer]\nladder = 0.1,0.3\nladder_mode = parallel\n[run]\ntrajectories = 3",
       "run.trajectories", "'3'"},
      {"[simmer]\nexchange_every = 100", "simmer.exchange_every", "'100'"},
      {"[simmer]\nexchange_every = -1", "simmer.exchange_every", "'-1'"},
      // Sizes and steps no run needs (issue 18): refused before they reach the archive or memory.
      {"[simmer]\nchain_length = 1001", "simmer.chain_length", "'1001'"},
      {"[simmer]\ntime_step = 1e-320", "simmer.time_step", "'1e-320'"},
      {"[simmer]\nlanczos_steps = 5000", "simmer.lanczos_steps", "'5000'"},
      {"[simmer]\nlanczos_probes = 1001", "simmer.lanczos_probes", "'1001'"},
      {"[data]\nsine_points = 1000000000", "data.sine_points", "'1000000000'"},
      {"[data]\nsource = synthetic_higgs\ntask = classification\nrows = 1000000000\n[model]\nloss = bce\n"
       "architecture = 28-8-1",
       "data.rows", "'1000000000'"},
  };
  for (const Case& c : cases) {
    INFO("config:\n" << c.ini);
    const Config config = from_ini(c.ini);
    CHECK_THROWS_WITH(validated(config, 2), Contains(std::string("'") + c.key + "'") && Contains(c.value));
  }
  CHECK_THROWS_WITH(validated(from_ini("[simmer]\nT_initial = 0.5\nT_target = 0.1"), 1),
                    Contains("is below simmer.T_initial = 0.5"));
  CHECK_NOTHROW(validated(from_ini("[simmer]\nthermostat = massive_nose_hoover_langevin\nT_initial = 0.05"), 1));
  // Adam alone simmers at no temperature: the thermostat is not used (a fair deep ensemble's job).
  CHECK_NOTHROW(validated(from_ini("[simmer]\nthermostat = massive_nose_hoover_langevin\nmode = adam"), 1));
  CHECK_THROWS_WITH(validated(from_ini("[simmer]\nthermostat = massive_nose_hoover_langevin"), 1),
                    Contains("start the ramp above 0, or use a ladder"));
  CHECK_THROWS_WITH(validated(from_ini("[simmer]\nladder = 0.01,0.1"), 1),
                    Contains("ensemble.select_by = none"));  // the way out is named
  CHECK_THROWS_WITH(validated(from_ini("[data]\nvalidation_fraction = 0.2\n[simmer]\nladder = 0.1,0.03"), 1),
                    Contains("ascending") && Contains("rung 2 = 0.03"));
}

TEST_CASE("a ladder replaces the ramp: its keys are not checked, select_by = none needs no validation set",
          "[config][ladder]") {
  // A ramp that would be refused is not used with a ladder.
  CHECK_NOTHROW(validated(
      from_ini("[data]\nvalidation_fraction = 0.2\n[simmer]\nladder = 0.01,0.03\nT_initial = 0.5\nT_target = 0.1"), 1));
  CHECK_NOTHROW(validated(from_ini("[simmer]\nladder = 0.01,0.03\n[ensemble]\nselect_by = none"), 1));
  CHECK_NOTHROW(validated(from_ini("[simmer]\nmode = adam\n[adam]\nepochs = 1"), 1));
  // Adam alone simmers nothing: a ladder (the default's, say) is not used, and not refused.
  CHECK_NOTHROW(validated(from_ini("[simmer]\nmode = adam\nladder = 0.1\n[adam]\nepochs = 1"), 1));
  const Config c = validated(from_ini("[data]\nvalidation_fraction = 0.25\n[simmer]\nladder = 1e-3, 3e-3,1e-2"), 1);
  CHECK(c.simmer.ladder.rungs == std::vector<double>{1e-3, 3e-3, 1e-2});
  CHECK(c.data.validation_fraction == 0.25);
}

TEST_CASE("an unknown choice stops at parsing, naming the file, line, key, value and every choice", "[config]") {
  struct Case {
    const char* section;
    const char* name;
    const char* value;
  };
  const std::vector<Case> cases = {
      {"data", "source", "parquet"},
      {"model", "pooling", "median"},
      {"ensemble", "store_dtype", "float16"},
      {"data", "task", "clustering"},
      {"model", "activation", "swish"},
      {"model", "output", "softmax"},
      {"model", "loss", "mae"},
      {"model", "init", "he"},
      {"simmer", "mode", "annealing"},
      {"simmer", "thermostat", "berendsen"},
      {"simmer", "start_velocity", "fast"},
      {"simmer", "prior", "laplace"},
      {"simmer", "prior_scaling", "fan_out"},
      {"simmer", "temperature_unit", "kelvin"},
      {"simmer", "curvature_report", "always"},
      {"ensemble", "select_by", "accuracy"},
      {"ensemble", "select_rule", "two_se"},
  };
  for (const Case& c : cases) {
    const std::string key = std::string(c.section) + "." + c.name;
    INFO(key);
    const auto info = describe_keys();
    const auto it = std::find_if(info.begin(), info.end(), [&](const KeyInfo& k) { return k.key == key; });
    REQUIRE(it != info.end());
    REQUIRE(it->choices.size() >= 2);
    std::string listed = "must be one of " + it->choices.front();
    for (std::size_t i = 1; i < it->choices.size(); ++i) listed += " | " + it->choices[i];
    CHECK_THROWS_WITH(from_ini(std::string("[") + c.section + "]\n\n" + c.name + " = " + c.value + "\n"),
                      Contains("jobs/iris.ini:3: " + key + " = '" + c.value + "': " + listed));
    CHECK_THROWS_WITH(parse({("--" + key).c_str(), c.value}), Contains("--" + key + " = '" + c.value + "': " + listed));
  }
}

TEST_CASE("the data keys: delimiter, missing tokens, booleans, features = *", "[config]") {
  SECTION("data.delimiter: one character, or tab") {
    CHECK(parse_delimiter(",") == ',');
    CHECK(parse_delimiter(";") == ';');
    CHECK(parse_delimiter("|") == '|');
    CHECK(parse_delimiter("tab") == '\t');
    CHECK(parse_delimiter("\\t") == '\t');
    CHECK(parse_delimiter("\t") == '\t');
    for (const char* bad : {"", ",,", "semicolon", "\"", "a", "7", ".", "-", "+", " "}) {
      INFO("delimiter '" << bad << "'");
      CHECK_THROWS_WITH(parse_delimiter(bad), Contains("'data.delimiter'"));
    }
    // In a file (';' after '=' is a value, not a comment) and refused at its line.
    CHECK(from_ini("[data]\ndelimiter = ;\n").data.delimiter == ";");
    CHECK(from_ini("[data]\ndelimiter = tab\n").data.delimiter == "tab");
    CHECK_THROWS_WITH(from_ini("[data]\n\ndelimiter = ab\n"),
                      Contains("jobs/iris.ini:3: data.delimiter = 'ab'") && Contains("one character"));
  }
  SECTION("data.missing: the default, 'empty' and an empty list") {
    const Config defaults;
    CHECK(defaults.data.missing == std::vector<std::string>{"NA", "?", "empty", "nan", "NaN"});
    CHECK(csv_missing_tokens(defaults.data.missing) == std::vector<std::string>{"NA", "?", "", "nan", "NaN"});
    CHECK_THAT(to_ini(defaults), Contains("\nmissing = NA,?,empty,nan,NaN\n"));
    CHECK(from_ini("[data]\nmissing = -999, n/a\n").data.missing == std::vector<std::string>{"-999", "n/a"});
    CHECK(from_ini("[data]\nmissing =\n").data.missing.empty());  // every value must be present
  }
  SECTION("booleans are true or false") {
    CHECK_FALSE(Config{}.data.missing_in_target);  // a class named NA stays a class
    CHECK_FALSE(Config{}.data.stratify);           // the paper jobs' splits are unchanged
    const Config c = from_ini("[data]\nmissing_in_target = true\nstratify = false\n");
    CHECK(c.data.missing_in_target);
    CHECK_FALSE(c.data.stratify);
    CHECK_THROWS_WITH(from_ini("[data]\nstratify = yes\n"),
                      Contains("jobs/iris.ini:2: data.stratify = 'yes': not true or false"));
    CHECK(parse({"--data.stratify", "true"}).config.data.stratify);
    CHECK_THAT(help_text(), Contains("--data.stratify bool (=false)"));
  }
  SECTION("features = * (with exclude) passes validation; stratify with classification") {
    const Config c = from_ini(
        "[data]\nsource = csv\npath = wine.csv\nfeatures = *\nexclude = id\ntarget = class\ntask = "
        "classification\nstratify = true\n[model]\nloss = cce\narchitecture = 13-8-3\n");
    CHECK(validated(c, 1).data.features == std::vector<std::string>{"*"});
  }
}
