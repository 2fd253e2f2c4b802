#pragma once
/// \file
/// The run configuration: plain option structs, one per INI section. Only src/cli sees
/// Boost.Program_options; everything below works with these structs.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/core/names.hpp"
#include "simmer/core/types.hpp"
#include "simmer/data/dataset.hpp"
#include "simmer/ensemble/selection.hpp"
#include "simmer/model/activation.hpp"
#include "simmer/model/initializer.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/model/pool.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/train/adam.hpp"
#include "simmer/train/masses.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/posterior.hpp"
#include "simmer/train/trajectory.hpp"

namespace simmer::cli {

// The configuration's own choices (the library's enums, e.g. model::Activation, have their name
// tables next to them). Every choice key of Config holds an enum: an unknown name stops at
// parsing, with the file, line, key and the choices.

/// data.source
enum class DataSource { csv, sine, idx, higgs, synthetic_higgs };
inline constexpr Names<DataSource, 5> kDataSourceNames{"data.source",
                                                       {{{DataSource::csv, "csv"},
                                                         {DataSource::sine, "sine"},
                                                         {DataSource::idx, "idx"},
                                                         {DataSource::higgs, "higgs"},
                                                         {DataSource::synthetic_higgs, "synthetic_higgs"}}}};
/// simmer.mode: adam is Adam alone (the deep ensemble), the others train::StartMode's.
enum class SimmerMode { retrofit, abinitio, adam };
inline constexpr Names<SimmerMode, 3> kSimmerModeNames{
    "simmer.mode",
    {{{SimmerMode::retrofit, "retrofit"}, {SimmerMode::abinitio, "abinitio"}, {SimmerMode::adam, "adam"}}}};
/// simmer.prior
enum class Prior { none, gaussian };
inline constexpr Names<Prior, 2> kPriorNames{"simmer.prior", {{{Prior::none, "none"}, {Prior::gaussian, "gaussian"}}}};
/// simmer.temperature_unit
enum class TemperatureUnit { loss, posterior };
inline constexpr Names<TemperatureUnit, 2> kTemperatureUnitNames{
    "simmer.temperature_unit", {{{TemperatureUnit::loss, "loss"}, {TemperatureUnit::posterior, "posterior"}}}};
/// The name of an optional choice's empty value ("auto": decided from other keys).
inline constexpr const char* kAutoName = "auto";
/// model.architecture = auto: these hidden widths between the data's inputs and outputs.
inline constexpr const char* kAutoHidden = "64-64";

// A section holds the library's option structs whose fields are keys, as its base or as members
// (run::RunOptions, train::NhcOptions ...): such a key is the library field itself, bound by its
// table line, with the library's default unless the table says why not (`own_default`; the
// section's constructor then sets it). A test holds the two together. adam.epochs is the one such
// field that build_problem derives rather than copies (`derived`: 0 in an ab initio run), its
// default AdamConfig's own. The section's own members are the keys no library struct holds as they
// are (auto choices, text the run parses).

struct DataConfig {
  DataSource source = DataSource::csv;
  std::string path;                           ///< csv, higgs: file; idx: directory (relative to the cwd)
  std::vector<std::string> features = {"*"};  ///< csv: feature column names; {"*"}: all but the target and exclude
  std::vector<std::string> exclude;           ///< csv with features = *: columns left out
  std::string target;                         ///< csv: target column name
  data::Task task = data::Task::regression;
  std::int64_t train = 0;        ///< training rows (0: train_fraction of the rows; idx: every training image)
  std::int64_t test = 0;         ///< test rows (0: the rest; idx: every test image)
  double train_fraction = 0.8;   ///< used when train = 0
  std::uint64_t split_seed = 1;  ///< the split (and the sine noise) shared by all trajectories
  std::int64_t sine_points = 101;
  double sine_noise = 0.1;
  std::int64_t rows =
      0;  ///< higgs: rows read from the file's start (0: all); synthetic_higgs: rows generated (0: train + test)
  std::string delimiter = ",";  ///< csv: one character, or tab / \t (parse_delimiter)
  /// csv: fields that mean "no value" (a row with one in a used column is dropped); "empty" is
  /// the empty field (csv_missing_tokens)
  std::vector<std::string> missing = {"NA", "?", "empty", "nan", "NaN"};
  bool missing_in_target = false;  ///< classification: `missing` also applies to the class labels
  bool stratify = false;           ///< classification: each class keeps its share in train and test
  /// Share of the training rows held out as a validation set (seeded; never in a gradient): the
  /// scores every candidate ensemble is chosen by (0: none, the paper's splits)
  double validation_fraction = 0.2;
};

/// The network's keys that are the library's ArchitectureSpec fields (activation, output, pooling,
/// init) are its base's; its layers, input_shape and outputs come from model.architecture and the
/// data (cli::build_problem).
struct ModelConfig : model::ArchitectureSpec {
  std::string architecture = kAutoName;  ///< widths "2-100-3", "lenet5", or auto (kAutoHidden)
  std::optional<model::LossKind> loss;   ///< empty: auto, the task's (loss_of)
};

/// Adam's options (adam.lr is learning_rate, adam.batch batch_size); adam.checkpoint_every is
/// run::RunOptions::adam_checkpoint_every.
struct AdamConfig : train::AdamOptions {
  AdamConfig() { epochs = 2000; }
};

/// simmer.steps is run::RunOptions::steps.
struct SimmerConfig {
  SimmerMode mode = SimmerMode::retrofit;
  /// h; empty: auto, a fraction (step_fraction) of the stability limit measured in each stage's
  /// warm-up (run::AutoStep).
  std::optional<double> time_step;
  run::AutoStep auto_step;  ///< step_fraction, step_estimates (`on` follows time_step)
  double T_initial = 0.0;
  double T_target = 0.05;
  double dT = 0.01;
  std::int64_t every = 1000;
  /// rungs in temperature_unit (the recipe's ladder), mode, exchange_every
  run::LadderOptions ladder{{0.01, 0.03, 0.1, 0.3, 1.0}};
  /// chain_length, thermostat_steps, friction, dof_offset (the rest is the run's: build_problem)
  train::NhcOptions nhc;
  /// empty: auto, the one rule thermostat_of applies (massive Nose-Hoover-Langevin in posterior
  /// units with every temperature > 0, else the paper's chain)
  std::optional<train::Thermostat> thermostat;
  std::string masses;  ///< "": all 1 | "martyna" | "Q_1,...,Q_Nc" (parse_masses)
  double tau = 1.0;    ///< masses = martyna: thermostat time scale (time units)
  std::optional<train::StartVelocity> start_velocity = train::StartVelocity::thermal;  ///< empty: auto (the mode's)
  Prior prior = Prior::gaussian;
  double prior_sigma = 1.0;  ///< gaussian prior standard deviation (parameter units)
  train::PriorScaling prior_scaling = train::PriorScaling::fan_in;
  TemperatureUnit temperature_unit = TemperatureUnit::posterior;
  /// regression: Gaussian noise sd (target units; 0: unknown); empty: auto, from the deep
  /// ensemble's residuals after Adam (run::Problem::set_noise_sd)
  std::optional<double> noise_sd;
  /// the curvature report, the thermometer, the start jitter; ensemble.blocks too
  run::DiagnosticsOptions diagnostics;
  run::HealthOptions health;            ///< on_divergence, stability_check, health_every
  train::MassOptions parameter_masses;  ///< parameter_masses, mass_warmup
};

/// The sampling's keys are ensemble::SamplingOptions' (its base); ensemble.blocks is the
/// simmer section's diagnostics'.
struct EnsembleConfig : ensemble::SamplingOptions {
  EnsembleConfig() { window = 3000; }
  run::StoreOptions store{20, false, {}};  ///< store_every (own default: every 20th member), track
  std::optional<Precision> store_dtype;    ///< /posterior/params on disk (empty: auto, run.precision)
  std::string points;                      ///< optional CSV of extra evaluation inputs (feature columns)
  ensemble::SelectionOptions selection;    ///< select_by, select_rule
};

/// The run's keys are run::RunOptions' (its base), simmer.steps and adam.checkpoint_every among them.
struct RunConfig : run::RunOptions {
  RunConfig() {
    trajectories = 0;  // one per MPI rank group (validated resolves it)
    steps = 10000;
    output = "simmer_run.h5";
    gradient_chunks = 0;  // run.ranks_per_trajectory's (validated resolves it)
  }
  std::string memory_limit = "auto";  ///< auto | off | a size ("16G"): see parse_memory_limit
};

struct Config {
  DataConfig data;
  ModelConfig model;
  AdamConfig adam;
  SimmerConfig simmer;
  EnsembleConfig ensemble;
  RunConfig run;
};

/// What the command line asked for besides the configuration.
struct Invocation {
  Config config;
  std::string config_path;     ///< --config FILE (may be empty: defaults + overrides)
  bool overwrite = false;      ///< --overwrite
  bool estimate_only = false;  ///< --estimate: print what the run needs, do not run
  bool print_config = false;   ///< --print-config: print the effective INI, do not run
  std::string resume_path;     ///< --resume ARCHIVE: continue that run from its last checkpoint
  bool config_given = false;   ///< a --config file or a --section.key override was given
  bool help = false;           ///< --help was given: `help_text` holds the text to print
  std::string help_text;
  std::string command_line;  ///< argv joined with spaces (for provenance)
};

/// Parse argv: `--config FILE`, `--section.key value` overrides (the command line wins over the
/// file), `--output PATH` (= --run.output), `--overwrite`, `--help`. Throws simmer::Error with a
/// message that names the file and line (for INI problems), the key and the value.
/// With `base`, values start from it instead of the defaults (how --resume applies a command
/// line on top of the archived configuration).
Invocation parse_command_line(int argc, const char* const* argv, const Config* base = nullptr);

/// The INI key of a library option's field ("NhcOptions.time_step" -> "simmer.time_step"; the
/// field itself when it has no key).
std::string key_of(const std::string& field);

/// Runs `fn`; a simmer::FieldError from the library comes out as an error naming the INI key.
template <class Fn>
auto with_keys(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const FieldError& e) {
    throw option_error(key_of(e.field()), e.value(), e.why());
  }
}

/// model.loss as the run uses it: the key's, or for auto the task's (cce for classification, mse
/// for regression).
model::LossKind loss_of(const Config& c);

/// simmer.thermostat as the run uses it: the key's, or for auto the massive Nosé–Hoover–Langevin
/// thermostat when the temperatures are in posterior units and every one is > 0 (a ladder, or a
/// ramp from T_initial > 0) and something simmers; the paper's Nosé–Hoover chain otherwise
/// (docs/MIXING.md: on every case measured it brings T_conf/T nearer 1 than the chain does).
train::Thermostat thermostat_of(const Config& c);

/// simmer.masses as given: all 1 (empty text), Martyna–Tuckerman–Klein (from N_f, T and
/// simmer.tau, computed once the network is known), or one value per chain link.
struct MassSpec {
  bool martyna = false;
  std::vector<double> values;  ///< explicit masses (empty: all 1, or martyna)
};
/// Throws simmer::Error naming simmer.masses and the text when it is neither.
MassSpec parse_masses(const std::string& text);

/// run.memory_limit: -1 for "auto" (the node's available memory), 0 for "off" (no check),
/// else bytes from "<number>[K|M|G|T]" (binary units; a trailing "B" or "iB" is allowed).
/// Throws simmer::Error naming run.memory_limit and the text otherwise.
std::int64_t parse_memory_limit(const std::string& text);

/// data.delimiter as a character: one character (not a quote, letter, digit, '.', '+', '-' or
/// blank), or "tab" / "\t" for a tab. Throws simmer::Error naming data.delimiter otherwise.
char parse_delimiter(const std::string& text);

/// data.missing as the fields the CSV reader compares with ("empty" becomes "").
std::vector<std::string> csv_missing_tokens(const std::vector<std::string>& items);

/// How a key's value may differ between configurations of the same computation. One list
/// (config.cpp, key_role) serves the resume and the merge.
enum class KeyRole {
  science,    ///< what is computed: a resume may not change it, merged runs must agree on it
  placement,  ///< where the run and its input files are, how it reports and splits its work (none
              ///< changes a bit): a resume may change it, merged runs may differ in it
  study,      ///< how one run of a seed study was carried out (seed, trajectories, checkpoint and
              ///< gather intervals): merged runs may differ in it, a resume may not change it
};
/// The role of "section.key".
KeyRole key_role(const std::string& key);

/// Keys whose values differ between two configurations, as "key: 'a' vs 'b'" lines, leaving out
/// the keys whose role is in `ignored`.
std::vector<std::string> config_differences(const Config& a, const Config& b,
                                            std::initializer_list<KeyRole> ignored = {});

/// Parse INI text (sections `[name]`, `key = value`, `#` or `;` comments) into `config`, with
/// `origin` (a file name) used in messages. Returns the number of keys set.
std::size_t apply_ini(const std::string& text, const std::string& origin, Config& config);
/// The same, returning each key it set (its full name) with the line it was set on.
std::map<std::string, std::size_t> apply_ini_lines(const std::string& text, const std::string& origin, Config& config);

/// Checks every value that can be checked without the data. `world_size` is the number of MPI
/// ranks (run.trajectories = 0 becomes world_size in the returned copy). Throws simmer::Error
/// naming the key ("simmer.time_step") and the value.
Config validated(const Config& config, int world_size);

/// The full effective configuration as INI text (every key, with its value), which
/// apply_ini reads back to an equal Config.
std::string to_ini(const Config& config);

/// Help text: every key grouped by section, with default and meaning.
std::string help_text();

/// One key of the table as tests, tools and documentation see it.
struct KeyInfo {
  std::string key;                   ///< "section.name"
  std::string syntax;                ///< "real", "int", "a,b,...", or the choices "tanh|relu|..."
  std::string default_value;         ///< as --help and the effective INI print it
  KeyRole role = KeyRole::science;   ///< on resume and merge
  std::vector<std::string> choices;  ///< a choice key's names ("auto" first where it may be left to the run)
  bool fills_member = false;         ///< its value goes unchanged to a run::Problem member
  bool library_default = false;      ///< ... and its default is that member's own
  std::string own_default;           ///< why its default differs from the member's, where it does
  /// fills_member: whether a built Problem's member holds a configuration's value
  std::function<bool(const Config&, const run::Problem&)> arrived;
};
/// Every key, in the order of the effective INI.
std::vector<KeyInfo> describe_keys();

}  // namespace simmer::cli
