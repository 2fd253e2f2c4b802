#include <catch2/catch.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "config_fixtures.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/core/error.hpp"
#include "temp_dir.hpp"

using namespace simmer;
using namespace simmer::cli;
using Catch::Contains;
using simmer::test::from_ini;
using simmer::test::parse;

namespace {

/// Every key the configuration has, in to_ini order: the contract the help text, the INI
/// reader and the archive's /config share.
const std::vector<std::string> kAllKeys = {"data.source",
                                           "data.path",
                                           "data.features",
                                           "data.exclude",
                                           "data.target",
                                           "data.task",
                                           "data.train",
                                           "data.test",
                                           "data.train_fraction",
                                           "data.split_seed",
                                           "data.sine_points",
                                           "data.rows",
                                           "data.sine_noise",
                                           "data.delimiter",
                                           "data.missing",
                                           "data.missing_in_target",
                                           "data.stratify",
                                           "data.validation_fraction",
                                           "model.architecture",
                                           "model.pooling",
                                           "model.activation",
                                           "model.output",
                                           "model.loss",
                                           "model.init",
                                           "adam.epochs",
                                           "adam.lr",
                                           "adam.batch",
                                           "adam.beta1",
                                           "adam.beta2",
                                           "adam.epsilon",
                                           "simmer.mode",
                                           "simmer.time_step",
                                           "simmer.step_fraction",
                                           "simmer.steps",
                                           "simmer.T_initial",
                                           "simmer.T_target",
                                           "simmer.dT",
                                           "simmer.every",
                                           "simmer.ladder",
                                           "simmer.ladder_mode",
                                           "simmer.exchange_every",
                                           "simmer.chain_length",
                                           "simmer.thermostat",
                                           "simmer.friction",
                                           "simmer.masses",
                                           "simmer.tau",
                                           "simmer.dof_offset",
                                           "simmer.start_velocity",
                                           "simmer.start_jitter",
                                           "simmer.prior",
                                           "simmer.prior_sigma",
                                           "simmer.prior_scaling",
                                           "simmer.temperature_unit",
                                           "simmer.noise_sd",
                                           "simmer.curvature_report",
                                           "simmer.lanczos_steps",
                                           "simmer.lanczos_probes",
                                           "simmer.configurational_every",
                                           "simmer.on_divergence",
                                           "simmer.stability_check",
                                           "simmer.parameter_masses",
                                           "simmer.mass_warmup",
                                           "simmer.health_every",
                                           "ensemble.window",
                                           "ensemble.stride",
                                           "ensemble.count",
                                           "ensemble.fraction",
                                           "ensemble.blocks",
                                           "ensemble.store_every",
                                           "ensemble.store_dtype",
                                           "ensemble.points",
                                           "ensemble.track",
                                           "ensemble.select_by",
                                           "ensemble.select_rule",
                                           "run.trajectories",
                                           "run.seed",
                                           "run.gather_interval",
                                           "run.trace_every",
                                           "run.output",
                                           "run.progress_seconds",
                                           "run.progress",
                                           "run.checkpoint_interval",
                                           "run.sync_every",
                                           "run.memory_limit",
                                           "adam.checkpoint_every",
                                           "adam.keep",
                                           "adam.patience",
                                           "run.ranks_per_trajectory",
                                           "run.gradient_chunks",
                                           "run.precision"};

using simmer::test::TempFile;

void check_equal(const Config& a, const Config& b) {
  CHECK(a.data.source == b.data.source);
  CHECK(a.data.path == b.data.path);
  CHECK(a.data.features == b.data.features);
  CHECK(a.data.target == b.data.target);
  CHECK(a.data.task == b.data.task);
  CHECK(a.data.train == b.data.train);
  CHECK(a.data.test == b.data.test);
  CHECK(a.data.train_fraction == b.data.train_fraction);
  CHECK(a.data.split_seed == b.data.split_seed);
  CHECK(a.data.sine_points == b.data.sine_points);
  CHECK(a.data.sine_noise == b.data.sine_noise);
  CHECK(a.data.exclude == b.data.exclude);
  CHECK(a.data.delimiter == b.data.delimiter);
  CHECK(a.data.missing == b.data.missing);
  CHECK(a.data.missing_in_target == b.data.missing_in_target);
  CHECK(a.data.stratify == b.data.stratify);
  CHECK(a.data.validation_fraction == b.data.validation_fraction);
  CHECK(a.model.architecture == b.model.architecture);
  CHECK(a.model.activation == b.model.activation);
  CHECK(a.model.output == b.model.output);
  CHECK(a.model.loss == b.model.loss);
  CHECK(a.model.init == b.model.init);
  CHECK(a.adam.epochs == b.adam.epochs);
  CHECK(a.adam.lr == b.adam.lr);
  CHECK(a.adam.batch == b.adam.batch);
  CHECK(a.adam.keep == b.adam.keep);
  CHECK(a.adam.patience == b.adam.patience);
  CHECK(a.adam.beta1 == b.adam.beta1);
  CHECK(a.adam.beta2 == b.adam.beta2);
  CHECK(a.adam.epsilon == b.adam.epsilon);
  CHECK(a.simmer.mode == b.simmer.mode);
  CHECK(a.simmer.time_step == b.simmer.time_step);
  CHECK(a.simmer.step_fraction == b.simmer.step_fraction);
  CHECK(a.simmer.steps == b.simmer.steps);
  CHECK(a.simmer.T_initial == b.simmer.T_initial);
  CHECK(a.simmer.T_target == b.simmer.T_target);
  CHECK(a.simmer.dT == b.simmer.dT);
  CHECK(a.simmer.every == b.simmer.every);
  CHECK(a.simmer.ladder == b.simmer.ladder);
  CHECK(a.simmer.chain_length == b.simmer.chain_length);
  CHECK(a.simmer.masses == b.simmer.masses);
  CHECK(a.simmer.dof_offset == b.simmer.dof_offset);
  CHECK(a.ensemble.window == b.ensemble.window);
  CHECK(a.ensemble.stride == b.ensemble.stride);
  CHECK(a.ensemble.count == b.ensemble.count);
  CHECK(a.ensemble.fraction == b.ensemble.fraction);
  CHECK(a.ensemble.store_every == b.ensemble.store_every);
  CHECK(a.ensemble.points == b.ensemble.points);
  CHECK(a.ensemble.track == b.ensemble.track);
  CHECK(a.ensemble.select_by == b.ensemble.select_by);
  CHECK(a.ensemble.select_rule == b.ensemble.select_rule);
  CHECK(a.run.trajectories == b.run.trajectories);
  CHECK(a.run.seed == b.run.seed);
  CHECK(a.run.gather_interval == b.run.gather_interval);
  CHECK(a.run.trace_every == b.run.trace_every);
  CHECK(a.run.output == b.run.output);
  CHECK(a.run.progress_seconds == b.run.progress_seconds);
  CHECK(a.data.rows == b.data.rows);
  CHECK(a.model.pooling == b.model.pooling);
  CHECK(a.adam.beta1 == b.adam.beta1);
  CHECK(a.adam.beta2 == b.adam.beta2);
  CHECK(a.adam.checkpoint_every == b.adam.checkpoint_every);
  CHECK(a.simmer.thermostat == b.simmer.thermostat);
  CHECK(a.simmer.friction == b.simmer.friction);
  CHECK(a.simmer.tau == b.simmer.tau);
  CHECK(a.simmer.start_velocity == b.simmer.start_velocity);
  CHECK(a.simmer.start_jitter == b.simmer.start_jitter);
  CHECK(a.simmer.prior == b.simmer.prior);
  CHECK(a.simmer.prior_sigma == b.simmer.prior_sigma);
  CHECK(a.simmer.prior_scaling == b.simmer.prior_scaling);
  CHECK(a.simmer.temperature_unit == b.simmer.temperature_unit);
  CHECK(a.simmer.noise_sd == b.simmer.noise_sd);
  CHECK(a.simmer.curvature_report == b.simmer.curvature_report);
  CHECK(a.simmer.lanczos_steps == b.simmer.lanczos_steps);
  CHECK(a.simmer.lanczos_probes == b.simmer.lanczos_probes);
  CHECK(a.simmer.configurational_every == b.simmer.configurational_every);
  CHECK(a.simmer.on_divergence == b.simmer.on_divergence);
  CHECK(a.simmer.stability_check == b.simmer.stability_check);
  CHECK(a.simmer.health_every == b.simmer.health_every);
  CHECK(a.simmer.parameter_masses == b.simmer.parameter_masses);
  CHECK(a.simmer.mass_warmup == b.simmer.mass_warmup);
  CHECK(a.simmer.ladder_mode == b.simmer.ladder_mode);
  CHECK(a.simmer.exchange_every == b.simmer.exchange_every);
  CHECK(a.ensemble.blocks == b.ensemble.blocks);
  CHECK(a.ensemble.store_dtype == b.ensemble.store_dtype);
  CHECK(a.run.progress == b.run.progress);
  CHECK(a.run.checkpoint_interval == b.run.checkpoint_interval);
  CHECK(a.run.sync_every == b.run.sync_every);
  CHECK(a.run.memory_limit == b.run.memory_limit);
  CHECK(a.run.ranks_per_trajectory == b.run.ranks_per_trajectory);
  CHECK(a.run.gradient_chunks == b.run.gradient_chunks);
  CHECK(a.run.precision == b.run.precision);
}

/// The Iris ab initio case of SIMMERING.md §7, as a user would write it.
const char* const kIrisIni = R"(# Iris ab initio: 36 trajectories, votes pooled
[data]
source   = csv
path     = data/iris.csv
features = sepal_width, petal_width   # two of the four columns
target   = species
task     = classification
train    = 112
test     = 38
split_seed = 7

; the network
[model]
architecture = 2-100-50-50-3
loss = cce

[simmer]
mode       = abinitio
time_step  = 0.001
steps      = 25000
T_initial  = 0.002
T_target   = 0.002
dT         = 0
masses     = 1, 2.5, 1e-1

[ensemble]
window = 10000
count  = 2000
track  = 0,5,37

[run]
trajectories = 36
seed = 12345678901234567890
output = iris abinitio.h5
)";

}  // namespace

TEST_CASE("defaults are the struct's defaults and pass validation", "[config]") {
  const Invocation inv = parse({});
  check_equal(inv.config, Config{});
  CHECK(inv.config_path.empty());
  CHECK_FALSE(inv.overwrite);
  CHECK_FALSE(inv.help);
  CHECK(inv.command_line == "simmer_mpi");
  const Config v = validated(inv.config, 4);
  CHECK(v.run.trajectories == 4);
}

TEST_CASE("a realistic INI file is read", "[config]") {
  const TempFile file("iris.ini", kIrisIni);
  const Invocation inv = parse({"--config", file.path().c_str()});
  const Config& c = inv.config;
  CHECK(inv.config_path == file.path());
  CHECK(c.data.source == DataSource::csv);
  CHECK(c.data.path == "data/iris.csv");
  CHECK(c.data.features == std::vector<std::string>{"sepal_width", "petal_width"});
  CHECK(c.data.target == "species");
  CHECK(c.data.task == data::Task::classification);
  CHECK(c.data.train == 112);
  CHECK(c.data.test == 38);
  CHECK(c.data.split_seed == 7);
  CHECK(c.model.architecture == "2-100-50-50-3");
  CHECK(c.model.activation == model::Activation::tanh);  // untouched keys keep their defaults
  CHECK(c.model.loss == model::LossKind::cce);
  CHECK(c.simmer.mode == SimmerMode::abinitio);
  CHECK(c.simmer.time_step == 0.001);
  CHECK(c.simmer.steps == 25000);
  CHECK(c.simmer.T_initial == 0.002);
  CHECK(c.simmer.T_target == 0.002);
  CHECK(c.simmer.dT == 0.0);
  CHECK(parse_masses(c.simmer.masses).values == std::vector<double>{1.0, 2.5, 0.1});
  CHECK_FALSE(parse_masses(c.simmer.masses).martyna);
  CHECK(c.ensemble.window == 10000);
  CHECK(c.ensemble.count == 2000);
  CHECK(c.ensemble.track == std::vector<std::int64_t>{0, 5, 37});
  CHECK(c.run.trajectories == 36);
  CHECK(c.run.seed == 12345678901234567890ULL);
  CHECK(c.run.output == "iris abinitio.h5");
  // masses has three entries for the default chain length of 3, so the whole file is valid.
  const Config v = validated(c, 2);
  CHECK(v.run.trajectories == 36);  // more trajectories than ranks: fine
}

TEST_CASE("INI syntax: CRLF, comments, quotes, empty values", "[config]") {
  const Config c = from_ini(
      "[data]\r\n"
      "  path = \"  spaced # name \"  # quoted keeps blanks and ' #'\r\n"
      "target=y#1\r\n"
      "features =\r\n"
      "[ensemble]\n"
      "points =   # nothing\n"
      "track = \n");
  CHECK(c.data.path == "  spaced # name ");
  CHECK(c.data.target == "y#1");  // '#' only starts a comment after a blank
  CHECK(c.data.features.empty());
  CHECK(c.ensemble.points.empty());
  CHECK(c.ensemble.track.empty());
}

TEST_CASE("command-line overrides beat the file", "[config]") {
  const TempFile file("override.ini", kIrisIni);
  const Invocation inv = parse({"--config", file.path().c_str(), "--simmer.steps", "500", "--ensemble.window=200",
                                "--data.features", "petal_length,petal_width", "--simmer.T_initial", "-0", "--adam.lr",
                                "1e-3", "--output", "out/x.h5", "--overwrite"});
  CHECK(inv.config.simmer.steps == 500);
  CHECK(inv.config.ensemble.window == 200);
  CHECK(inv.config.data.features == std::vector<std::string>{"petal_length", "petal_width"});
  CHECK(inv.config.adam.lr == 1e-3);
  CHECK(inv.config.run.output == "out/x.h5");
  CHECK(inv.overwrite);
  CHECK(inv.config.simmer.time_step == 0.001);  // from the file
  CHECK(inv.config.data.train == 112);          // from the file
  CHECK(inv.command_line == "simmer_mpi --config " + file.path() +
                                " --simmer.steps 500 --ensemble.window=200 --data.features "
                                "petal_length,petal_width --simmer.T_initial -0 --adam.lr 1e-3 "
                                "--output out/x.h5 --overwrite");
}

TEST_CASE("the output and overwrite options and help", "[config]") {
  CHECK(parse({"--run.output", "a.h5"}).config.run.output == "a.h5");
  CHECK(parse({"--output=b.h5"}).config.run.output == "b.h5");
  CHECK_THROWS_WITH(parse({"--output", "a.h5", "--run.output", "b.h5"}), Contains("--output and --run.output"));

  const Invocation help = parse({"-h"});
  CHECK(help.help);
  CHECK(help.help_text == help_text());
  // --help does not read the config file, so it works while the file is broken.
  CHECK(parse({"--help", "--config", "/nonexistent/simmer.ini"}).help);
}

TEST_CASE("INI errors name origin:line, key and value", "[config]") {
  SECTION("unknown key, with the closest known key") {
    CHECK_THROWS_WITH(
        from_ini("\n[simmer]\ntimestep = 0.1\n"),
        Contains("jobs/iris.ini:3: unknown key 'simmer.timestep'") && Contains("did you mean 'simmer.time_step'?"));
    CHECK_THROWS_WITH(from_ini("[run]\nbanana = 1\n"),
                      Contains("jobs/iris.ini:2: unknown key 'run.banana'") && !Contains("did you mean"));
  }
  SECTION("unknown section") {
    CHECK_THROWS_WITH(from_ini("# c\n[simer]\n"),
                      Contains("jobs/iris.ini:2: unknown section [simer]") && Contains("did you mean 'simmer'?"));
  }
  SECTION("key outside of any section") {
    CHECK_THROWS_WITH(from_ini("# comment\n\nsteps = 10\n"), Contains("jobs/iris.ini:3: key outside of any [section]"));
  }
  SECTION("malformed lines") {
    CHECK_THROWS_WITH(from_ini("[data]\n\n\n\n\n\nfoo\n"),
                      Contains("jobs/iris.ini:7: malformed line 'foo' (expected key = value)"));
    CHECK_THROWS_WITH(from_ini("[data]\n= csv\n"), Contains("jobs/iris.ini:2: malformed line"));
    CHECK_THROWS_WITH(from_ini("[data\n"), Contains("jobs/iris.ini:1: malformed section header"));
    CHECK_THROWS_WITH(from_ini("[data]\npath = \"unterminated\n"), Contains("jobs/iris.ini:2: malformed line"));
  }
  SECTION("duplicate key in the same file") {
    CHECK_THROWS_WITH(from_ini("[simmer]\nsteps = 1\n[data]\n[simmer]\nsteps = 2\n"),
                      Contains("jobs/iris.ini:5: duplicate key 'simmer.steps'") && Contains("line 2"));
  }
  SECTION("conversion errors") {
    CHECK_THROWS_WITH(from_ini("[simmer]\n\n\n\n\n\n\n\nsteps = abc\n"),
                      Contains("jobs/iris.ini:9: simmer.steps = 'abc': not an integer"));
    CHECK_THROWS_WITH(from_ini("[simmer]\nsteps = 1.5\n"),
                      Contains("jobs/iris.ini:2: simmer.steps = '1.5': not an integer"));
    CHECK_THROWS_WITH(from_ini("[simmer]\nsteps = 10 steps\n"), Contains("simmer.steps = '10 steps': not an integer"));
    CHECK_THROWS_WITH(from_ini("[simmer]\nchain_length = 99999999999\n"),
                      Contains("simmer.chain_length = '99999999999': out of range"));
    CHECK_THROWS_WITH(from_ini("[run]\nseed = -1\n"),
                      Contains("jobs/iris.ini:2: run.seed = '-1': not a non-negative integer"));
    CHECK_THROWS_WITH(from_ini("[simmer]\ntime_step = 0.002x\n"),
                      Contains("jobs/iris.ini:2: simmer.time_step = '0.002x': not auto or a number"));
    CHECK_THROWS_WITH(from_ini("[simmer]\nT_target =\n"), Contains("simmer.T_target = '': not a number"));
    CHECK_THROWS_WITH(from_ini("[simmer]\nmasses = 1,,2\n"),
                      Contains("jobs/iris.ini:2: simmer.masses = '1,,2': empty item"));
    CHECK_THROWS_WITH(from_ini("[ensemble]\ntrack = 1, two\n"),
                      Contains("jobs/iris.ini:2: ensemble.track = '1, two': item 'two': not an "
                               "integer"));
  }
}

TEST_CASE("command-line errors name the option and value", "[config]") {
  CHECK_THROWS_WITH(parse({"--simmer.timestep", "0.1"}),
                    Contains("unknown option '--simmer.timestep'") && Contains("did you mean '--simmer.time_step'?"));
  CHECK_THROWS_WITH(parse({"--frobnicate"}), Contains("unknown option '--frobnicate'"));
  // No abbreviations: a prefix is not silently taken for a longer key.
  CHECK_THROWS_WITH(parse({"--simmer.T_init", "1"}), Contains("'--simmer.T_init'"));
  CHECK_THROWS_WITH(parse({"--simmer.steps", "abc"}), Contains("--simmer.steps = 'abc': not an integer"));
  CHECK_THROWS_WITH(parse({"--data.split_seed=-3"}), Contains("--data.split_seed = '-3': not a non-negative integer"));
  CHECK_THROWS_WITH(parse({"--simmer.steps"}), Contains("--simmer.steps"));
  CHECK_THROWS_WITH(parse({"iris.ini"}), Contains("unexpected argument 'iris.ini'"));
  CHECK_THROWS_WITH(parse({"--config", "/nonexistent/simmer.ini"}),
                    Contains("/nonexistent/simmer.ini") && Contains("does not exist"));

  // An INI error reached through --config names the file path and line.
  const TempFile file("bad.ini", "[adam]\nepochs = many\n");
  CHECK_THROWS_WITH(parse({"--config", file.path().c_str()}),
                    Contains(file.path() + ":2: adam.epochs = 'many': not an integer"));
}

TEST_CASE("every key round-trips INI -> typed -> echoed INI, and every choice parses and prints as itself",
          "[config]") {
  const auto info = describe_keys();
  CHECK(info.size() >= 80);
  std::size_t choices = 0;
  for (const KeyInfo& k : info) {
    INFO(k.key);
    const std::string section = k.key.substr(0, k.key.find('.'));
    const std::string name = k.key.substr(k.key.find('.') + 1);
    // The default, as --help and to_ini show it, reads back to itself.
    const Config defaults = from_ini("[" + section + "]\n" + name + " = \"" + k.default_value + "\"\n");
    CHECK(to_ini(defaults) == to_ini(Config{}));
    for (const std::string& choice : k.choices) {
      ++choices;
      const Config c = from_ini("[" + section + "]\n" + name + " = " + choice + "\n");
      CHECK_THAT(to_ini(c), Contains("\n" + name + " = " + choice + "\n"));
      check_equal(from_ini(to_ini(c)), c);
    }
  }
  CHECK(choices >= 50);
}

TEST_CASE("validated accepts the paper's settings and fills in trajectories", "[config]") {
  Config c;
  c.run.trajectories = 0;
  CHECK(validated(c, 3).run.trajectories == 3);
  c.run.trajectories = 1;  // fewer trajectories than ranks: the rest idle
  CHECK(validated(c, 4).run.trajectories == 1);

  c = from_ini(kIrisIni);
  c.simmer.mode = SimmerMode::retrofit;
  c.simmer.masses.clear();
  c.adam.epochs = 200;
  c.data.train = 0;
  c.data.train_fraction = 0.75;  // a fraction instead of a count
  c.ensemble.count = 0;
  c.ensemble.fraction = 0.1;
  CHECK_NOTHROW(validated(c, 2));
  c.model.loss = model::LossKind::bce;
  c.model.architecture = "28-512-512-512-512-1";
  c.model.activation = model::Activation::elu;
  CHECK_NOTHROW(validated(c, 2));
}

TEST_CASE("to_ini round-trips through apply_ini", "[config]") {
  check_equal(from_ini(to_ini(Config{})), Config{});

  Config c = from_ini(kIrisIni);
  c.data.train_fraction = 1.0 / 3.0;
  c.data.sine_noise = 0.1;
  c.adam.epsilon = 1e-7;
  c.adam.lr = 2.000000000000001e-3;
  c.simmer.time_step = 5e-324;  // denormal min: still exact
  c.simmer.dof_offset = -12.75;
  c.simmer.masses = "0.1, 1e300, 3.0";
  c.ensemble.points = "grid # with hash.csv";
  c.ensemble.track = {0, 9223372036854775807};
  c.data.target = " padded ";
  c.run.seed = 18446744073709551615ULL;
  c.data.split_seed = 0;
  c.data.delimiter = "\t";  // a literal tab: quoted, so trimming keeps it
  c.data.missing = {"NA", "empty", "-999", "#N/A"};
  c.data.missing_in_target = true;
  c.data.stratify = true;
  c.data.exclude = {"id", "name"};
  // Every other kind of key away from its default, so each field's round trip is seen.
  c.data.validation_fraction = 0.2;
  c.data.rows = 12345;
  c.model.pooling = model::PoolKind::max;
  c.adam.beta1 = 0.85;
  c.adam.beta2 = 0.995;
  c.adam.checkpoint_every = 7;
  c.simmer.ladder = {1e-3, 0.1, 1.0 / 3.0};
  c.simmer.thermostat = train::Thermostat::langevin;
  c.simmer.friction = 2.5;
  c.simmer.tau = 0.75;
  c.simmer.start_velocity = train::StartVelocity::thermal;
  c.simmer.start_jitter = 1e-9;
  c.simmer.prior = Prior::gaussian;
  c.simmer.prior_sigma = 0.5;
  c.simmer.prior_scaling = train::PriorScaling::fan_in;
  c.simmer.temperature_unit = TemperatureUnit::posterior;
  c.simmer.noise_sd = 0.25;
  c.simmer.curvature_report = run::DiagnosticsOptions::CurvatureReport::start_end;
  c.simmer.lanczos_steps = 17;
  c.simmer.lanczos_probes = 5;
  c.simmer.on_divergence = run::HealthOptions::OnDivergence::warn;
  c.simmer.stability_check = run::HealthOptions::StabilityCheck::off;
  c.simmer.health_every = 33;
  c.simmer.parameter_masses = train::ParameterMasses::adam;
  c.simmer.mass_warmup = 250;
  c.simmer.ladder_mode = run::LadderMode::parallel;
  c.simmer.exchange_every = 50;
  c.ensemble.blocks = 4;
  c.ensemble.store_dtype = Precision::float32;
  c.ensemble.select_by = ensemble::SelectBy::metric;
  c.ensemble.select_rule = ensemble::SelectRule::one_se;
  c.run.progress = run::RunOptions::Progress::lines;
  c.run.checkpoint_interval = 77;
  c.run.sync_every = 11;
  c.run.memory_limit = "16G";
  c.run.ranks_per_trajectory = 2;
  c.run.gradient_chunks = 4;
  c.run.precision = Precision::float32;
  const std::string text = to_ini(c);
  INFO(text);
  check_equal(from_ini(text), c);
  CHECK(to_ini(from_ini(text)) == text);
  CHECK_THAT(text, Contains("train_fraction = 0.33333333333333331"));  // %.17g
}

TEST_CASE("to_ini and help_text list every key", "[config]") {
  const std::string ini = to_ini(Config{});
  const std::string help = help_text();
  CHECK_THAT(help, Contains("simmer_mpi --config FILE [--section.key value ...] [--output PATH] "
                            "[--overwrite]"));
  for (const char* section : {"[data]", "[model]", "[adam]", "[simmer]", "[ensemble]", "[run]"}) {
    CHECK_THAT(ini, Contains(section));
    CHECK_THAT(help, Contains(section));
  }
  std::size_t key_lines = 0;
  for (std::size_t pos = 0; (pos = ini.find(" =", pos)) != std::string::npos; pos += 2) {
    ++key_lines;
  }
  CHECK(key_lines == kAllKeys.size());
  for (const std::string& key : kAllKeys) {
    INFO(key);
    CHECK_THAT(help, Contains("--" + key + " "));
    const std::string name = key.substr(key.find('.') + 1);
    CHECK_THAT(ini, Contains("\n" + name + " ="));
  }
  CHECK_THAT(ini, Contains("\npath =\n"));  // an empty value leaves no trailing blank
  CHECK_THAT(help, Contains("--simmer.T_target real (=0.05)"));
  CHECK_THAT(help, Contains("--overwrite"));
}

TEST_CASE("a config file that sets no key is refused, naming the file", "[config]") {
  for (const char* text : {"", "\n\n", "# only a comment\n; and another\n", "[data]\n# nothing set\n[model]\n"}) {
    INFO("file:\n" << text);
    const TempFile file("empty.ini", text);
    CHECK_THROWS_WITH(parse({"--config", file.path().c_str()}),
                      Contains("config file '" + file.path() + "'") && Contains("sets no keys"));
  }
  const TempFile one("one_key.ini", "# a single key is a configuration\n[simmer]\nsteps = 500\n");
  CHECK(parse({"--config", one.path().c_str()}).config.simmer.steps == 500);
}

TEST_CASE("key roles: a resume may change placement keys, merged runs may differ in study keys too", "[config]") {
  const Config a = from_ini("[run]\nseed = 1\n");
  const Config b = from_ini("[run]\nseed = 2\noutput = elsewhere.h5\nprogress_seconds = 3\n[model]\nloss = mse\n");
  CHECK(config_differences(a, b).size() == 4);
  const auto resume = config_differences(a, b, {KeyRole::placement});
  REQUIRE(resume.size() == 2);
  CHECK_THAT(resume[0] + resume[1], Contains("run.seed") && Contains("model.loss"));
  const auto merge = config_differences(a, b, {KeyRole::placement, KeyRole::study});
  REQUIRE(merge.size() == 1);
  CHECK_THAT(merge[0], Contains("model.loss: 'sse' vs 'mse'"));
  CHECK(key_role("simmer.time_step") == KeyRole::science);
  CHECK(key_role("data.path") == KeyRole::placement);
  CHECK(key_role("run.gather_interval") == KeyRole::study);
}
