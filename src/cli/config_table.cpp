// The key table: every configuration key declared once (config_keys.hpp says what is generated
// from it). The make_key helpers turn the field a key is (a Part's, or a section's own) and its
// declaration into a Key.
#include "config_keys.hpp"

#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "config_text.hpp"
#include "simmer/core/error.hpp"

namespace simmer::cli::detail {
namespace {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

Key plain_key(const char* section, const char* name, const char* meaning) {
  Key key;
  key.section = section;
  key.name = name;
  key.meaning = meaning;
  return key;
}

/// A key of a Part goes to the run::Problem's struct unchanged; a section's own key does not.
template <class Slot>
void bind_problem(Key&, const Slot&) {}
template <class Section, class Lib, class T>
void bind_problem(Key& key, const PartField<Section, Lib, T>& f) {
  key.copy = [f](const Config& c, run::Problem& p) { f.in_problem(p) = f(c); };
  key.library_default = [f](const Config& c) {
    const run::Problem defaults;
    return f.in_problem(defaults) == f(c);
  };
  key.arrived = [f](const Config& c, const run::Problem& p) { return f.in_problem(p) == f(c); };
}

/// A value of the field's own type (a number, a flag, text or a list), or a number that may be
/// left to the run ("auto": the empty optional).
template <class Slot>
Key make_key(const char* section, const char* name, Slot at, const char* meaning) {
  using T = typename Slot::value_type;
  Key key = plain_key(section, name, meaning);
  if constexpr (IsOptional<T>::value) {
    static_assert(std::is_same_v<T, std::optional<double>>, "an optional number is a real");
    key.value_name = std::string(kAutoName) + "|real";
    key.choices = {kAutoName};  // the one named value (the round-trip tests read it back)
    key.can_be_auto = true;
    key.real = true;
    key.set = [at](Config& c, const std::string& text) {
      if (text == kAutoName) {
        at(c).reset();
      } else {
        try {
          at(c) = parse_as<double>(text);
        } catch (const BadValue&) {
          throw BadValue(std::string("not ") + kAutoName + " or a number");
        }
      }
    };
    key.get = [at](const Config& c, bool exact) {
      const std::optional<double>& v = at(c);
      return v ? format_as<double>(*v, exact) : std::string(kAutoName);
    };
    key.number = [at](const Config& c) {
      const std::optional<double>& v = at(c);
      return v ? *v : std::numeric_limits<double>::quiet_NaN();
    };
  } else {
    key.value_name = value_name_of<T>();
    key.set = [at](Config& c, const std::string& text) { at(c) = parse_as<T>(text); };
    key.get = [at](const Config& c, bool exact) { return format_as<T>(at(c), exact); };
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      key.number = [at](const Config& c) { return static_cast<double>(at(c)); };
      key.real = std::is_floating_point_v<T>;
    }
  }
  bind_problem(key, at);
  return key;
}

/// A choice: one of the enum's names (its table, core/names.hpp), in --help as "a|b|c"; or, for
/// an optional field, also "auto" (the empty optional: left to the run).
template <class Slot, class E, std::size_t N>
Key make_key(const char* section, const char* name, Slot at, const Names<E, N>& names, const char* meaning) {
  using T = typename Slot::value_type;
  Key key = plain_key(section, name, meaning);
  const Names<E, N>* table = &names;
  key.choices = names.list();
  if constexpr (IsOptional<T>::value) {
    key.value_name = std::string(kAutoName) + "|" + names.choices("|");
    key.choices.insert(key.choices.begin(), kAutoName);
    key.set = [at, table](Config& c, const std::string& text) {
      if (text == kAutoName) {
        at(c).reset();
      } else if (table->contains(text)) {
        at(c) = table->parse(text);
      } else {
        throw BadValue(std::string("must be one of ") + kAutoName + " | " + table->choices(" | "));
      }
    };
    key.get = [at, table](const Config& c, bool) {
      const T& v = at(c);
      return v ? std::string(table->name(*v)) : std::string(kAutoName);
    };
  } else {
    key.value_name = names.choices("|");
    key.set = [at, table](Config& c, const std::string& text) {
      if (!table->contains(text)) throw BadValue("must be one of " + table->choices(" | "));
      at(c) = table->parse(text);
    };
    key.get = [at, table](const Config& c, bool) { return std::string(table->name(at(c))); };
  }
  bind_problem(key, at);
  return key;
}

/// A section's own field (or its base's): make_key(..., &C::data, &DataConfig::path, ...).
template <class Section, class Owner, class T, class... Rest>
Key make_key(const char* section, const char* name, Section Config::*sub, T Owner::*field, Rest&&... rest) {
  return make_key(section, name, Member<Section, Owner, T>{sub, field}, std::forward<Rest>(rest)...);
}

/// make_key for a text field whose syntax is checked as it is read (so an INI error names the
/// file and line): `check` throws simmer::Error, rethrown here as BadValue with its reason.
template <class Section, class Owner>
Key make_checked_key(const char* section, const char* name, Section Config::*sub, std::string Owner::*field,
                     const char* meaning, std::function<void(const std::string&)> check) {
  Key key = make_key(section, name, sub, field, meaning);
  const Member<Section, Owner, std::string> at{sub, field};
  key.set = [at, check](Config& c, const std::string& text) {
    std::string value = parse_as<std::string>(text);
    try {
      check(value);
    } catch (const Error& e) {
      // option_error's text is "option 'k' = 'v': why": keep the reason.
      std::string why = e.what();
      const std::size_t colon = why.find("': ");
      throw BadValue(colon == std::string::npos ? why : why.substr(colon + 3));
    }
    at(c) = std::move(value);
  };
  return key;
}

}  // namespace

const std::vector<Key>& keys() {
  using C = Config;
  using P = run::Problem;
  // The library option structs the sections hold, each with the Problem member it goes to.
  static constexpr auto kArchitecture = part(&C::model, &P::architecture);
  static constexpr auto kAdam = part(&C::adam, &P::adam);
  static constexpr auto kRun = part(&C::run, &P::run);
  static constexpr auto kAutoStep = part(&C::simmer, &SimmerConfig::auto_step, &P::auto_step);
  static constexpr auto kLadder = part(&C::simmer, &SimmerConfig::ladder, &P::ladder);
  static constexpr auto kNhc = part(&C::simmer, &SimmerConfig::nhc, &P::nhc);
  static constexpr auto kDiagnostics = part(&C::simmer, &SimmerConfig::diagnostics, &P::diagnostics);
  static constexpr auto kHealth = part(&C::simmer, &SimmerConfig::health, &P::health);
  static constexpr auto kMasses = part(&C::simmer, &SimmerConfig::parameter_masses, &P::parameter_masses);
  static constexpr auto kSampling = part(&C::ensemble, &P::sampling);
  static constexpr auto kStore = part(&C::ensemble, &EnsembleConfig::store, &P::store);
  static constexpr auto kSelection = part(&C::ensemble, &EnsembleConfig::selection, &P::selection);
  static const std::vector<Key> table = {
      // [data]
      make_key("data", "source", &C::data, &DataConfig::source, kDataSourceNames,
               "csv (a file with a header row) | sine (y = sin(2 pi x) + noise on [-1, 1]) | idx "
               "(MNIST-format images: training rows from the train-* files, test rows from "
               "t10k-*) | higgs (UCI HIGGS CSV: label, 28 features, no header) | "
               "synthetic_higgs (generated, same shape; see include/simmer/data/higgs.hpp)"),
      make_key("data", "path", &C::data, &DataConfig::path,
               "csv, higgs: data file; idx: directory with {train,t10k}-{images-idx3,labels-idx1}"
               "-ubyte[.gz] (relative paths are relative to the working directory)")
          .with_role(KeyRole::placement),
      make_key("data", "features", &C::data, &DataConfig::features,
               "csv: feature column names, comma-separated (e.g. sepal_width,petal_width), or * (the "
               "default) for every column but the target (and data.exclude), in file order"),
      make_key("data", "exclude", &C::data, &DataConfig::exclude,
               "csv with data.features = *: columns left out, comma-separated (e.g. an id or a name)"),
      make_key("data", "target", &C::data, &DataConfig::target, "csv: target column (class labels for classification)"),
      make_key("data", "task", &C::data, &DataConfig::task, data::kTaskNames,
               "what the target is (classification: class labels)"),
      make_key("data", "train", &C::data, &DataConfig::train,
               "training rows, validation rows included (0: data.train_fraction of the rows; idx: every image "
               "of the train-* files)")
          .min(0)
          .explain("0: use data.train_fraction"),
      make_key("data", "test", &C::data, &DataConfig::test,
               "test rows (0: every row not used for training; idx: every image of the t10k-* files); a "
               "data.train + data.test below the rows leaves the rest unused, and the run says how many")
          .min(0),
      make_key("data", "train_fraction", &C::data, &DataConfig::train_fraction,
               "fraction of rows used for training when data.train = 0, in [0, 1)")
          .min(0)
          .below(1),
      make_key("data", "split_seed", &C::data, &DataConfig::split_seed,
               "seed of the train/test split and the sine noise (shared by all trajectories)"),
      make_key("data", "sine_points", &C::data, &DataConfig::sine_points,
               "sine: number of equally spaced points on [-1, 1] (>= 2)")
          .min(2)
          .cap(1e8),
      make_key("data", "rows", &C::data, &DataConfig::rows,
               "higgs: rows read from the start of the file (0: all); synthetic_higgs: rows "
               "generated, seeded by data.split_seed (0: data.train + data.test)")
          .min(0),
      make_key("data", "sine_noise", &C::data, &DataConfig::sine_noise,
               "sine: standard deviation of the Gaussian noise on y (target units)")
          .min(0),
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
               "candidate ensembles (simmer.ladder, ensemble.select_by)")
          .min(0)
          .max(0.9)
          .explain("0: no validation set"),
      // [model]
      make_key("model", "architecture", &C::model, &ModelConfig::architecture,
               "layer widths, input first, '-'-separated (e.g. 2-100-50-50-3), or lenet5 (image "
               "data: conv 6@5x5 same, pool, conv 16@5x5 valid, pool, dense 120, 84, classes), or auto: "
               "two hidden layers of 64 between the data's features and its outputs (features-64-64-outputs; "
               "the archive records the widths)"),
      make_key("model", "pooling", in(kArchitecture, &model::ArchitectureSpec::pooling), model::kPoolNames,
               "lenet5: the 2x2 pooling after each convolution"),
      make_key("model", "activation", in(kArchitecture, &model::ArchitectureSpec::activation), model::kActivationNames,
               "hidden-layer activation"),
      make_key("model", "output", in(kArchitecture, &model::ArchitectureSpec::output), model::kActivationNames,
               "output activation (cce/bce take logits: linear)"),
      make_key("model", "loss", &C::model, &ModelConfig::loss, model::kLossNames,
               "auto (cce for classification, mse for regression) | sse (sum of squares) | mse (mean) | cce "
               "(softmax cross-entropy) | bce (binary, from logits); in target units"),
      make_key("model", "init", in(kArchitecture, &model::ArchitectureSpec::init), model::kInitNames,
               "weight initialiser (biases 0)"),
      // [adam]
      make_key("adam", "epochs", in(kAdam, &train::AdamOptions::epochs),
               "Adam epochs before simmering (retrofit: >= 2; unused in abinitio mode)")
          .min(0)
          .cap(1e12)
          .derived("build_problem sets it: the key's value in a retrofit, 0 in an ab initio run (the recipe's 2000 "
                   "epochs are AdamConfig's own default)")
          .fills("AdamOptions.epochs"),
      make_key("adam", "lr", in(kAdam, &train::AdamOptions::learning_rate), "Adam learning rate (step size), > 0")
          .above(0)
          .fills("AdamOptions.learning_rate"),
      make_key("adam", "batch", in(kAdam, &train::AdamOptions::batch_size),
               "mini-batch size in training rows (0: full batch)")
          .min(0)
          .explain("0: full batch")
          .fills("AdamOptions.batch_size"),
      make_key("adam", "beta1", in(kAdam, &train::AdamOptions::beta1),
               "decay rate of the first-moment estimate, in [0, 1)")
          .min(0)
          .below(1)
          .fills("AdamOptions.beta1"),
      make_key("adam", "beta2", in(kAdam, &train::AdamOptions::beta2),
               "decay rate of the second-moment estimate, in [0, 1)")
          .min(0)
          .below(1)
          .fills("AdamOptions.beta2"),
      make_key("adam", "epsilon", in(kAdam, &train::AdamOptions::epsilon),
               "denominator regulariser (Keras convention), > 0")
          .above(0)
          .fills("AdamOptions.epsilon"),
      make_key("adam", "checkpoint_every", in(kRun, &run::RunOptions::adam_checkpoint_every),
               "epochs between checkpoints during Adam (<output>.ckpt; a resume continues mid-Adam; "
               "0: none before Adam's end)")
          .min(0)
          .explain("0: none during Adam"),
      make_key("adam", "keep", in(kAdam, &train::AdamOptions::keep), train::kAdamKeepNames,
               "which Adam iterate each trajectory keeps as its deep-ensemble network and, in a retrofit, as "
               "simmering's start: last (the last epoch's, the paper) | best_validation (the epoch with the lowest "
               "validation loss, the training loss on the validation rows: early stopping as a practitioner's deep "
               "ensemble does it; needs a validation split)")
          .fills("AdamOptions.keep"),
      make_key("adam", "patience", in(kAdam, &train::AdamOptions::patience),
               "adam.keep = best_validation: stop Adam after this many epochs without a new lowest validation loss "
               "(the remaining epochs are skipped; 0: run every epoch and keep the best)")
          .min(0)
          .explain("0: run every epoch")
          .fills("AdamOptions.patience"),
      // [simmer]
      make_key("simmer", "mode", &C::simmer, &SimmerConfig::mode, kSimmerModeNames,
               "retrofit (Adam first, then simmer from its end point) | abinitio (simmer from "
               "the initialisation, velocity 0) | adam (Adam alone, no simmering: the run's ensemble is "
               "the deep ensemble of its trajectories' Adam end points, to compare an ab initio job with)"),
      make_key("simmer", "time_step", &C::simmer, &SimmerConfig::time_step,
               "integrator time step h (the paper's 'learning rate'), or auto: simmer.step_fraction of the "
               "stability limit min(2/sqrt(lambda_max), the thermostat's 2/sqrt(2 N_f T/Q_1)), measured at the "
               "start of each stage and again over the steps before its window (the warm-up), then fixed for "
               "the window (docs/MIXING.md)")
          .min(1e-12)
          .fills("NhcOptions.time_step"),
      make_key("simmer", "step_fraction", in(kAutoStep, &run::AutoStep::fraction),
               "simmer.time_step = auto: h as a share of the measured stability limit, in (0, 1)")
          .above(0)
          .below(1),
      make_key("simmer", "step_estimates", in(kAutoStep, &run::AutoStep::estimates),
               "simmer.time_step = auto: how often each stage measures its stability limit: at its start and "
               "at step_estimates - 1 more evenly spaced steps of its warm-up (each a power iteration of a few "
               "dozen gradients); the window's h comes from the warm-up's stiffest estimate")
          .min(1)
          .max(1000),
      make_key("simmer", "steps", in(kRun, &run::RunOptions::steps), "number of simmering steps (full-batch gradients)")
          .own_default("the recipe's 10 000 steps per stage; the library has no run length of its own")
          .above(0)
          .cap(1e12),
      make_key("simmer", "T_initial", &C::simmer, &SimmerConfig::T_initial, "temperature at step 0 (loss units), >= 0")
          .fills("StepRamp.initial"),
      make_key("simmer", "T_target", &C::simmer, &SimmerConfig::T_target,
               "final temperature of the ramp (loss units), >= T_initial")
          .fills("StepRamp.target"),
      make_key("simmer", "dT", &C::simmer, &SimmerConfig::dT,
               "temperature increment per ramp stage (loss units; 0: constant T = T_initial)")
          .fills("StepRamp.increment"),
      make_key("simmer", "every", &C::simmer, &SimmerConfig::every,
               "steps per ramp stage: T(step) = min(T_target, T_initial + dT * floor(step / "
               "every))")
          .fills("StepRamp.every"),
      make_key("simmer", "ladder", in(kLadder, &run::LadderOptions::rungs),
               "a temperature ladder T_1,...,T_K (ascending, every T > 0, in simmer.temperature_unit: with "
               "posterior, multiples of T_Bayes) instead of the ramp: each trajectory simmers simmer.steps "
               "steps at each rung in turn, coldest first, starting where the last rung ended; every rung has "
               "its own window, members, ensemble and diagnostics (/ladder), and the run's ensemble is the "
               "candidate (a rung, or in retrofit mode the deep ensemble) with the best validation score "
               "(ensemble.select_by; needs data.validation_fraction > 0). T_initial, T_target, dT and every "
               "are not used. Empty: the ramp")
          .own_default("the recipe's ladder; the library's empty ladder is the paper's ramp"),
      make_key("simmer", "ladder_mode", in(kLadder, &run::LadderOptions::mode), run::kLadderModeNames,
               "with simmer.ladder: sequential (each trajectory simmers every rung in turn, coldest first) | "
               "parallel (trajectory i simmers rung i mod K for the whole run, so every rung has "
               "run.trajectories / K trajectories; needed for replica exchange, simmer.exchange_every; with "
               "ensemble.select_by = none the run's ensemble is the coldest rung's)"),
      make_key("simmer", "exchange_every", in(kLadder, &run::LadderOptions::exchange_every),
               "simmer.ladder_mode = parallel: steps between replica-exchange rounds (0: none). Every round, "
               "neighbouring rungs (alternately the pairs (1,2),(3,4),... and (2,3),(4,5),...) of each set of "
               "K trajectories propose to swap configurations, accepted with min(1, exp((1/T_i - 1/T_j)(L_i - "
               "L_j))); velocities and thermostat velocities are rescaled by sqrt(T_new/T_old) (docs/MIXING.md)")
          .min(0),
      make_key("simmer", "chain_length", in(kNhc, &train::NhcOptions::chain_length),
               "Nose-Hoover chain length N_c (>= 1)")
          .min(1)
          .max(1000)
          .fills("NhcOptions.chain_length"),
      make_key("simmer", "thermostat", &C::simmer, &SimmerConfig::thermostat, train::kThermostatNames,
               "auto (massive_nose_hoover_langevin when simmer.temperature_unit = posterior and every "
               "temperature is > 0, a ladder or a ramp from T_initial > 0; nose_hoover otherwise) | "
               "nose_hoover (the paper: one Nose-Hoover chain on the total kinetic energy) | "
               "langevin (friction and noise on every velocity: ergodic where one global chain "
               "is not, e.g. along flat directions under a prior; uses the trajectory's seed) | "
               "massive_nose_hoover_langevin (one Nose-Hoover variable xi per parameter with friction and "
               "noise on xi alone, Leimkuhler, Noorizadeh & Theil 2009: every degree of freedom "
               "thermostatted, ergodic on nearly harmonic losses where one global thermostat is not, no noise "
               "on the velocities themselves; needs every temperature > 0) (docs/MIXING.md)"),
      make_key("simmer", "thermostat_steps", in(kNhc, &train::NhcOptions::thermostat_steps),
               "thermostat = massive_nose_hoover_langevin: the thermostat's time scale tau in steps (tau = "
               "thermostat_steps * h, friction on xi 1/tau, so it follows "
               "simmer.time_step = auto), > 0; at 100 the regression rungs stayed cold (docs/MIXING.md)")
          .above(0)
          .fills("NhcOptions.thermostat_steps"),
      make_key("simmer", "splitting", in(kNhc, &train::NhcOptions::splitting), train::kSplittingNames,
               "thermostat = langevin or massive_nose_hoover_langevin: the order of a step's updates, one "
               "gradient a step either way. midpoint (drift, thermostat, kick by the force at the "
               "half-step position, thermostat, drift; under the massive thermostat a harmonic "
               "direction of frequency omega runs cold by (h omega / 2)^2) | baoab (drift, thermostat, "
               "drift, kick by the force at the new position: Leimkuhler & Matthews's BAOAB, the "
               "positions exact in a harmonic well at any stable step; on the sine posterior as warm "
               "as midpoint is cold) (docs/MIXING.md, \"The splitting\")")
          .fills("NhcOptions.splitting"),
      make_key("simmer", "friction", in(kNhc, &train::NhcOptions::friction),
               "thermostat = langevin: friction gamma per time unit (velocities decorrelate in "
               "~1/gamma), > 0")
          .above(0)
          .fills("NhcOptions.friction"),
      make_checked_key("simmer", "masses", &C::simmer, &SimmerConfig::masses,
                       "thermostat masses: empty (all Q_k = 1, the paper) | Q_1,..,Q_Nc comma-separated "
                       "| martyna (Martyna-Tuckerman-Klein: Q_1 = N_f T tau^2, Q_k = T tau^2, at "
                       "T_target; needs T_target > 0)",
                       [](const std::string& text) { (void)parse_masses(text); })
          .fills("NhcOptions.masses"),
      make_key("simmer", "tau", &C::simmer, &SimmerConfig::tau,
               "masses = martyna: the thermostat's time scale tau (time units, like h), > 0")
          .above(0)
          .fills("martyna_masses.tau"),
      make_key("simmer", "dof_offset", in(kNhc, &train::NhcOptions::dof_offset),
               "degrees of freedom N_f = (number of parameters) - dof_offset")
          .fills("NhcOptions.dof_offset"),
      make_key("simmer", "start_velocity", &C::simmer, &SimmerConfig::start_velocity, train::kStartVelocityNames,
               "auto (the paper: adam in retrofit mode, zero in abinitio) | adam (v = (x_last - "
               "x_previous)/h from Adam's last step; retrofit only) | zero | thermal "
               "(Maxwell-Boltzmann at the schedule's first T > 0, from the trajectory's seed)")
          .fills("StartVelocity"),
      make_key("simmer", "start_jitter", in(kDiagnostics, &run::DiagnosticsOptions::start_jitter),
               "relative random change of every start velocity, v_i (1 + eps xi_i) with xi_i "
               "~ N(0, 1) from a stream of its own (0: none): shows whether outcomes are chaotic")
          .above(-1)
          .below(1)
          .explain("a small relative change, |eps| < 1"),
      make_key("simmer", "prior", &C::simmer, &SimmerConfig::prior, kPriorNames,
               "none (the paper: sample exp(-L/T), not normalisable along flat directions of "
               "the loss) | gaussian (sample exp(-L/T) N(x; 0, sigma^2): potential L + T "
               "|x|^2/(2 sigma^2); along a flat direction the positions' variance is sigma^2)"),
      make_key("simmer", "prior_sigma", &C::simmer, &SimmerConfig::prior_sigma,
               "prior = gaussian: its standard deviation sigma (units of the parameters; inputs "
               "and targets are scaled to [-1, 1]), > 0")
          .above(0)
          .fills("gaussian_prior.sigma"),
      make_key("simmer", "prior_scaling", &C::simmer, &SimmerConfig::prior_scaling, train::kPriorScalingNames,
               "prior = gaussian: none (every parameter sigma) | fan_in (weights sigma / "
               "sqrt(fan_in), biases sigma: Neal's scaling, keeps pre-activations O(sigma))"),
      make_key("simmer", "temperature_unit", &C::simmer, &SimmerConfig::temperature_unit, kTemperatureUnitNames,
               "loss (T_initial, T_target, dT in loss units, the paper) | posterior (in units of "
               "the Bayesian temperature T_Bayes: T = 1 samples the posterior; cce/bce over n "
               "training rows: T_Bayes = 1/n; sse with noise sd s: 2 s^2; mse: 2 s^2/n; needs "
               "simmer.noise_sd for sse/mse)"),
      make_key("simmer", "noise_sd", &C::simmer, &SimmerConfig::noise_sd,
               "regression: standard deviation of the targets' Gaussian noise (target units; 0: "
               "unknown), or auto: the RMS residual of the deep ensemble of the Adam networks (the mean "
               "of every trajectory's) on the validation rows (on the training rows without a validation "
               "split), measured after Adam and recorded in /metrics (noise_sd, noise_sd_source); gives "
               "T_Bayes for temperature_unit = posterior and the printed posterior reading of T")
          .min(0)
          .explain("0: unknown"),
      make_key("simmer", "curvature_report", in(kDiagnostics, &run::DiagnosticsOptions::curvature_report),
               run::kCurvatureReportNames,
               "count the loss-Hessian eigenvalues above T at the start "
               "point (and at the end) by stochastic Lanczos quadrature, with the harmonic "
               "loss-rise estimate"),
      make_key("simmer", "lanczos_steps", in(kDiagnostics, &run::DiagnosticsOptions::lanczos_steps),
               "curvature report: Lanczos steps per probe (2 gradients each), >= 2")
          .min(2)
          .max(1000)
          .explain("each step keeps a vector of every parameter"),
      make_key("simmer", "lanczos_probes", in(kDiagnostics, &run::DiagnosticsOptions::lanczos_probes),
               "curvature report: random probe vectors, >= 1")
          .min(1)
          .max(1000),
      make_key("simmer", "configurational_every", in(kDiagnostics, &run::DiagnosticsOptions::configurational_every),
               "steps of the window between two samples of the configurational temperature "
               "T_conf = <|grad U|^2> / <tr Hess U> (mass-weighted with masses; 2 gradients each, Hutchinson's "
               "trace): a check of the step's bias on the sampled law, reported beside the kinetic temperature "
               "(docs/MIXING.md); 0: off")
          .min(0),
      make_key("simmer", "configurational_probes", in(kDiagnostics, &run::DiagnosticsOptions::configurational_probes),
               "Hutchinson probes per configurational-temperature sample (2 gradients each): the trace's "
               "noise, and the window's T_conf standard error, fall as 1/sqrt(probes); one probe is as noisy "
               "as the trace itself where one Hessian eigenvalue dominates (docs/MIXING.md)")
          .min(1)
          .max(1000),
      make_key("simmer", "on_divergence", in(kHealth, &run::HealthOptions::on_divergence), run::kOnDivergenceNames,
               "a trajectory whose loss or velocities turn NaN/inf, or whose kinetic "
               "temperature stays 100x off the target, stops (stop: keeping its samples) or goes on (warn)"),
      make_key("simmer", "stability_check", in(kHealth, &run::HealthOptions::stability_check),
               run::kStabilityCheckNames,
               "compare time_step with the leapfrog limit 2/sqrt(lambda_max) "
               "of the loss Hessian at the start point"),
      make_key(
          "simmer", "parameter_masses", in(kMasses, &train::MassOptions::kind), train::kParameterMassesNames,
          "the particles' masses: unit (every parameter mass 1, the paper) | adam (retrofit: each "
          "parameter's mass Adam's denominator sqrt(v_hat) + epsilon at the end of Adam, as pSGLD "
          "preconditions) | adapt (each parameter's mass 1/variance of its position over the first "
          "simmer.mass_warmup steps, which run with unit masses, as Stan adapts its diagonal metric) | "
          "curvature (each parameter's mass the diagonal of the potential's Hessian, Hutchinson's estimate "
          "from 32 probes spread over the simmer.mass_warmup steps, the loss's negative curvature cut off, "
          "plus the prior's T/sigma^2: every direction of a diagonal Hessian then oscillates at one "
          "frequency). Each is scaled so the stiffest mass-weighted direction keeps the unit-mass stability limit: "
          "steep directions move slower, flat ones faster; the sampled distribution is the same, its time "
          "scales change (docs/MIXING.md)"),
      make_key("simmer", "mass_warmup", in(kMasses, &train::MassOptions::warmup),
               "simmer.parameter_masses = adapt or curvature: the first steps of simmering (unit masses) "
               "whose positions (adapt) or Hessian diagonals (curvature) give the masses; the window must "
               "start after them")
          .min(0),
      make_key("simmer", "health_every", in(kHealth, &run::HealthOptions::every),
               "steps between a trajectory's health checks (kinetic temperature vs target)")
          .above(0),
      // [ensemble]
      make_key("ensemble", "window", in(kSampling, &ensemble::SamplingOptions::window),
               "the last W steps of the run, from which members are drawn (<= simmer.steps)")
          .own_default("the recipe's window (the last 3 000 steps of each stage)")
          .above(0)
          .fills("SamplingOptions.window"),
      make_key("ensemble", "stride", in(kSampling, &ensemble::SamplingOptions::stride),
               "every s-th step of the window, counted from its end")
          .above(0)
          .fills("SamplingOptions.stride"),
      make_key("ensemble", "count", in(kSampling, &ensemble::SamplingOptions::count),
               "> 0: this many random steps of the window instead of the stride")
          .fills("SamplingOptions.count"),
      make_key("ensemble", "fraction", in(kSampling, &ensemble::SamplingOptions::fraction),
               "> 0: round(fraction * window) random steps of the window instead, in [0, 1]")
          .min(0)
          .max(1)
          .fills("SamplingOptions.fraction"),
      make_key("ensemble", "blocks", in(kDiagnostics, &run::DiagnosticsOptions::blocks),
               "drift diagnostics: the window split into this many blocks of steps, each with "
               "its own ensemble metric (/diagnostics), >= 1"),
      make_key("ensemble", "store_every", in(kStore, &run::StoreOptions::every),
               "store every k-th member in /posterior (the aggregation uses all)")
          .own_default("every 20th member stored keeps /posterior small; the library stores every member")
          .min(1),
      make_key("ensemble", "store_dtype", &C::ensemble, &EnsembleConfig::store_dtype, kPrecisionNames,
               "precision of /posterior/params on disk (auto: the run's "
               "run.precision; float32 halves the archive of a float64 run)"),
      make_key("ensemble", "points", &C::ensemble, &EnsembleConfig::points,
               "optional CSV of extra evaluation inputs (feature columns, raw units)")
          .with_role(KeyRole::placement),
      make_key("ensemble", "track", in(kStore, &run::StoreOptions::track),
               "0-based test-set rows whose member predictions are kept, comma-separated"),
      make_key("ensemble", "select_by", in(kSelection, &ensemble::SelectionOptions::by), ensemble::kSelectByNames,
               "with simmer.ladder: nll (default) | metric | none: the validation score that chooses the run's "
               "ensemble among the rungs and (retrofit) the deep ensemble of the Adam end points: the mean "
               "negative log-likelihood, or the error rate (classification) / MSE (regression); none: no "
               "choice, the last rung is the run's ensemble (parallel rungs: the first, coldest). With "
               "ensemble.select_rule = stacking the stacked candidates are the run's ensemble whichever score "
               "(their weights maximise the validation likelihood); this score is then the table's comparison"),
      make_key("ensemble", "select_rule", in(kSelection, &ensemble::SelectionOptions::rule), ensemble::kSelectRuleNames,
               "stacking (default: the candidates stacked, every candidate's members weighted so that its share "
               "is its stacking weight, the weights maximising the validation rows' likelihood of one mixture of "
               "their predictives; with one candidate: best) | best (the lowest validation loss) | one_se (the "
               "first candidate, the deep ensemble then the rungs coldest first, within one standard error of the "
               "best, the error of the per-row differences: a choice that a small validation set's noise moves "
               "less); docs/CHOOSING_T.md"),
      // [run]
      make_key("run", "trajectories", in(kRun, &run::RunOptions::trajectories),
               "independent trajectories (0: one per MPI rank); trajectory i runs on rank i mod "
               "size")
          .own_default("0: one per MPI rank group, which validated resolves")
          .min(0)
          .explain("0: one per group of run.ranks_per_trajectory ranks")
          .with_role(KeyRole::study),
      make_key("run", "seed", in(kRun, &run::RunOptions::seed),
               "master seed: trajectory i's initialisation derives from (seed, i)")
          .with_role(KeyRole::study),
      make_key("run", "gather_interval", in(kRun, &run::RunOptions::gather_interval),
               "simmering steps between gathers to rank 0 (and archive writes)")
          .above(0)
          .with_role(KeyRole::study),
      make_key("run", "trace_every", in(kRun, &run::RunOptions::trace_every),
               "record losses in /trace every k steps (or Adam epochs)")
          .above(0),
      make_key("run", "output", in(kRun, &run::RunOptions::output),
               "HDF5 archive path (an existing file is kept unless --overwrite)")
          .own_default("an archive in the working directory; the library has no path of its own")
          .with_role(KeyRole::placement)
          .fills("RunOptions.output"),
      make_key("run", "progress_seconds", in(kRun, &run::RunOptions::progress_seconds),
               "minimum seconds between progress lines when stdout is not a terminal")
          .min(0)
          .with_role(KeyRole::placement),
      make_key("run", "progress", in(kRun, &run::RunOptions::progress), run::kProgressNames,
               "a redrawn bar on a terminal, plain lines for logs (auto looks "
               "at where mpirun's own output goes)")
          .with_role(KeyRole::placement),
      make_key("run", "checkpoint_interval", in(kRun, &run::RunOptions::checkpoint_interval),
               "simmering steps between checkpoints (<output>.ckpt; 0: only after Adam)")
          .min(0)
          .explain("0: checkpoint only after the Adam phase")
          .with_role(KeyRole::study),
      make_key("run", "checkpoint_budget", in(kRun, &run::RunOptions::checkpoint_budget),
               "largest share of the wall time spent writing checkpoints: a checkpoint due by "
               "run.checkpoint_interval is skipped while the ones so far took more (long windows "
               "make big checkpoints; a stop signal always writes one)")
          .above(0)
          .max(1)
          .explain("1: never skip one")
          .with_role(KeyRole::placement),
      make_key("run", "sync_every", in(kRun, &run::RunOptions::sync_every),
               "steps (and Adam epochs) between the ranks' collective check for SIGTERM/SIGUSR1 "
               "(checkpoint + exit); a signal every rank receives stops the trajectories at their next "
               "step without waiting for it, except with run.ranks_per_trajectory > 1")
          .above(0)
          .with_role(KeyRole::study),
      make_key("run", "max_hours", in(kRun, &run::RunOptions::max_hours),
               "stop with a checkpoint (exit 3, resume with --resume) at the first check after this many hours "
               "of wall time since the run's (or its resume's) work began, after the data are read (0: never): a "
               "batch job stops itself before its time limit")
          .min(0)
          .with_role(KeyRole::placement),
      make_checked_key("run", "memory_limit", &C::run, &RunConfig::memory_limit,
                       "auto | off | a size like 16G: a run whose estimated peak memory on a node "
                       "exceeds this is refused before any work (auto: the node's available memory, "
                       "or its cgroup/SLURM limit when lower)",
                       [](const std::string& text) { (void)parse_memory_limit(text); })
          .fills("RunOptions.memory_limit"),
      make_key("run", "ranks_per_trajectory", in(kRun, &run::RunOptions::ranks_per_trajectory),
               "k: groups of k ranks evaluate each of their trajectories' full-batch gradient together, "
               "each on its share of the rows (a power of two dividing the rank count; may change on "
               "--resume)")
          .with_role(KeyRole::placement),
      make_key("run", "gradient_chunks", in(kRun, &run::RunOptions::gradient_chunks),
               "the full-batch gradient as a fixed tree sum of this many row blocks (a power of two >= "
               "run.ranks_per_trajectory; 0: equal to it). Runs with the same value have the same bits "
               "for every k dividing it; 1 is the plain full batch")
          .own_default("0: run.ranks_per_trajectory's, which validated resolves")
          .cap(65536),
      make_key("run", "precision", in(kRun, &run::RunOptions::precision), kPrecisionNames,
               "the scalar of the network, its loss and gradient, Adam and the "
               "particle update (the thermostat, energies and ensemble accumulators stay float64). "
               "float32 is about twice as fast on large networks and is TensorFlow's default"),
  };
  return table;
}

}  // namespace simmer::cli::detail
