#include <catch2/catch.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "config_fixtures.hpp"
#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/core/error.hpp"
#include "temp_dir.hpp"

using namespace simmer;
using namespace simmer::cli;
using Catch::Contains;
using simmer::test::from_defaults_ini;
using simmer::test::from_ini;
using simmer::test::parse;

namespace {

using simmer::test::TempFile;

/// Two configurations are equal when every key of the table has the same exact value (to_ini
/// prints each key once, exactly, from the key table).
void check_equal(const Config& a, const Config& b) { CHECK(to_ini(a) == to_ini(b)); }

/// The Iris ab initio case of docs/METHOD.md §7, as a user would write it.
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

TEST_CASE("defaults are the struct's defaults and with a CSV's path and target they pass validation", "[config]") {
  const Invocation inv = parse({});
  check_equal(inv.config, Config{});
  CHECK(inv.config_path.empty());
  CHECK_FALSE(inv.overwrite);
  CHECK_FALSE(inv.help);
  CHECK(inv.command_line == "simmer_mpi");
  CHECK_THROWS_WITH(validated(inv.config, 4), Contains("'data.path'") && Contains("data.source = csv"));
  // The recommended recipe (issue 36): a CSV needs only its path and target column.
  const Invocation own = parse({"--data.path", "mine.csv", "--data.target", "y", "--data.task", "classification"});
  const Config v = validated(own.config, 4);
  CHECK(v.run.trajectories == 4);
  CHECK(v.data.features == std::vector<std::string>{"*"});
  CHECK(v.data.train == 0);
  CHECK(v.data.train_fraction == 0.8);
  CHECK(v.data.validation_fraction == 0.2);
  CHECK(loss_of(v) == model::LossKind::cce);
  CHECK(v.model.architecture == "auto");
  CHECK_FALSE(v.simmer.time_step.has_value());
  CHECK(v.simmer.temperature_unit == TemperatureUnit::posterior);
  CHECK(v.simmer.ladder.rungs == std::vector<double>{0.01, 0.03, 0.1, 0.3, 1.0});
  CHECK(v.simmer.prior == Prior::gaussian);
  CHECK(v.simmer.prior_scaling == train::PriorScaling::fan_in);
  CHECK(v.simmer.start_velocity == train::StartVelocity::thermal);
  CHECK(v.ensemble.selection.by == ensemble::SelectBy::nll);
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
  CHECK(c.run.steps == 25000);
  CHECK(c.simmer.T_initial == 0.002);
  CHECK(c.simmer.T_target == 0.002);
  CHECK(c.simmer.dT == 0.0);
  CHECK(parse_masses(c.simmer.masses).values == std::vector<double>{1.0, 2.5, 0.1});
  CHECK_FALSE(parse_masses(c.simmer.masses).martyna);
  CHECK(c.ensemble.window == 10000);
  CHECK(c.ensemble.count == 2000);
  CHECK(c.ensemble.store.track == std::vector<std::int64_t>{0, 5, 37});
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
  CHECK(c.ensemble.store.track.empty());
}

TEST_CASE("command-line overrides beat the file", "[config]") {
  const TempFile file("override.ini", kIrisIni);
  const Invocation inv = parse({"--config", file.path().c_str(), "--simmer.steps", "500", "--ensemble.window=200",
                                "--data.features", "petal_length,petal_width", "--simmer.T_initial", "-0", "--adam.lr",
                                "1e-3", "--output", "out/x.h5", "--overwrite"});
  CHECK(inv.config.run.steps == 500);
  CHECK(inv.config.ensemble.window == 200);
  CHECK(inv.config.data.features == std::vector<std::string>{"petal_length", "petal_width"});
  CHECK(inv.config.adam.learning_rate == 1e-3);
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
    CHECK_THROWS_WITH(
        from_ini("# comment\n\nsteps = 10\n"),
        Contains("jobs/iris.ini:3: key 'steps' outside of any [section]") && Contains("did you mean 'simmer.steps'?"));
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

TEST_CASE("help for one key or one section: --help KEY or --help SECTION", "[config]") {
  const Invocation key = parse({"--help", "steps"});  // a key without its section
  CHECK(key.help);
  CHECK_THAT(key.help_text, Contains("--simmer.steps") && !Contains("--data.source") && !Contains("Usage"));
  const Invocation full = parse({"--help=simmer.time_step"});
  CHECK_THAT(full.help_text, Contains("--simmer.time_step") && !Contains("--simmer.steps"));
  const Invocation section = parse({"--help", "simmer"});
  CHECK_THAT(section.help_text,
             Contains("--simmer.ladder") && Contains("--simmer.noise_sd") && !Contains("--data.path"));
  CHECK_THAT(parse({"--help"}).help_text, Contains("Usage") && Contains("--data.path") && Contains("--run.output"));
  CHECK_THROWS_WITH(parse({"--help", "stepz"}),
                    Contains("'stepz' is neither a key nor a section") && Contains("did you mean"));
}

TEST_CASE("command-line errors name the option and value", "[config]") {
  CHECK_THROWS_WITH(parse({"--simmer.timestep", "0.1"}),
                    Contains("unknown option '--simmer.timestep'") && Contains("did you mean '--simmer.time_step'?"));
  CHECK_THROWS_WITH(parse({"--frobnicate"}), Contains("unknown option '--frobnicate'") && !Contains("did you mean"));
  // A key without its section, and a key's beginning (issue 36).
  CHECK_THROWS_WITH(parse({"--steps", "10"}), Contains("did you mean '--simmer.steps'?"));
  CHECK_THROWS_WITH(parse({"--simmer.temperature", "posterior"}),
                    Contains("did you mean '--simmer.temperature_unit'?"));
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
  // So does a value outside its key's range, unless the command line replaces it.
  const TempFile range("range.ini", "[data]\n\ntrain_fraction = 1.7\n");
  CHECK_THROWS_WITH(parse({"--config", range.path().c_str()}),
                    Contains(range.path() + ":3: option 'data.train_fraction' = '1.7': must be in [0, 1)"));
  CHECK(parse({"--config", range.path().c_str(), "--data.train_fraction", "0.5"}).config.data.train_fraction == 0.5);
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
    const Config defaults = from_defaults_ini("[" + section + "]\n" + name + " = \"" + k.default_value + "\"\n");
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
  Config c = test::paper_defaults();
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
  c.adam.learning_rate = 2.000000000000001e-3;
  c.simmer.time_step = 5e-324;  // denormal min: still exact
  c.simmer.nhc.dof_offset = -12.75;
  c.simmer.masses = "0.1, 1e300, 3.0";
  c.ensemble.points = "grid # with hash.csv";
  c.ensemble.store.track = {0, 9223372036854775807};
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
  c.run.adam_checkpoint_every = 7;
  c.simmer.ladder.rungs = {1e-3, 0.1, 1.0 / 3.0};
  c.simmer.thermostat = train::Thermostat::langevin;
  c.simmer.nhc.friction = 2.5;
  c.simmer.tau = 0.75;
  c.simmer.start_velocity = train::StartVelocity::thermal;
  c.simmer.diagnostics.start_jitter = 1e-9;
  c.simmer.prior = Prior::gaussian;
  c.simmer.prior_sigma = 0.5;
  c.simmer.prior_scaling = train::PriorScaling::fan_in;
  c.simmer.temperature_unit = TemperatureUnit::posterior;
  c.simmer.noise_sd = 0.25;
  c.simmer.diagnostics.curvature_report = run::DiagnosticsOptions::CurvatureReport::start_end;
  c.simmer.diagnostics.lanczos_steps = 17;
  c.simmer.diagnostics.lanczos_probes = 5;
  c.simmer.health.on_divergence = run::HealthOptions::OnDivergence::warn;
  c.simmer.health.stability_check = run::HealthOptions::StabilityCheck::off;
  c.simmer.health.every = 33;
  c.simmer.parameter_masses.kind = train::ParameterMasses::adam;
  c.simmer.parameter_masses.warmup = 250;
  c.simmer.ladder.mode = run::LadderMode::parallel;
  c.simmer.ladder.exchange_every = 50;
  c.simmer.diagnostics.blocks = 4;
  c.ensemble.store_dtype = Precision::float32;
  c.ensemble.selection.by = ensemble::SelectBy::metric;
  c.ensemble.selection.rule = ensemble::SelectRule::one_se;
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
  const auto keys = describe_keys();
  CHECK(key_lines == keys.size());
  for (const KeyInfo& k : keys) {
    const std::string& key = k.key;
    INFO(key);
    CHECK_THAT(help, Contains("--" + key + " "));
    const std::string name = key.substr(key.find('.') + 1);
    CHECK_THAT(ini, Contains("\n" + name + " ="));
  }
  CHECK_THAT(ini, Contains("\npath =\n"));  // an empty value leaves no trailing blank
  CHECK_THAT(help, Contains("--simmer.T_target real (=0.05)"));
  CHECK_THAT(help, Contains("--overwrite"));
}

TEST_CASE("a key that fills a library member takes that member's default or says why not", "[config]") {
  // The default is declared once: in the library struct whose field the key is (the section holds
  // that struct), or, where the run's default means something else (0: one per rank, the recipe's
  // window), set by the section and said in the key's own declaration (`own_default`).
  std::size_t library = 0, own = 0;
  for (const KeyInfo& k : describe_keys()) {
    INFO(k.key << " = " << k.default_value);
    if (!k.fills_member) {
      CHECK(k.own_default.empty());
      continue;
    }
    CHECK(k.library_default != !k.own_default.empty());  // a stale reason fails too
    (k.library_default ? library : own) += 1;
  }
  CHECK(library > 30);
  CHECK(own > 0);
}

TEST_CASE("a config file that sets no key is refused, naming the file", "[config]") {
  for (const char* text : {"", "\n\n", "# only a comment\n; and another\n", "[data]\n# nothing set\n[model]\n"}) {
    INFO("file:\n" << text);
    const TempFile file("empty.ini", text);
    CHECK_THROWS_WITH(parse({"--config", file.path().c_str()}),
                      Contains("config file '" + file.path() + "'") && Contains("sets no keys"));
  }
  const TempFile one("one_key.ini", "# a single key is a configuration\n[simmer]\nsteps = 500\n");
  CHECK(parse({"--config", one.path().c_str()}).config.run.steps == 500);
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
