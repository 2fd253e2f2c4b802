// The configuration: one table of keys (section, name, meaning, parser) that drives the INI
// reader, the command line, the effective INI and --help, and the validation of every value with
// its rule next to its key. Long (~1000 lines) because every key's parsing, help text and rules
// live here together, so a new key is one table line and one rule in one place.
#include "simmer/cli/config.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "simmer/core/error.hpp"
#include "simmer/core/names.hpp"
#include "simmer/core/types.hpp"
#include "simmer/data/dataset.hpp"
#include "simmer/ensemble/sampling.hpp"
#include "simmer/ensemble/selection.hpp"
#include "simmer/model/activation.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/model/initializer.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/model/pool.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/posterior.hpp"
#include "simmer/train/schedule.hpp"

namespace simmer::cli {
namespace {

namespace po = boost::program_options;

// ---------------------------------------------------------------------------------------------
// Text <-> value conversion. One set of parsers serves the INI reader and the command line, so
// both accept exactly the same spellings.

/// Why a value did not convert ("not an integer"); callers add where it came from.
class BadValue : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string trim(const std::string& s) {
  std::size_t begin = 0;
  std::size_t end = s.size();
  while (begin < end && is_space(s[begin])) ++begin;
  while (end > begin && is_space(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

/// The whole string as an Int (no trailing characters, no '1.5'); a leading '+' is allowed.
template <class Int>
Int parse_integer(const std::string& text, const char* what) {
  std::string_view s = text;
  if (std::is_unsigned_v<Int> && !s.empty() && s.front() == '-') {
    throw BadValue("not a non-negative integer");
  }
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (!s.empty() && (s.front() == '+' || s.front() == '-')) throw BadValue(what);
  }
  Int value{};
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    throw BadValue("out of range (" + std::to_string(std::numeric_limits<Int>::min()) + " to " +
                   std::to_string(std::numeric_limits<Int>::max()) + ")");
  }
  if (ec != std::errc() || ptr != s.data() + s.size()) throw BadValue(what);
  return value;
}

/// Whole-string floating-point number (decimal or exponent form; also inf/nan, which
/// `validated` then rejects with the key's own message).
double parse_real(const std::string& text) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+' || (s.front() == '-' && text.front() == '+')) {
    throw BadValue("not a number");
  }
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) throw BadValue("out of the range of a double");
  if (ec != std::errc() || ptr != s.data() + s.size()) throw BadValue("not a number");
  return value;
}

/// "a, b,c" -> {"a", "b", "c"}; "" (or only blanks) -> {}. Items are trimmed; an empty item
/// ("a,,b", "a,") is an error.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  if (trim(text).empty()) return items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = trim(text.substr(start, comma - start));
    if (item.empty()) throw BadValue("empty item in comma-separated list");
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class T>
T parse_as(const std::string& text) {
  if constexpr (std::is_same_v<T, std::string>) {
    // Only a command-line value can hold one; the effective INI (/config, to_ini) could not.
    if (text.find('\n') != std::string::npos) throw BadValue("contains a line break");
    return text;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true") return true;
    if (text == "false") return false;
    throw BadValue("not true or false");
  } else if constexpr (std::is_same_v<T, double>) {
    return parse_real(text);
  } else if constexpr (std::is_same_v<T, int>) {
    return parse_integer<int>(text, "not an integer");
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return parse_integer<std::int64_t>(text, "not an integer");
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return parse_integer<std::uint64_t>(text, "not a non-negative integer");
  } else {
    static_assert(IsVector<T>::value, "unsupported option type");
    T out;
    for (const std::string& item : split_list(text)) {
      try {
        out.push_back(parse_as<typename T::value_type>(item));
      } catch (const BadValue& e) {
        throw BadValue("item '" + item + "': " + e.what());
      }
    }
    return out;
  }
}

/// Exact (%.17g) for to_ini, so a written configuration reads back bit-identically.
std::string format_exact(double v) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.17g", v);
  return buf.data();
}

/// Shortest text that reads back to the same double: for messages and help defaults.
std::string format_short(double v) {
  std::array<char, 32> buf{};
  const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc()) return format_exact(v);
  return std::string(buf.data(), ptr);
}

template <class T>
std::string format_as(const T& value, bool exact) {
  if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, double>) {
    return exact ? format_exact(value) : format_short(value);
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(value);
  } else {
    static_assert(IsVector<T>::value, "unsupported option type");
    std::string out;
    for (const auto& item : value) {
      if (!out.empty()) out += ',';
      out += format_as(item, exact);
    }
    return out;
  }
}

template <class T>
const char* value_name_of() {
  if constexpr (std::is_same_v<T, std::string>) return "text";
  if constexpr (std::is_same_v<T, bool>) return "bool";
  if constexpr (std::is_same_v<T, double>) return "real";
  if constexpr (std::is_same_v<T, std::uint64_t>) return "uint";
  if constexpr (std::is_integral_v<T>) return "int";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a,b,...";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "x,y,...";
  if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) return "i,j,...";
  return "arg";
}

// ---------------------------------------------------------------------------------------------
// The key table: every field of every section, in struct order. Everything else (INI reader,
// command line, to_ini, help) is driven from it, so a new field is one line here.

struct Key {
  std::string section;
  std::string name;
  std::string meaning;
  std::string value_name;
  std::function<void(Config&, const std::string&)> set;  ///< throws BadValue
  std::function<std::string(const Config&, bool exact)> get;
  [[nodiscard]] std::string full() const { return section + "." + name; }
};

template <class Section, class T>
Key make_key(const char* section, const char* name, Section Config::*sub, T Section::*field, const char* meaning) {
  Key key;
  key.section = section;
  key.name = name;
  key.meaning = meaning;
  key.value_name = value_name_of<T>();
  key.set = [sub, field](Config& c, const std::string& text) { (c.*sub).*field = parse_as<T>(text); };
  key.get = [sub, field](const Config& c, bool exact) { return format_as<T>((c.*sub).*field, exact); };
  return key;
}

/// make_key for a text field whose syntax is checked as it is read (so an INI error names the
/// file and line): `check` throws simmer::Error, rethrown here as BadValue with its reason.
template <class Section>
Key make_checked_key(const char* section, const char* name, Section Config::*sub, std::string Section::*field,
                     const char* meaning, std::function<void(const std::string&)> check) {
  Key key = make_key(section, name, sub, field, meaning);
  key.set = [sub, field, check](Config& c, const std::string& text) {
    std::string value = parse_as<std::string>(text);
    try {
      check(value);
    } catch (const Error& e) {
      // option_error's text is "option 'k' = 'v': why": keep the reason.
      std::string why = e.what();
      const std::size_t colon = why.find("': ");
      throw BadValue(colon == std::string::npos ? why : why.substr(colon + 3));
    }
    (c.*sub).*field = std::move(value);
  };
  return key;
}

struct SectionInfo {
  const char* name;
  const char* caption;
};

constexpr std::array<SectionInfo, 6> kSections{{
    {"data", "[data] the data set and its train/test split"},
    {"model", "[model] the network"},
    {"adam", "[adam] Adam pre-training (retrofit mode)"},
    {"simmer", "[simmer] Nose-Hoover chain sampling and its temperature schedule"},
    {"ensemble", "[ensemble] which steps join the ensemble"},
    {"run", "[run] trajectories, seeds and output"},
}};

const std::vector<Key>& keys() {
  using C = Config;
  static const std::vector<Key> table = {
      // [data]
      make_key("data", "source", &C::data, &DataConfig::source,
               "csv (a file with a header row) | sine (y = sin(2 pi x) + noise on [-1, 1]) | idx "
               "(MNIST-format images: training rows from the train-* files, test rows from "
               "t10k-*) | higgs (UCI HIGGS CSV: label, 28 features, no header) | "
               "synthetic_higgs (generated, same shape; see include/simmer/data/higgs.hpp)"),
      make_key("data", "path", &C::data, &DataConfig::path,
               "csv, higgs: data file; idx: directory with {train,t10k}-{images-idx3,labels-idx1}"
               "-ubyte[.gz] (relative paths are relative to the working directory)"),
      make_key("data", "features", &C::data, &DataConfig::features,
               "csv: feature column names, comma-separated (e.g. sepal_width,petal_width), or * for "
               "every column but the target (and data.exclude), in file order"),
      make_key("data", "exclude", &C::data, &DataConfig::exclude,
               "csv with data.features = *: columns left out, comma-separated (e.g. an id or a name)"),
      make_key("data", "target", &C::data, &DataConfig::target, "csv: target column (class labels for classification)"),
      make_key("data", "task", &C::data, &DataConfig::task, "classification | regression"),
      make_key("data", "train", &C::data, &DataConfig::train, "training rows (0: use data.train_fraction)"),
      make_key("data", "test", &C::data, &DataConfig::test,
               "test rows (0 with data.train = 0: all rows not used for training)"),
      make_key("data", "train_fraction", &C::data, &DataConfig::train_fraction,
               "fraction of rows used for training when data.train = 0, in [0, 1)"),
      make_key("data", "split_seed", &C::data, &DataConfig::split_seed,
               "seed of the train/test split and the sine noise (shared by all trajectories)"),
      make_key("data", "sine_points", &C::data, &DataConfig::sine_points,
               "sine: number of equally spaced points on [-1, 1] (>= 2)"),
      make_key("data", "rows", &C::data, &DataConfig::rows,
               "higgs: rows read from the start of the file (0: all); synthetic_higgs: rows "
               "generated, seeded by data.split_seed (0: data.train + data.test)"),
      make_key("data", "sine_noise", &C::data, &DataConfig::sine_noise,
               "sine: standard deviation of the Gaussian noise on y (target units)"),
      make_checked_key("data", "delimiter", &C::data, &DataConfig::delimiter,
                       "csv: the field separator: one character (e.g. ; or |), or tab (also written \\t)",
                       [](const std::string& text) { (void)parse_delimiter(text); }),
      make_key("data", "missing", &C::data, &DataConfig::missing,
               "csv: the fields that mean 'no value', comma-separated, compared exactly after trimming "
               "(empty: the empty field); a row with one in a used column is dropped (the run prints "
               "how many and why); any other field of a numeric column must be a finite number; an "
               "empty list: every value must be present"),
      make_key("data", "missing_in_target", &C::data, &DataConfig::missing_in_target,
               "classification: true drops rows whose class label is one of data.missing; false "
               "(default) takes every label as a class, 'NA' included (a regression target is a "
               "number, so data.missing always applies to it)"),
      make_key("data", "stratify", &C::data, &DataConfig::stratify,
               "classification: true splits each class in proportion (seeded by data.split_seed), so "
               "every class has training and test rows; false (default): one random split"),
      make_key("data", "validation_fraction", &C::data, &DataConfig::validation_fraction,
               "share of the training rows held out as a validation set, in [0, 0.9] (0: none). Drawn "
               "from the training split with its own seeded stream (data.split_seed; stratified with "
               "data.stratify), so the test rows do not change; validation rows never enter a gradient, "
               "Adam or the thermostat and are scored like train and test. Needed to choose among "
               "candidate ensembles (simmer.ladder, ensemble.select_by)"),
      // [model]
      make_key("model", "architecture", &C::model, &ModelConfig::architecture,
               "layer widths, input first, '-'-separated (e.g. 2-100-50-50-3), or lenet5 (image "
               "data: conv 6@5x5 same, pool, conv 16@5x5 valid, pool, dense 120, 84, classes)"),
      make_key("model", "pooling", &C::model, &ModelConfig::pooling,
               "lenet5: average | max (2x2 pooling after each convolution)"),
      make_key("model", "activation", &C::model, &ModelConfig::activation,
               "hidden-layer activation: tanh | relu | elu | sigmoid | linear"),
      make_key("model", "output", &C::model, &ModelConfig::output,
               "output activation: tanh | relu | elu | sigmoid | linear (cce/bce take logits)"),
      make_key("model", "loss", &C::model, &ModelConfig::loss,
               "sse (sum of squares) | mse (mean) | cce (softmax cross-entropy) | bce (binary, "
               "from logits); in target units"),
      make_key("model", "init", &C::model, &ModelConfig::init,
               "weight initialiser: glorot_normal | glorot_uniform | modified_glorot_normal "
               "(biases 0)"),
      // [adam]
      make_key("adam", "epochs", &C::adam, &AdamConfig::epochs,
               "Adam epochs before simmering (retrofit: >= 2; unused in abinitio mode)"),
      make_key("adam", "lr", &C::adam, &AdamConfig::lr, "Adam learning rate (step size), > 0"),
      make_key("adam", "batch", &C::adam, &AdamConfig::batch, "mini-batch size in training rows (0: full batch)"),
      make_key("adam", "beta1", &C::adam, &AdamConfig::beta1, "decay rate of the first-moment estimate, in [0, 1)"),
      make_key("adam", "beta2", &C::adam, &AdamConfig::beta2, "decay rate of the second-moment estimate, in [0, 1)"),
      make_key("adam", "epsilon", &C::adam, &AdamConfig::epsilon, "denominator regulariser (Keras convention), > 0"),
      make_key("adam", "checkpoint_every", &C::adam, &AdamConfig::checkpoint_every,
               "epochs between checkpoints during Adam (<output>.ckpt; a resume continues mid-Adam; "
               "0: none before Adam's end)"),
      // [simmer]
      make_key("simmer", "mode", &C::simmer, &SimmerConfig::mode,
               "retrofit (Adam first, then simmer from its end point) | abinitio (simmer from "
               "the initialisation, velocity 0) | adam (Adam alone, no simmering: the run's ensemble is "
               "the deep ensemble of its trajectories' Adam end points, to compare an ab initio job with)"),
      make_key("simmer", "time_step", &C::simmer, &SimmerConfig::time_step,
               "integrator time step h (the paper's 'learning rate'), > 0"),
      make_key("simmer", "steps", &C::simmer, &SimmerConfig::steps, "number of simmering steps (full-batch gradients)"),
      make_key("simmer", "T_initial", &C::simmer, &SimmerConfig::T_initial, "temperature at step 0 (loss units), >= 0"),
      make_key("simmer", "T_target", &C::simmer, &SimmerConfig::T_target,
               "final temperature of the ramp (loss units), >= T_initial"),
      make_key("simmer", "dT", &C::simmer, &SimmerConfig::dT,
               "temperature increment per ramp stage (loss units; 0: constant T = T_initial)"),
      make_key("simmer", "every", &C::simmer, &SimmerConfig::every,
               "steps per ramp stage: T(step) = min(T_target, T_initial + dT * floor(step / "
               "every))"),
      make_key("simmer", "ladder", &C::simmer, &SimmerConfig::ladder,
               "a temperature ladder T_1,...,T_K (ascending, every T > 0, in simmer.temperature_unit: with "
               "posterior, multiples of T_Bayes) instead of the ramp: each trajectory simmers simmer.steps "
               "steps at each rung in turn, coldest first, starting where the last rung ended; every rung has "
               "its own window, members, ensemble and diagnostics (/ladder), and the run's ensemble is the "
               "candidate (a rung, or in retrofit mode the deep ensemble) with the best validation score "
               "(ensemble.select_by; needs data.validation_fraction > 0). T_initial, T_target, dT and every "
               "are not used. Empty: the ramp"),
      make_key("simmer", "chain_length", &C::simmer, &SimmerConfig::chain_length,
               "Nose-Hoover chain length N_c (>= 1)"),
      make_key("simmer", "thermostat", &C::simmer, &SimmerConfig::thermostat,
               "nose_hoover (the paper: one Nose-Hoover chain on the total kinetic energy) | "
               "langevin (friction and noise on every velocity: ergodic where one global chain "
               "is not, e.g. along flat directions under a prior; uses the trajectory's seed)"),
      make_key("simmer", "friction", &C::simmer, &SimmerConfig::friction,
               "thermostat = langevin: friction gamma per time unit (velocities decorrelate in "
               "~1/gamma), > 0"),
      make_checked_key("simmer", "masses", &C::simmer, &SimmerConfig::masses,
                       "thermostat masses: empty (all Q_k = 1, the paper) | Q_1,..,Q_Nc comma-separated "
                       "| martyna (Martyna-Tuckerman-Klein: Q_1 = N_f T tau^2, Q_k = T tau^2, at "
                       "T_target; needs T_target > 0)",
                       [](const std::string& text) { (void)parse_masses(text); }),
      make_key("simmer", "tau", &C::simmer, &SimmerConfig::tau,
               "masses = martyna: the thermostat's time scale tau (time units, like h), > 0"),
      make_key("simmer", "dof_offset", &C::simmer, &SimmerConfig::dof_offset,
               "degrees of freedom N_f = (number of parameters) - dof_offset"),
      make_key("simmer", "start_velocity", &C::simmer, &SimmerConfig::start_velocity,
               "auto (the paper: adam in retrofit mode, zero in abinitio) | adam (v = (x_last - "
               "x_previous)/h from Adam's last step; retrofit only) | zero | thermal "
               "(Maxwell-Boltzmann at the schedule's first T > 0, from the trajectory's seed)"),
      make_key("simmer", "start_jitter", &C::simmer, &SimmerConfig::start_jitter,
               "relative random change of every start velocity, v_i (1 + eps xi_i) with xi_i "
               "~ N(0, 1) from a stream of its own (0: none): shows whether outcomes are chaotic"),
      make_key("simmer", "prior", &C::simmer, &SimmerConfig::prior,
               "none (the paper: sample exp(-L/T), not normalisable along flat directions of "
               "the loss) | gaussian (sample exp(-L/T) N(x; 0, sigma^2): potential L + T "
               "|x|^2/(2 sigma^2); along a flat direction the positions' variance is sigma^2)"),
      make_key("simmer", "prior_sigma", &C::simmer, &SimmerConfig::prior_sigma,
               "prior = gaussian: its standard deviation sigma (units of the parameters; inputs "
               "and targets are scaled to [-1, 1]), > 0"),
      make_key("simmer", "prior_scaling", &C::simmer, &SimmerConfig::prior_scaling,
               "prior = gaussian: none (every parameter sigma) | fan_in (weights sigma / "
               "sqrt(fan_in), biases sigma: Neal's scaling, keeps pre-activations O(sigma))"),
      make_key("simmer", "temperature_unit", &C::simmer, &SimmerConfig::temperature_unit,
               "loss (T_initial, T_target, dT in loss units, the paper) | posterior (in units of "
               "the Bayesian temperature T_Bayes: T = 1 samples the posterior; cce/bce over n "
               "training rows: T_Bayes = 1/n; sse with noise sd s: 2 s^2; mse: 2 s^2/n; needs "
               "simmer.noise_sd for sse/mse)"),
      make_key("simmer", "noise_sd", &C::simmer, &SimmerConfig::noise_sd,
               "regression: standard deviation of the targets' Gaussian noise (target units; 0: "
               "unknown); gives T_Bayes for temperature_unit = posterior and the printed "
               "posterior reading of T"),
      make_key("simmer", "curvature_report", &C::simmer, &SimmerConfig::curvature_report,
               "start | start_end | off: count the loss-Hessian eigenvalues above T at the start "
               "point (and at the end) by stochastic Lanczos quadrature, with the harmonic "
               "loss-rise estimate"),
      make_key("simmer", "lanczos_steps", &C::simmer, &SimmerConfig::lanczos_steps,
               "curvature report: Lanczos steps per probe (2 gradients each), >= 2"),
      make_key("simmer", "lanczos_probes", &C::simmer, &SimmerConfig::lanczos_probes,
               "curvature report: random probe vectors, >= 1"),
      make_key("simmer", "on_divergence", &C::simmer, &SimmerConfig::on_divergence,
               "stop | warn: a trajectory whose loss or velocities turn NaN/inf, or whose kinetic "
               "temperature stays 100x off the target, stops (keeping its samples) or goes on"),
      make_key("simmer", "stability_check", &C::simmer, &SimmerConfig::stability_check,
               "refuse | warn | off: compare time_step with the leapfrog limit 2/sqrt(lambda_max) "
               "of the loss Hessian at the start point"),
      make_key("simmer", "health_every", &C::simmer, &SimmerConfig::health_every,
               "steps between a trajectory's health checks (kinetic temperature vs target)"),
      // [ensemble]
      make_key("ensemble", "window", &C::ensemble, &EnsembleConfig::window,
               "the last W steps of the run, from which members are drawn (<= simmer.steps)"),
      make_key("ensemble", "stride", &C::ensemble, &EnsembleConfig::stride,
               "every s-th step of the window, counted from its end"),
      make_key("ensemble", "count", &C::ensemble, &EnsembleConfig::count,
               "> 0: this many random steps of the window instead of the stride"),
      make_key("ensemble", "fraction", &C::ensemble, &EnsembleConfig::fraction,
               "> 0: round(fraction * window) random steps of the window instead, in [0, 1]"),
      make_key("ensemble", "blocks", &C::ensemble, &EnsembleConfig::blocks,
               "drift diagnostics: the window split into this many blocks of steps, each with "
               "its own ensemble metric (/diagnostics), >= 1"),
      make_key("ensemble", "store_every", &C::ensemble, &EnsembleConfig::store_every,
               "store every k-th member in /posterior (the aggregation uses all)"),
      make_key("ensemble", "store_dtype", &C::ensemble, &EnsembleConfig::store_dtype,
               "auto | float64 | float32: precision of /posterior/params on disk (auto: the run's "
               "run.precision; float32 halves the archive of a float64 run)"),
      make_key("ensemble", "points", &C::ensemble, &EnsembleConfig::points,
               "optional CSV of extra evaluation inputs (feature columns, raw units)"),
      make_key("ensemble", "track", &C::ensemble, &EnsembleConfig::track,
               "0-based test-set rows whose member predictions are kept, comma-separated"),
      make_key("ensemble", "select_by", &C::ensemble, &EnsembleConfig::select_by,
               "with simmer.ladder: nll (default) | metric | none: the validation score that chooses the run's "
               "ensemble among the rungs and (retrofit) the deep ensemble of the Adam end points: the mean "
               "negative log-likelihood, or the error rate (classification) / MSE (regression); none: no "
               "choice, the last rung is the run's ensemble"),
      make_key("ensemble", "select_rule", &C::ensemble, &EnsembleConfig::select_rule,
               "best (default: the lowest validation loss) | one_se (the first candidate, the deep ensemble "
               "then the rungs coldest first, within one standard error of the best, the error of the per-row "
               "differences: a choice that a small validation set's noise moves less)"),
      // [run]
      make_key("run", "trajectories", &C::run, &RunConfig_::trajectories,
               "independent trajectories (0: one per MPI rank); trajectory i runs on rank i mod "
               "size"),
      make_key("run", "seed", &C::run, &RunConfig_::seed,
               "master seed: trajectory i's initialisation derives from (seed, i)"),
      make_key("run", "gather_interval", &C::run, &RunConfig_::gather_interval,
               "simmering steps between gathers to rank 0 (and archive writes)"),
      make_key("run", "trace_every", &C::run, &RunConfig_::trace_every,
               "record losses in /trace every k steps (or Adam epochs)"),
      make_key("run", "output", &C::run, &RunConfig_::output,
               "HDF5 archive path (an existing file is kept unless --overwrite)"),
      make_key("run", "progress_seconds", &C::run, &RunConfig_::progress_seconds,
               "minimum seconds between progress lines when stdout is not a terminal"),
      make_key("run", "progress", &C::run, &RunConfig_::progress,
               "auto | bar | lines: a redrawn bar on a terminal, plain lines for logs (auto looks "
               "at where mpirun's own output goes)"),
      make_key("run", "checkpoint_interval", &C::run, &RunConfig_::checkpoint_interval,
               "simmering steps between checkpoints (<output>.ckpt; 0: only after Adam)"),
      make_key("run", "sync_every", &C::run, &RunConfig_::sync_every,
               "steps (and Adam epochs) between the ranks' collective check for SIGTERM/SIGUSR1 "
               "(checkpoint + exit)"),
      make_checked_key("run", "memory_limit", &C::run, &RunConfig_::memory_limit,
                       "auto | off | a size like 16G: a run whose estimated peak memory on a node "
                       "exceeds this is refused before any work (auto: the node's available memory, "
                       "or its cgroup/SLURM limit when lower)",
                       [](const std::string& text) { (void)parse_memory_limit(text); }),
      make_key("run", "ranks_per_trajectory", &C::run, &RunConfig_::ranks_per_trajectory,
               "k: groups of k ranks evaluate each of their trajectories' full-batch gradient together, "
               "each on its share of the rows (a power of two dividing the rank count; may change on "
               "--resume)"),
      make_key("run", "gradient_chunks", &C::run, &RunConfig_::gradient_chunks,
               "the full-batch gradient as a fixed tree sum of this many row blocks (a power of two >= "
               "run.ranks_per_trajectory; 0: equal to it). Runs with the same value have the same bits "
               "for every k dividing it; 1 is the plain full batch"),
      make_key("run", "precision", &C::run, &RunConfig_::precision,
               "float64 | float32: the scalar of the network, its loss and gradient, Adam and the "
               "particle update (the thermostat, energies and ensemble accumulators stay float64). "
               "float32 is about twice as fast on large networks and is TensorFlow's default"),
  };
  return table;
}

const Key* find_key(const std::string& full) {
  for (const Key& k : keys()) {
    if (k.full() == full) return &k;
  }
  return nullptr;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// " (did you mean 'x'?)" for the closest candidate within edit distance 2, else "".
std::string suggestion(const std::string& given, const std::vector<std::string>& candidates,
                       const std::string& prefix = "") {
  const std::string* best = nullptr;
  std::size_t best_distance = 3;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(given, c);
    if (d < best_distance) {
      best_distance = d;
      best = &c;
    }
  }
  return best ? " (did you mean '" + prefix + *best + "'?)" : "";
}

std::vector<std::string> all_key_names() {
  std::vector<std::string> names;
  for (const Key& k : keys()) names.push_back(k.full());
  return names;
}

// ---------------------------------------------------------------------------------------------
// Program_options descriptions (help and command line).

po::options_description general_options() {
  po::options_description general("General options", 100, 50);
  general.add_options()                                                  //
      ("help,h", "print this help and exit")                             //
      ("config", po::value<std::string>()->value_name("FILE"),           //
       "INI configuration file ([section] headers, key = value lines)")  //
      ("output", po::value<std::string>()->value_name("PATH"),           //
       "HDF5 archive path (same as --run.output)")                       //
      ("overwrite", "replace an existing output archive")                //
      ("estimate",
       "print the archive size and peak memory per rank the run needs (and "
       "whether the output's file system has the room), then exit without running")  //
      ("resume", po::value<std::string>()->value_name("ARCHIVE"),                    //
       "continue the run of ARCHIVE from its last checkpoint (ARCHIVE.ckpt)");
  return general;
}

po::options_description section_options(const SectionInfo& section) {
  const Config defaults;
  po::options_description desc(section.caption, 100, 50);
  for (const Key& k : keys()) {
    if (k.section != section.name) continue;
    const std::string shown = k.get(defaults, false);
    desc.add_options()(
        k.full().c_str(),
        po::value<std::string>()->default_value(shown, shown.empty() ? "\"\"" : shown)->value_name(k.value_name),
        k.meaning.c_str());
  }
  return desc;
}

// ---------------------------------------------------------------------------------------------
// INI reader.

[[noreturn]] void ini_error(const std::string& origin, std::size_t line, const std::string& why) {
  throw Error(origin + ":" + std::to_string(line) + ": " + why);
}

/// The value after '=': trimmed, a trailing " # comment" removed, and surrounding double quotes
/// removed (so a value may keep leading blanks or contain " #"). Inside quotes "" stands for
/// one quote (as in CSV), so every string has exactly one quoted spelling and to_ini's output
/// reads back unchanged (a lone inner quote followed by '#' once ended the value early: found
/// by tests/fuzz/fuzz_config). Returns false when the quote is not closed or text other than a
/// comment follows it.
bool ini_value(const std::string& raw, std::string& value) {
  const std::string text = trim(raw);
  if (!text.empty() && text.front() == '"') {
    std::string unquoted;
    for (std::size_t q = 1; q < text.size(); ++q) {
      if (text[q] != '"') {
        unquoted += text[q];
      } else if (q + 1 < text.size() && text[q + 1] == '"') {
        unquoted += '"';
        ++q;
      } else {
        const std::string rest = trim(text.substr(q + 1));
        if (!rest.empty() && rest.front() != '#') return false;
        value = std::move(unquoted);
        return true;
      }
    }
    return false;
  }
  std::size_t comment = std::string::npos;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '#' && (i == 0 || is_space(text[i - 1]))) {
      comment = i;
      break;
    }
  }
  value = trim(text.substr(0, comment));
  return true;
}

/// to_ini's inverse of ini_value: quote a string that would not otherwise survive reading.
std::string ini_quote(const std::string& s) {
  const bool needs =
      !s.empty() && (is_space(s.front()) || is_space(s.back()) || s.front() == '"' || s.find('#') != std::string::npos);
  if (!needs) return s;
  std::string quoted = "\"";
  for (const char c : s) {
    quoted += c;
    if (c == '"') quoted += '"';
  }
  return quoted + '"';
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error("config file '" + path + "' does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw Error("config file '" + path + "' is a directory, not an INI file");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) throw Error("config file '" + path + "' cannot be read");
  return text.str();
}

// ---------------------------------------------------------------------------------------------
// Validation helpers.

std::string str(double v) { return format_short(v); }
std::string str(std::int64_t v) { return std::to_string(v); }

void require(bool ok, const std::string& key, const std::string& value, const std::string& why) {
  if (!ok) throw option_error(key, value, why);
}

void require_finite(double v, const std::string& key) {
  require(std::isfinite(v), key, str(v), "must be a finite number");
}

/// An enum-backed key: one of the enum's names (core/names.hpp).
template <class E, std::size_t N>
void require_one_of(const std::string& value, const std::string& key, const Names<E, N>& names) {
  if (!names.contains(value)) throw option_error(key, value, "must be one of " + names.choices(" | "));
}

void require_one_of(const std::string& value, const std::string& key, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    list += list.empty() ? "" : " | ";
    list += a;
  }
  throw option_error(key, value, "must be one of " + list);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::size_t apply_ini(const std::string& text, const std::string& origin, Config& config) {
  std::vector<std::string> section_names;
  for (const SectionInfo& s : kSections) section_names.emplace_back(s.name);

  std::map<std::string, std::size_t> first_line;  // full key -> line it was set on
  std::string section;
  std::istringstream in(text);
  std::string raw;
  std::size_t line = 0;
  while (std::getline(in, raw)) {
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (line == 1 && raw.rfind("\xEF\xBB\xBF", 0) == 0) raw.erase(0, 3);  // UTF-8 BOM
    const std::string trimmed = trim(raw);
    if (trimmed.empty() || trimmed.front() == '#' || trimmed.front() == ';') continue;

    if (trimmed.front() == '[') {
      if (trimmed.back() != ']') {
        ini_error(origin, line, "malformed section header '" + trimmed + "' (expected [name])");
      }
      const std::string name = trim(trimmed.substr(1, trimmed.size() - 2));
      if (std::find(section_names.begin(), section_names.end(), name) == section_names.end()) {
        ini_error(origin, line,
                  "unknown section [" + name + "]" + suggestion(name, section_names) +
                      "; sections are [data] [model] [adam] [simmer] [ensemble] [run]");
      }
      section = name;
      continue;
    }

    const std::size_t eq = trimmed.find('=');
    const std::string name = eq == std::string::npos ? "" : trim(trimmed.substr(0, eq));
    std::string value;
    if (name.empty() || !ini_value(trimmed.substr(eq + 1), value)) {
      ini_error(origin, line, "malformed line '" + trimmed + "' (expected key = value)");
    }
    if (section.empty()) ini_error(origin, line, "key outside of any [section]");

    const std::string full = section + "." + name;
    const Key* key = find_key(full);
    if (key == nullptr) {
      ini_error(origin, line, "unknown key '" + full + "'" + suggestion(full, all_key_names()));
    }
    const auto [it, inserted] = first_line.emplace(full, line);
    if (!inserted) {
      ini_error(origin, line, "duplicate key '" + full + "' (first set on line " + std::to_string(it->second) + ")");
    }
    try {
      key->set(config, value);
    } catch (const BadValue& e) {
      ini_error(origin, line, full + " = '" + value + "': " + e.what());
    }
  }
  return first_line.size();
}

Invocation parse_command_line(int argc, const char* const* argv, const Config* base) {
  Invocation inv;
  if (base != nullptr) inv.config = *base;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) inv.command_line += ' ';
    inv.command_line += argv[i];
  }

  po::options_description all;
  all.add(general_options());
  for (const SectionInfo& s : kSections) all.add(section_options(s));
  // Stray words are collected so the error can name them.
  po::options_description hidden;
  hidden.add_options()("positional-arguments", po::value<std::vector<std::string>>());
  all.add(hidden);
  po::positional_options_description positional;
  positional.add("positional-arguments", -1);

  po::variables_map vm;
  try {
    // No abbreviations: "--simmer.T" must not silently mean "--simmer.T_target".
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).style(style).run(), vm);
  } catch (const po::unknown_option& e) {
    std::string name = e.get_option_name();
    const std::string bare = name.rfind("--", 0) == 0 ? name.substr(2) : name;
    throw Error("command line: unknown option '" + name + "'" + suggestion(bare, all_key_names(), "--") +
                " (see --help)");
  } catch (const po::error& e) {
    throw Error(std::string("command line: ") + e.what());
  }

  if (vm.count("positional-arguments") != 0) {
    const auto& words = vm["positional-arguments"].as<std::vector<std::string>>();
    throw Error("command line: unexpected argument '" + words.front() +
                "' (options are --config FILE and --section.key value; see --help)");
  }
  if (vm.count("help") != 0) {
    inv.help = true;
    inv.help_text = help_text();
    return inv;
  }
  inv.overwrite = vm.count("overwrite") != 0;
  inv.estimate_only = vm.count("estimate") != 0;
  if (vm.count("resume") != 0) {
    inv.resume_path = vm["resume"].as<std::string>();
    if (inv.resume_path.empty()) throw Error("command line: --resume needs an archive name");
  }
  if (vm.count("config") != 0) {
    inv.config_given = true;
    inv.config_path = vm["config"].as<std::string>();
    if (inv.config_path.empty()) throw Error("command line: --config needs a file name");
    // A file that sets nothing (empty, or only comments and headers) would run the defaults'
    // sine job without a word: most likely the wrong file.
    if (apply_ini(read_file(inv.config_path), inv.config_path, inv.config) == 0) {
      throw Error("config file '" + inv.config_path +
                  "' sets no keys (it is empty or holds only comments and section headers); name a "
                  "file with the run's [data], [model], ... keys (see --help)");
    }
  }

  const auto apply_override = [&inv](const Key& key, const std::string& option, const std::string& value) {
    try {
      key.set(inv.config, value);
    } catch (const BadValue& e) {
      throw Error("command line: " + option + " = '" + value + "': " + e.what());
    }
  };
  for (const Key& key : keys()) {
    const std::string full = key.full();
    const auto it = vm.find(full);
    if (it == vm.end() || it->second.defaulted()) continue;
    inv.config_given = true;
    apply_override(key, "--" + full, it->second.as<std::string>());
  }
  if (vm.count("output") != 0) {
    const auto run_output = vm.find("run.output");
    if (run_output != vm.end() && !run_output->second.defaulted()) {
      throw Error("command line: --output and --run.output both given: give one");
    }
    apply_override(*find_key("run.output"), "--output", vm["output"].as<std::string>());
  }
  return inv;
}

static Config validated_unmapped(const Config& config, int world_size);

Config validated(const Config& config, int world_size) {
  return with_keys([&] { return validated_unmapped(config, world_size); });
}

static Config validated_unmapped(const Config& config, int world_size) {
  if (world_size < 1) throw Error("validated: world_size must be >= 1");
  Config c = config;
  const auto& d = c.data;
  const auto& m = c.model;
  const auto& a = c.adam;
  const auto& s = c.simmer;
  auto& e = c.ensemble;
  auto& r = c.run;

  // [data]
  require_one_of(d.source, "data.source", {"csv", "sine", "idx", "higgs", "synthetic_higgs"});
  if (d.source == "idx" || d.source == "higgs") {
    require(!d.path.empty(), "data.path", d.path,
            "is required when data.source = " + d.source +
                (d.source == "idx" ? " (the directory of the IDX files, e.g. "
                                     "/usr/share/datasets/fashion-mnist)"
                                   : " (the HIGGS CSV file)"));
  }
  if (d.source == "idx" || d.source == "higgs" || d.source == "synthetic_higgs") {
    require(d.task == "classification", "data.task", d.task, "must be classification when data.source = " + d.source);
  }
  require(d.rows >= 0, "data.rows", str(d.rows), "must be >= 0");
  if (d.source == "csv") {
    require(!d.path.empty(), "data.path", d.path, "is required when data.source = csv");
    require(!d.features.empty(), "data.features", "", "needs at least one feature column when data.source = csv");
    require(!d.target.empty(), "data.target", d.target, "is required when data.source = csv");
    std::set<std::string> seen;
    const bool all_features = d.features == std::vector<std::string>{"*"};
    for (const std::string& f : d.features) {
      require(seen.insert(f).second, "data.features", format_as(d.features, false), "lists column '" + f + "' twice");
      require(f != d.target, "data.features", format_as(d.features, false),
              "contains the target column '" + d.target + "'");
      require(all_features || f != "*", "data.features", format_as(d.features, false),
              "'*' (every column but the target) stands alone; leave columns out with data.exclude");
    }
    require(d.exclude.empty() || all_features, "data.exclude", format_as(d.exclude, false),
            "is used only with data.features = * (named features need no exclusion)");
    (void)parse_delimiter(d.delimiter);
  }
  if (d.stratify) {
    require(d.task == "classification", "data.stratify", "true", "needs data.task = classification (classes to keep)");
    require(d.source != "idx", "data.stratify", "true",
            "does not apply to data.source = idx (training and test images come from their own files)");
  }
  require_one_of(d.task, "data.task", data::kTaskNames);
  require(d.train >= 0, "data.train", str(d.train), "must be >= 0 (0: use data.train_fraction)");
  require(d.test >= 0, "data.test", str(d.test), "must be >= 0");
  require_finite(d.train_fraction, "data.train_fraction");
  require(d.train_fraction >= 0.0 && d.train_fraction < 1.0, "data.train_fraction", str(d.train_fraction),
          "must be in [0, 1)");
  require(d.train > 0 || d.train_fraction > 0.0, "data.train", str(d.train),
          "is 0 and data.train_fraction is 0: give a training size");
  require_finite(d.validation_fraction, "data.validation_fraction");
  require(d.validation_fraction >= 0.0 && d.validation_fraction <= 0.9, "data.validation_fraction",
          str(d.validation_fraction), "must be in [0, 0.9] (0: no validation set)");
  require(d.sine_points >= 2 && d.sine_points <= 100000000, "data.sine_points", str(d.sine_points),
          "must be in [2, 1e8]");
  require(d.source != "synthetic_higgs" || d.rows <= 100000000, "data.rows", str(d.rows),
          "must be <= 1e8 generated rows (23 GB of features)");
  require_finite(d.sine_noise, "data.sine_noise");
  require(d.sine_noise >= 0.0, "data.sine_noise", str(d.sine_noise), "must be >= 0");

  // [model]
  // lenet5's input and output sizes follow from the data (checked when it is loaded).
  const bool convnet = m.architecture == "lenet5";
  require_one_of(m.pooling, "model.pooling", model::kPoolNames);
  if (convnet) {
    require(d.source == "idx", "model.architecture", m.architecture,
            "needs image data (data.source = idx), not data.source = " + d.source);
    require(m.loss == "cce", "model.loss", m.loss, "lenet5 gives one logit per class: use cce");
  }
  std::vector<Index> widths = {1, 2};
  if (!convnet) try {
      widths = model::parse_widths(m.architecture);
    } catch (const Error& err) {
      // parse_widths already quotes the text; keep only the reason.
      std::string why = err.what();
      const std::string quoted = "architecture '" + m.architecture + "': ";
      if (why.rfind(quoted, 0) == 0) why.erase(0, quoted.size());
      throw option_error("model.architecture", m.architecture, why);
    }
  require_one_of(m.activation, "model.activation", model::kActivationNames);
  require_one_of(m.output, "model.output", model::kActivationNames);
  require_one_of(m.loss, "model.loss", model::kLossNames);
  require_one_of(m.init, "model.init", model::kInitNames);
  if (d.task == "classification") {
    require(m.loss == "cce" || m.loss == "bce", "model.loss", m.loss, "classification needs cce or bce");
  } else {
    require(m.loss == "sse" || m.loss == "mse", "model.loss", m.loss, "regression needs sse or mse");
  }
  const Index outputs = widths.back();
  if (m.loss == "cce" && !convnet) {
    require(outputs >= 2, "model.architecture", m.architecture, "cce needs one output per class (>= 2 outputs)");
  }
  if (m.loss == "bce") {
    require(outputs == 1, "model.architecture", m.architecture, "bce needs a single output (the logit of class 1)");
  }
  // Counted in double: a width near INT64_MAX must not overflow here (UB) or in the model's
  // own Index arithmetic later, so absurd sizes stop here with the key and the count.
  // lenet5 on 28x28x1 images and 10 classes (other image sizes give other counts:
  // run::build_problem checks the degrees of freedom again once the data is loaded).
  double parameters = convnet ? 61706.0 : 0.0;
  for (std::size_t i = 0; !convnet && i + 1 < widths.size(); ++i) {
    parameters += (static_cast<double>(widths[i]) + 1.0) * static_cast<double>(widths[i + 1]);
  }
  constexpr double kMaxParameters = 1e9;  // 8 GB per parameter vector in float64
  require(
      parameters <= kMaxParameters, "model.architecture", m.architecture,
      "has " + format_short(parameters) + " parameters; at most " + format_short(kMaxParameters) + " are supported");

  // [adam]
  require(a.epochs >= 0, "adam.epochs", str(a.epochs), "must be >= 0");
  require_finite(a.lr, "adam.lr");
  require(a.lr > 0.0, "adam.lr", str(a.lr), "must be > 0");
  require(a.batch >= 0, "adam.batch", str(a.batch), "must be >= 0 (0: full batch)");
  require_finite(a.beta1, "adam.beta1");
  require(a.beta1 >= 0.0 && a.beta1 < 1.0, "adam.beta1", str(a.beta1), "must be in [0, 1)");
  require_finite(a.beta2, "adam.beta2");
  require(a.beta2 >= 0.0 && a.beta2 < 1.0, "adam.beta2", str(a.beta2), "must be in [0, 1)");
  require_finite(a.epsilon, "adam.epsilon");
  require(a.epsilon > 0.0, "adam.epsilon", str(a.epsilon), "must be > 0");
  require(a.checkpoint_every >= 0, "adam.checkpoint_every", str(a.checkpoint_every),
          "must be >= 0 (0: none during Adam)");

  // [simmer]
  require_one_of(s.mode, "simmer.mode", {"retrofit", "abinitio", "adam"});
  if (s.mode == "retrofit") {
    require(a.epochs >= 2, "adam.epochs", str(a.epochs),
            "must be >= 2 in retrofit mode (the last two Adam iterates give the start velocity)");
  }
  if (s.mode == "adam") require(a.epochs >= 1, "adam.epochs", str(a.epochs), "must be >= 1 with simmer.mode = adam");
  const bool ladder = !s.ladder.empty();
  for (std::size_t k = 0; k < s.ladder.size(); ++k) {
    require(std::isfinite(s.ladder[k]) && s.ladder[k] > 0.0, "simmer.ladder", format_as(s.ladder, false),
            "rung " + std::to_string(k + 1) + " (" + str(s.ladder[k]) + ") must be a finite temperature > 0");
    require(k == 0 || s.ladder[k] > s.ladder[k - 1], "simmer.ladder", format_as(s.ladder, false),
            "must be ascending (coldest first): rung " + std::to_string(k + 1) + " = " + str(s.ladder[k]) +
                " is not above rung " + std::to_string(k) + " = " + (k > 0 ? str(s.ladder[k - 1]) : ""));
  }
  require(s.ladder.size() <= 1000, "simmer.ladder", format_as(s.ladder, false), "has more than 1000 rungs");
  require(!ladder || s.mode != "adam", "simmer.ladder", format_as(s.ladder, false),
          "has no use with simmer.mode = adam (no simmering)");
  require_one_of(e.select_by, "ensemble.select_by", ensemble::kSelectByNames);
  require_one_of(e.select_rule, "ensemble.select_rule", ensemble::kSelectRuleNames);
  if (ladder && e.select_by != "none") {
    require(d.validation_fraction > 0.0, "data.validation_fraction", str(d.validation_fraction),
            "is 0, but simmer.ladder chooses its ensemble on the validation set (ensemble.select_by = " + e.select_by +
                "): hold out a validation set (e.g. data.validation_fraction = 0.2), or set ensemble.select_by = "
                "none to keep every rung without choosing");
  }
  require_finite(s.time_step, "simmer.time_step");
  require(s.time_step > 0.0, "simmer.time_step", str(s.time_step), "must be > 0");
  // A step this small would take over 1e12 steps to move a parameter by one unit (and below
  // ~1e-308 it is not even a normal double): a typo, not a choice.
  require(s.time_step >= 1e-12, "simmer.time_step", str(s.time_step), "must be >= 1e-12");
  require(s.steps > 0, "simmer.steps", str(s.steps), "must be > 0");
  if (!ladder) {  // a ladder replaces the ramp: its keys are not used
    require_finite(s.T_initial, "simmer.T_initial");
    require(s.T_initial >= 0.0, "simmer.T_initial", str(s.T_initial), "must be >= 0");
    require_finite(s.T_target, "simmer.T_target");
    require(s.T_target >= s.T_initial, "simmer.T_target", str(s.T_target),
            "is below simmer.T_initial = " + str(s.T_initial) + " (the ramp only rises)");
    require_finite(s.dT, "simmer.dT");
    require(s.dT >= 0.0, "simmer.dT", str(s.dT), "must be >= 0 (0: constant temperature)");
    require(s.dT > 0.0 || s.T_target == s.T_initial, "simmer.dT", str(s.dT),
            "is 0 but simmer.T_target != simmer.T_initial: give an increment or set them equal");
    require(s.every > 0, "simmer.every", str(s.every), "must be > 0");
    train::StepRamp{s.T_initial, s.T_target, s.dT, s.every}.validate();
  }
  // The highest temperature the run reaches (> 0 where one is needed).
  const double hottest = ladder ? s.ladder.back() : s.T_target;
  require(s.chain_length >= 1, "simmer.chain_length", std::to_string(s.chain_length), "must be >= 1");
  // Chains of 3-10 links are what the literature uses; the archive records one mass per link in
  // an attribute, which HDF5 limits to 64 kB.
  require(s.chain_length <= 1000, "simmer.chain_length", std::to_string(s.chain_length), "must be <= 1000");
  const MassSpec masses = parse_masses(s.masses);
  if (!masses.values.empty()) {
    require(masses.values.size() == static_cast<std::size_t>(s.chain_length), "simmer.masses", s.masses,
            "needs one mass per chain link (simmer.chain_length = " + std::to_string(s.chain_length) + ") or none");
    for (const double q : masses.values) {
      require(std::isfinite(q) && q > 0.0, "simmer.masses", s.masses, "every mass must be a finite number > 0");
    }
  }
  require_one_of(s.thermostat, "simmer.thermostat", train::kThermostatNames);
  require_finite(s.friction, "simmer.friction");
  require(s.friction > 0.0, "simmer.friction", str(s.friction), "must be > 0");
  require_finite(s.tau, "simmer.tau");
  require(s.tau > 0.0, "simmer.tau", str(s.tau), "must be > 0");
  if (masses.martyna) {
    require(hottest > 0.0, "simmer.masses", s.masses,
            "martyna masses Q = N_f T tau^2 need simmer.T_target > 0 (they are set at the "
            "target temperature)");
  }
  require_one_of(s.start_velocity, "simmer.start_velocity", {"auto", "adam", "zero", "thermal"});
  if (s.start_velocity == "adam") {
    require(s.mode == "retrofit", "simmer.start_velocity", s.start_velocity,
            "needs simmer.mode = retrofit (ab initio runs have no Adam step)");
  }
  if (s.start_velocity == "thermal") {
    require(hottest > 0.0, "simmer.start_velocity", s.start_velocity,
            "needs a temperature > 0 somewhere in the schedule (simmer.T_target = 0)");
  }
  require_finite(s.start_jitter, "simmer.start_jitter");
  require(std::abs(s.start_jitter) < 1.0, "simmer.start_jitter", str(s.start_jitter),
          "must be a small relative change, |eps| < 1");
  require_one_of(s.prior, "simmer.prior", {"none", "gaussian"});
  require_finite(s.prior_sigma, "simmer.prior_sigma");
  require(s.prior_sigma > 0.0, "simmer.prior_sigma", str(s.prior_sigma), "must be > 0");
  require_one_of(s.prior_scaling, "simmer.prior_scaling", train::kPriorScalingNames);
  require_one_of(s.temperature_unit, "simmer.temperature_unit", {"loss", "posterior"});
  require_finite(s.noise_sd, "simmer.noise_sd");
  require(s.noise_sd >= 0.0, "simmer.noise_sd", str(s.noise_sd), "must be >= 0 (0: unknown)");
  if (s.temperature_unit == "posterior" && (m.loss == "sse" || m.loss == "mse")) {
    require(s.noise_sd > 0.0, "simmer.noise_sd", str(s.noise_sd),
            "must be > 0 with simmer.temperature_unit = posterior and model.loss = " + m.loss +
                " (T_Bayes = " + (m.loss == "sse" ? "2 s^2" : "2 s^2 / n") +
                " needs the noise sd s; e.g. the RMSE of a fit, printed after Adam)");
  }
  require_one_of(s.curvature_report, "simmer.curvature_report", run::kCurvatureReportNames);
  require(s.lanczos_steps >= 2 && s.lanczos_steps <= 1000, "simmer.lanczos_steps", std::to_string(s.lanczos_steps),
          "must be in [2, 1000] (each step keeps a vector of every parameter)");
  require(s.lanczos_probes >= 1 && s.lanczos_probes <= 1000, "simmer.lanczos_probes", std::to_string(s.lanczos_probes),
          "must be in [1, 1000]");
  require_finite(s.dof_offset, "simmer.dof_offset");
  require(parameters - s.dof_offset > 0.0, "simmer.dof_offset", str(s.dof_offset),
          "leaves no degrees of freedom for the " + format_short(parameters) + " parameters of " + m.architecture);
  train::NhcOptions{s.time_step, s.chain_length, masses.values, s.dof_offset, {}}.validate();

  // [ensemble]
  require(e.window > 0, "ensemble.window", str(e.window), "must be > 0");
  require(e.window <= s.steps, "ensemble.window", str(e.window),
          "is longer than the run (simmer.steps = " + str(s.steps) + ")");
  require(e.stride > 0, "ensemble.stride", str(e.stride), "must be > 0");
  require_finite(e.fraction, "ensemble.fraction");
  require(e.fraction >= 0.0 && e.fraction <= 1.0, "ensemble.fraction", str(e.fraction), "must be in [0, 1]");
  require(e.count >= 0 && e.count <= e.window, "ensemble.count", str(e.count),
          "must be in [0, ensemble.window = " + str(e.window) + "]");
  require(e.count == 0 || e.fraction == 0.0, "ensemble.fraction", str(e.fraction),
          "and ensemble.count = " + str(e.count) + " are both set: give one");
  ensemble::SamplingOptions{e.window, e.stride, e.count, e.fraction}.validate(s.steps);
  require(e.blocks >= 1 && e.blocks <= e.window, "ensemble.blocks", str(e.blocks),
          "must be in [1, ensemble.window = " + str(e.window) + "]");
  require(e.store_every >= 1, "ensemble.store_every", str(e.store_every), "must be >= 1");
  require_one_of(e.store_dtype, "ensemble.store_dtype", {"auto", "float64", "float32"});
  require_one_of(r.precision, "run.precision", kPrecisionNames);
  if (e.store_dtype == "auto") e.store_dtype = r.precision;
  for (const std::int64_t row : e.track) {
    require(row >= 0, "ensemble.track", format_as(e.track, false), "test-row index " + str(row) + " is negative");
  }

  // [run]
  const auto power_of_two = [](std::int64_t v) { return v >= 1 && (v & (v - 1)) == 0; };
  require(power_of_two(r.ranks_per_trajectory), "run.ranks_per_trajectory", str(r.ranks_per_trajectory),
          "must be a power of two (1, 2, 4, ...)");
  require(world_size % r.ranks_per_trajectory == 0, "run.ranks_per_trajectory", str(r.ranks_per_trajectory),
          "must divide the number of MPI ranks (" + std::to_string(world_size) + ")");
  if (r.gradient_chunks == 0) r.gradient_chunks = r.ranks_per_trajectory;
  require(power_of_two(r.gradient_chunks) && r.gradient_chunks >= r.ranks_per_trajectory, "run.gradient_chunks",
          str(r.gradient_chunks),
          "must be a power of two >= run.ranks_per_trajectory = " + str(r.ranks_per_trajectory) + " (0: equal to it)");
  require(r.gradient_chunks <= 65536, "run.gradient_chunks", str(r.gradient_chunks), "must be <= 65536");
  require(r.trajectories >= 0, "run.trajectories", str(r.trajectories),
          "must be >= 0 (0: one per group of run.ranks_per_trajectory ranks)");
  if (r.trajectories == 0) r.trajectories = world_size / r.ranks_per_trajectory;
  require(r.gather_interval > 0, "run.gather_interval", str(r.gather_interval), "must be > 0");
  require(r.checkpoint_interval >= 0, "run.checkpoint_interval", str(r.checkpoint_interval),
          "must be >= 0 (0: checkpoint only after the Adam phase)");
  require(r.sync_every > 0, "run.sync_every", str(r.sync_every), "must be > 0");
  require_one_of(r.progress, "run.progress", run::kProgressNames);
  require_one_of(s.on_divergence, "simmer.on_divergence", run::kOnDivergenceNames);
  require_one_of(s.stability_check, "simmer.stability_check", run::kStabilityCheckNames);
  require(s.health_every > 0, "simmer.health_every", str(s.health_every), "must be > 0");
  require(r.trace_every > 0, "run.trace_every", str(r.trace_every), "must be > 0");
  require(!r.output.empty(), "run.output", r.output, "must name the output archive");
  require_finite(r.progress_seconds, "run.progress_seconds");
  require(r.progress_seconds >= 0.0, "run.progress_seconds", str(r.progress_seconds), "must be >= 0");

  // Sizes no machine holds are refused here, before the estimate multiplies them in 64-bit
  // integers (run/budget.cpp): every product it forms then stays far below 2^63.
  constexpr double kMaxCount = 1e12, kMaxBytes = 1e17;  // a trillion steps; 100 PB
  require(static_cast<double>(s.steps) <= kMaxCount, "simmer.steps", str(s.steps), "must be <= 1e12");
  require(static_cast<double>(a.epochs) <= kMaxCount, "adam.epochs", str(a.epochs), "must be <= 1e12");
  require(static_cast<double>(r.trajectories) <= 1e7, "run.trajectories", str(r.trajectories), "must be <= 1e7");
  // Every stage's (one per ladder rung, none for Adam alone).
  const double stages = s.mode == "adam" ? 0.0 : (ladder ? static_cast<double>(s.ladder.size()) : 1.0);
  const double members =
      stages * static_cast<double>(ensemble::member_count(s.steps, {e.window, e.stride, e.count, e.fraction}));
  const double chains = static_cast<double>(r.trajectories);
  const double stored = std::ceil(members / static_cast<double>(e.store_every));
  const double posterior = chains * stored * parameters * (e.store_dtype == "float32" ? 4.0 : 8.0);
  const double trace =
      chains *
      ((stages * static_cast<double>(s.steps) + static_cast<double>(a.epochs)) / static_cast<double>(r.trace_every)) *
      256.0;
  const double tracked = chains * members * static_cast<double>(e.track.size()) * 8.0 * 16.0;
  const double state = chains * parameters * 24.0 + members * 40.0;
  const auto petabytes = [](double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", bytes / 1e15);
    return std::string(buf);
  };
  const auto refuse_size = [&](double bytes, const std::string& key, const std::string& value, const std::string& what,
                               const std::string& change) {
    require(bytes <= kMaxBytes, key, value,
            "makes " + what + " of about " + petabytes(bytes) + " PB; at most 100 PB is accepted (" + change + ")");
  };
  // Every member is evaluated on the data and its series held in memory.
  require(members <= 1e8, "ensemble.window", str(e.window),
          "with ensemble.stride = " + str(e.stride) + " gives " + format_short(members) +
              " members per trajectory; at most 1e8 (a larger ensemble.stride, or ensemble.count)");
  refuse_size(posterior, "run.trajectories", str(r.trajectories), "/posterior/params",
              "fewer trajectories, a larger ensemble.store_every, ensemble.count or a smaller model.architecture");
  refuse_size(trace, "run.trace_every", str(r.trace_every), "the traces",
              "a larger run.trace_every or fewer simmer.steps");
  refuse_size(tracked, "ensemble.track", format_as(e.track, false), "the tracked predictions",
              "fewer tracked rows or members");
  refuse_size(state, "run.trajectories", str(r.trajectories), "the checkpoint",
              "fewer trajectories or a smaller model.architecture");
  return c;
}

std::string key_of(const std::string& field) {
  static const std::map<std::string, std::string> keys = {
      {"NhcOptions.time_step", "simmer.time_step"},
      {"NhcOptions.chain_length", "simmer.chain_length"},
      {"NhcOptions.masses", "simmer.masses"},
      {"NhcOptions.friction", "simmer.friction"},
      {"NhcOptions.dof_offset", "simmer.dof_offset"},
      {"martyna_masses.tau", "simmer.tau"},
      {"StepRamp.initial", "simmer.T_initial"},
      {"StepRamp.target", "simmer.T_target"},
      {"StepRamp.increment", "simmer.dT"},
      {"StepRamp.every", "simmer.every"},
      {"StartVelocity", "simmer.start_velocity"},
      {"gaussian_prior.sigma", "simmer.prior_sigma"},
      {"AdamOptions.learning_rate", "adam.lr"},
      {"AdamOptions.beta1", "adam.beta1"},
      {"AdamOptions.beta2", "adam.beta2"},
      {"AdamOptions.epsilon", "adam.epsilon"},
      {"AdamOptions.epochs", "adam.epochs"},
      {"AdamOptions.batch_size", "adam.batch"},
      {"SamplingOptions.window", "ensemble.window"},
      {"SamplingOptions.stride", "ensemble.stride"},
      {"SamplingOptions.count", "ensemble.count"},
      {"SamplingOptions.fraction", "ensemble.fraction"},
      {"RunOptions.output", "run.output"},
      {"RunOptions.memory_limit", "run.memory_limit"},
  };
  const auto it = keys.find(field);
  return it == keys.end() ? field : it->second;
}

std::int64_t parse_memory_limit(const std::string& text) {
  const std::string t = trim(text);
  if (t == "auto") return -1;
  if (t == "off") return 0;
  const auto bad = [&] {
    return option_error("run.memory_limit", text, "must be auto, off or a size like 512M, 16G or 1.5T");
  };
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(t, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  std::string unit = t.substr(used);
  for (const char* tail : {"iB", "B"}) {
    const std::string tl(tail);
    if (unit.size() >= tl.size() && unit.compare(unit.size() - tl.size(), tl.size(), tl) == 0) {
      unit.erase(unit.size() - tl.size());
      break;
    }
  }
  double scale = 1.0;
  if (unit.empty()) {
    scale = 1.0;
  } else if (unit == "K" || unit == "k") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "m") {
    scale = 1024.0 * 1024.0;
  } else if (unit == "G" || unit == "g") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else if (unit == "T" || unit == "t") {
    scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  } else {
    throw bad();
  }
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes < 1.0 || bytes > 9e18) throw bad();
  return static_cast<std::int64_t>(bytes);
}

MassSpec parse_masses(const std::string& text) {
  MassSpec spec;
  const std::string t = trim(text);
  if (t.empty()) return spec;
  if (t == "martyna") {
    spec.martyna = true;
    return spec;
  }
  try {
    spec.values = parse_as<std::vector<double>>(t);
  } catch (const BadValue& e) {
    throw option_error("simmer.masses", text, std::string(e.what()) + " (give Q_1,..,Q_Nc, martyna, or nothing)");
  }
  return spec;
}

char parse_delimiter(const std::string& text) {
  if (text == "tab" || text == "\\t" || text == "\t") return '\t';
  const auto bad = [&](const std::string& why) { return option_error("data.delimiter", text, why); };
  if (text.size() != 1) {
    throw bad("must be one character (e.g. , or ; or |) or tab");
  }
  const char c = text.front();
  if (c == '"' || std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '+' || c == '-' || is_space(c) ||
      std::iscntrl(static_cast<unsigned char>(c)) != 0) {
    throw bad("cannot be a quote, a letter, a digit, '.', '+', '-' or a blank (they occur inside fields)");
  }
  return c;
}

std::vector<std::string> csv_missing_tokens(const std::vector<std::string>& items) {
  std::vector<std::string> tokens;
  tokens.reserve(items.size());
  for (const std::string& item : items) tokens.push_back(item == "empty" ? std::string() : item);
  return tokens;
}

KeyRole key_role(const std::string& key) {
  static const std::map<std::string, KeyRole, std::less<>> roles = {
      {"run.output", KeyRole::placement},
      {"run.progress", KeyRole::placement},
      {"run.progress_seconds", KeyRole::placement},
      {"run.ranks_per_trajectory", KeyRole::placement},
      {"data.path", KeyRole::placement},
      {"ensemble.points", KeyRole::placement},
      {"run.seed", KeyRole::study},
      {"run.trajectories", KeyRole::study},
      {"run.checkpoint_interval", KeyRole::study},
      {"run.sync_every", KeyRole::study},
      {"run.gather_interval", KeyRole::study},
  };
  const auto it = roles.find(key);
  return it == roles.end() ? KeyRole::science : it->second;
}

std::vector<std::string> config_differences(const Config& a, const Config& b, std::initializer_list<KeyRole> ignored) {
  std::vector<std::string> out;
  for (const Key& k : keys()) {
    if (std::find(ignored.begin(), ignored.end(), key_role(k.full())) != ignored.end()) continue;
    const std::string va = k.get(a, false);
    const std::string vb = k.get(b, false);
    if (va != vb) out.push_back(k.full() + ": '" + va + "' vs '" + vb + "'");
  }
  return out;
}

std::string to_ini(const Config& config) {
  std::string out = "# simmer configuration: every key with its effective value\n";
  for (const SectionInfo& section : kSections) {
    out += "\n[";
    out += section.name;
    out += "]\n";
    for (const Key& k : keys()) {
      if (k.section != section.name) continue;
      const std::string value = ini_quote(k.get(config, true));
      out += k.name + (value.empty() ? " =\n" : " = " + value + "\n");
    }
  }
  return out;
}

std::string help_text() {
  std::ostringstream out;
  out << "Usage: simmer_mpi --config FILE [--section.key value ...] [--output PATH] "
         "[--overwrite] [--estimate]\n"
         "       simmer_mpi --resume ARCHIVE   (continue from ARCHIVE.ckpt, any number of ranks)\n\n"
         "Values come from the defaults below, then the INI file (--config), then the command\n"
         "line: a later source overrides an earlier one. In the file, key 'section.key' is\n"
         "written 'key = value' under a [section] header; '#' or ';' start a comment line and\n"
         "' # ...' ends a value. Lists are comma-separated, e.g. --data.features "
         "sepal_width,petal_width.\n\n"
         "Temperature and the Bayesian posterior: simmering samples exp(-L/T). That is the\n"
         "posterior of the network's weights (flat prior, or the Gaussian of simmer.prior) when\n"
         "T = T_Bayes: sse with Gaussian noise sd s: T_Bayes = 2 s^2; mse over n training rows:\n"
         "2 s^2 / n; mean cross-entropy (cce, bce) over n rows: 1 / n. Larger T samples a wider\n"
         "(tempered) distribution. The run prints T in these units; simmer.temperature_unit =\n"
         "posterior gives the schedule in them.\n";
  // One description holding every group, so all sections share one aligned column.
  po::options_description all("", 100, 50);
  all.add(general_options());
  for (const SectionInfo& s : kSections) all.add(section_options(s));
  out << all;
  return out.str();
}

}  // namespace simmer::cli
