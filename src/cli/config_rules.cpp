// validated(): the configuration's rules. Each key's own rule (finite, range) is declared with
// the key (config_table.cpp) and checked first; the rules here relate keys to each other (a data
// source needs a path, a loss fits the task, a window fits the run) or bound what the run would
// build (parameters, members, bytes).
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "config_keys.hpp"
#include "config_text.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/core/error.hpp"
#include "simmer/ensemble/sampling.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/train/schedule.hpp"

namespace simmer::cli {
namespace {

using detail::format_as;
using detail::format_short;

std::string str(double v) { return format_short(v); }
std::string str(std::int64_t v) { return std::to_string(v); }
template <class E, std::size_t N>
std::string str(const Names<E, N>& names, E v) {
  return std::string(names.name(v));
}

void require(bool ok, const std::string& key, const std::string& value, const std::string& why) {
  if (!ok) throw option_error(key, value, why);
}

void require_finite(double v, const std::string& key) {
  require(std::isfinite(v), key, str(v), "must be a finite number");
}

Config validated_unmapped(const Config& config, int world_size) {
  if (world_size < 1) throw Error("validated: world_size must be >= 1");
  for (const detail::Key& key : detail::keys()) key.check(config);

  Config c = config;
  const auto& d = c.data;
  const auto& m = c.model;
  const auto& a = c.adam;
  const auto& s = c.simmer;
  auto& e = c.ensemble;
  auto& r = c.run;
  using model::LossKind;
  const bool classification = d.task == data::Task::classification;
  const std::string source = str(kDataSourceNames, d.source);
  const LossKind loss_kind = loss_of(c);
  const std::string loss = str(model::kLossNames, loss_kind);

  // [data]
  if (d.source == DataSource::idx || d.source == DataSource::higgs) {
    require(!d.path.empty(), "data.path", d.path,
            "is required when data.source = " + source +
                (d.source == DataSource::idx ? " (the directory of the IDX files, e.g. "
                                               "/usr/share/datasets/fashion-mnist)"
                                             : " (the HIGGS CSV file)"));
  }
  if (d.source == DataSource::idx || d.source == DataSource::higgs || d.source == DataSource::synthetic_higgs) {
    require(classification, "data.task", str(data::kTaskNames, d.task),
            "must be classification when data.source = " + source);
  }
  if (d.source == DataSource::csv) {
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
    require(classification, "data.stratify", "true", "needs data.task = classification (classes to keep)");
    require(d.source != DataSource::idx, "data.stratify", "true",
            "does not apply to data.source = idx (training and test images come from their own files)");
  }
  require(d.train > 0 || d.train_fraction > 0.0, "data.train", str(d.train),
          "is 0 and data.train_fraction is 0: give a training size");
  require(d.source != DataSource::synthetic_higgs || d.rows <= 100000000, "data.rows", str(d.rows),
          "must be <= 1e8 generated rows (23 GB of features)");

  // [model]
  // lenet5's input and output sizes follow from the data (checked when it is loaded).
  const bool convnet = m.architecture == "lenet5";
  if (convnet) {
    require(d.source == DataSource::idx, "model.architecture", m.architecture,
            "needs image data (data.source = idx), not data.source = " + source);
    require(loss_kind == LossKind::cce, "model.loss", loss, "lenet5 gives one logit per class: use cce");
  }
  // auto: features-64-64-outputs, known once the data is (run::build_problem checks it then).
  const bool sized_by_data = convnet || m.architecture == kAutoName;
  std::vector<Index> widths = {1, 2};
  if (!sized_by_data) try {
      widths = model::parse_widths(m.architecture);
    } catch (const Error& err) {
      // parse_widths already quotes the text; keep only the reason.
      std::string why = err.what();
      const std::string quoted = "architecture '" + m.architecture + "': ";
      if (why.rfind(quoted, 0) == 0) why.erase(0, quoted.size());
      throw option_error("model.architecture", m.architecture, why);
    }
  if (classification) {
    require(loss_kind == LossKind::cce || loss_kind == LossKind::bce, "model.loss", loss,
            "classification needs cce or bce");
  } else {
    require(loss_kind == LossKind::sse || loss_kind == LossKind::mse, "model.loss", loss,
            "regression needs sse or mse");
  }
  const Index outputs = widths.back();
  if (loss_kind == LossKind::cce && !sized_by_data) {
    require(outputs >= 2, "model.architecture", m.architecture, "cce needs one output per class (>= 2 outputs)");
  }
  if (loss_kind == LossKind::bce && !sized_by_data) {
    require(outputs == 1, "model.architecture", m.architecture, "bce needs a single output (the logit of class 1)");
  }
  // Counted in double: a width near INT64_MAX must not overflow here (UB) or in the model's
  // own Index arithmetic later, so absurd sizes stop here with the key and the count.
  // lenet5 on 28x28x1 images and 10 classes (other image sizes give other counts:
  // run::build_problem checks the degrees of freedom again once the data is loaded).
  // (auto: a guess of 64-64 between one input and one output; the data decides the real count.)
  double parameters = convnet ? 61706.0 : sized_by_data ? 4353.0 : 0.0;
  for (std::size_t i = 0; !sized_by_data && i + 1 < widths.size(); ++i) {
    parameters += (static_cast<double>(widths[i]) + 1.0) * static_cast<double>(widths[i + 1]);
  }
  constexpr double kMaxParameters = 1e9;  // 8 GB per parameter vector in float64
  require(
      parameters <= kMaxParameters, "model.architecture", m.architecture,
      "has " + format_short(parameters) + " parameters; at most " + format_short(kMaxParameters) + " are supported");

  // [simmer]
  // A step this small would take over 1e12 steps to move a parameter by one unit (and below
  // ~1e-308 it is not even a normal double): a typo, not a choice.
  const bool adam_only = s.mode == SimmerMode::adam;
  if (s.mode == SimmerMode::retrofit) {
    require(a.epochs >= 2, "adam.epochs", str(a.epochs),
            "must be >= 2 in retrofit mode (the last two Adam iterates give the start velocity)");
  }
  if (adam_only) require(a.epochs >= 1, "adam.epochs", str(a.epochs), "must be >= 1 with simmer.mode = adam");
  if (a.keep == train::AdamKeep::best_validation) {
    require(s.mode != SimmerMode::abinitio, "adam.keep", "best_validation",
            "needs Adam: simmer.mode = retrofit or adam (an ab initio run has no Adam phase)");
    require(d.validation_fraction > 0.0, "adam.keep", "best_validation",
            "needs a validation split to stop on (e.g. data.validation_fraction = 0.2)");
  }
  require(a.patience == 0 || a.keep == train::AdamKeep::best_validation, "adam.patience", str(a.patience),
          "is used only with adam.keep = best_validation: set that key too, or leave patience at 0");
  // Adam alone simmers nothing: its ladder (the default's, say) is not used.
  const bool ladder = !s.ladder.rungs.empty() && !adam_only;
  for (std::size_t k = 0; k < s.ladder.rungs.size(); ++k) {
    require(std::isfinite(s.ladder.rungs[k]) && s.ladder.rungs[k] > 0.0, "simmer.ladder",
            format_as(s.ladder.rungs, false),
            "rung " + std::to_string(k + 1) + " (" + str(s.ladder.rungs[k]) + ") must be a finite temperature > 0");
    require(k == 0 || s.ladder.rungs[k] > s.ladder.rungs[k - 1], "simmer.ladder", format_as(s.ladder.rungs, false),
            "must be ascending (coldest first): rung " + std::to_string(k + 1) + " = " + str(s.ladder.rungs[k]) +
                " is not above rung " + std::to_string(k) + " = " + (k > 0 ? str(s.ladder.rungs[k - 1]) : ""));
  }
  require(s.ladder.rungs.size() <= 1000, "simmer.ladder", format_as(s.ladder.rungs, false), "has more than 1000 rungs");
  if (ladder && e.selection.by != ensemble::SelectBy::none) {
    require(d.validation_fraction > 0.0, "data.validation_fraction", str(d.validation_fraction),
            "is 0, but simmer.ladder chooses its ensemble on the validation set (ensemble.select_by = " +
                str(ensemble::kSelectByNames, e.selection.by) +
                "): hold out a validation set (e.g. data.validation_fraction = 0.2), or set ensemble.select_by = "
                "none to keep every rung without choosing");
  }
  if (s.ladder.mode == run::LadderMode::parallel) {
    require(ladder && s.ladder.rungs.size() >= 2, "simmer.ladder_mode", "parallel",
            "needs a ladder of at least two rungs (simmer.ladder = T_1,...,T_K)");
  }
  if (s.ladder.exchange_every > 0) {
    require(s.ladder.mode == run::LadderMode::parallel, "simmer.exchange_every", str(s.ladder.exchange_every),
            "needs simmer.ladder_mode = parallel (replicas exchange between rungs that run side by side)");
    require(s.ladder.exchange_every <= r.steps, "simmer.exchange_every", str(s.ladder.exchange_every),
            "is more than simmer.steps = " + str(r.steps) +
                ": no exchange round would happen (a round every exchange_every steps; 0: no exchange)");
  }
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
  const double hottest = ladder ? s.ladder.rungs.back() : s.T_target;
  const MassSpec masses = parse_masses(s.masses);
  if (!masses.values.empty()) {
    require(masses.values.size() == static_cast<std::size_t>(s.nhc.chain_length), "simmer.masses", s.masses,
            "needs one mass per chain link (simmer.chain_length = " + std::to_string(s.nhc.chain_length) + ") or none");
    for (const double q : masses.values) {
      require(std::isfinite(q) && q > 0.0, "simmer.masses", s.masses, "every mass must be a finite number > 0");
    }
  }
  if (masses.martyna) {
    require(hottest > 0.0, "simmer.masses", s.masses,
            "martyna masses Q = N_f T tau^2 need simmer.T_target > 0 (they are set at the "
            "target temperature)");
  }
  const train::Thermostat thermostat = thermostat_of(c);  // (auto never picks a T = 0 ramp)
  if (train::is_nose_hoover_langevin(thermostat) && !ladder && !adam_only) {
    require(s.T_initial > 0.0, "simmer.thermostat", str(train::kThermostatNames, thermostat),
            "needs every temperature > 0 (its variables' mass is T tau^2), but simmer.T_initial = " + str(s.T_initial) +
                ": start the ramp above 0, or use a ladder");
  }
  if (s.start_velocity == train::StartVelocity::adam) {
    require(s.mode == SimmerMode::retrofit, "simmer.start_velocity", "adam",
            "needs simmer.mode = retrofit (ab initio runs have no Adam step)");
  }
  if (s.start_velocity == train::StartVelocity::thermal) {
    require(hottest > 0.0, "simmer.start_velocity", "thermal",
            "needs a temperature > 0 somewhere in the schedule (simmer.T_target = 0)");
  }
  if (s.parameter_masses.kind == train::ParameterMasses::adam) {
    require(s.mode == SimmerMode::retrofit, "simmer.parameter_masses", "adam",
            "needs simmer.mode = retrofit (the masses come from Adam's second moment at the start point)");
  }
  require(s.parameter_masses.warmup == 0 || train::masses_from_warmup(s.parameter_masses.kind), "simmer.mass_warmup",
          str(s.parameter_masses.warmup),
          "is used only with simmer.parameter_masses = adapt or curvature (here " +
              str(train::kParameterMassesNames, s.parameter_masses.kind) +
              "): set that key too, or leave mass_warmup at 0");
  if (train::masses_from_warmup(s.parameter_masses.kind)) {
    const std::string kind = str(train::kParameterMassesNames, s.parameter_masses.kind);
    require(!adam_only, "simmer.parameter_masses", kind, "has no use with simmer.mode = adam (no simmering)");
    require(s.parameter_masses.warmup >= 10, "simmer.mass_warmup", str(s.parameter_masses.warmup),
            "must be >= 10 with simmer.parameter_masses = " + kind + " (the steps the masses are measured over)");
    require(s.parameter_masses.warmup <= r.steps - e.window, "simmer.mass_warmup", str(s.parameter_masses.warmup),
            "must end before the window: at most simmer.steps - ensemble.window = " + str(r.steps - e.window) +
                " (the members are drawn with the adapted masses)");
  }
  const bool posterior_regression =
      s.temperature_unit == TemperatureUnit::posterior && (loss_kind == LossKind::sse || loss_kind == LossKind::mse);
  if (posterior_regression && s.noise_sd) {
    require(*s.noise_sd > 0.0, "simmer.noise_sd", str(*s.noise_sd),
            "must be > 0 with simmer.temperature_unit = posterior and model.loss = " + loss +
                " (T_Bayes = " + (loss_kind == LossKind::sse ? "2 s^2" : "2 s^2 / n") +
                " needs the noise sd s; or auto: the deep ensemble's residuals after Adam)");
  }
  if (posterior_regression && !s.noise_sd) {
    require(s.mode != SimmerMode::abinitio, "simmer.noise_sd", kAutoName,
            "takes the noise sd from the Adam networks' residuals, and an ab initio run has no Adam phase: "
            "give the noise sd in target units (or simmer.temperature_unit = loss)");
    require(!masses.martyna, "simmer.masses", s.masses,
            "martyna masses are set from T, which simmer.noise_sd = auto knows only after Adam: give "
            "simmer.noise_sd, or other masses");
  }
  require(parameters - s.nhc.dof_offset > 0.0, "simmer.dof_offset", str(s.nhc.dof_offset),
          "leaves no degrees of freedom for the " + format_short(parameters) + " parameters of " + m.architecture);
  train::NhcOptions nhc = s.nhc;
  nhc.time_step = s.time_step.value_or(nhc.time_step);
  nhc.masses = masses.values;
  nhc.validate();

  // [ensemble]
  require(e.window <= r.steps, "ensemble.window", str(e.window),
          "is longer than the run (simmer.steps = " + str(r.steps) + ")");
  require(e.count >= 0 && e.count <= e.window, "ensemble.count", str(e.count),
          "must be in [0, ensemble.window = " + str(e.window) + "]");
  require(e.count == 0 || e.fraction == 0.0, "ensemble.fraction", str(e.fraction),
          "and ensemble.count = " + str(e.count) + " are both set: give one");
  e.validate(r.steps);
  require(s.diagnostics.blocks >= 1 && s.diagnostics.blocks <= e.window, "ensemble.blocks", str(s.diagnostics.blocks),
          "must be in [1, ensemble.window = " + str(e.window) + "]");
  if (!e.store_dtype) e.store_dtype = r.precision;
  for (const std::int64_t row : e.store.track) {
    require(row >= 0, "ensemble.track", format_as(e.store.track, false), "test-row index " + str(row) + " is negative");
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
  if (r.trajectories == 0) r.trajectories = world_size / r.ranks_per_trajectory;
  if (s.ladder.mode == run::LadderMode::parallel) {
    require(r.trajectories % static_cast<std::int64_t>(s.ladder.rungs.size()) == 0, "run.trajectories",
            str(r.trajectories),
            "must be a multiple of the ladder's " + std::to_string(s.ladder.rungs.size()) +
                " rungs with simmer.ladder_mode = parallel (trajectory i simmers rung i mod K; 0 means one "
                "per MPI rank group, here " +
                std::to_string(world_size / r.ranks_per_trajectory) + ")");
  }
  require(!r.output.empty(), "run.output", r.output, "must name the output archive");

  // Sizes no machine holds are refused here, before the estimate multiplies them in 64-bit
  // integers (run/budget.cpp): every product it forms then stays far below 2^63. (simmer.steps
  // and adam.epochs are bounded by 1e12 with their keys.)
  constexpr double kMaxBytes = 1e17;  // 100 PB
  require(static_cast<double>(r.trajectories) <= 1e7, "run.trajectories", str(r.trajectories), "must be <= 1e7");
  // Every stage's a trajectory runs (one per ladder rung in turn, one with parallel rungs, none
  // for Adam alone).
  const bool parallel = s.ladder.mode == run::LadderMode::parallel;
  const double stages = adam_only ? 0.0 : (ladder && !parallel ? static_cast<double>(s.ladder.rungs.size()) : 1.0);
  const double members = stages * static_cast<double>(ensemble::member_count(r.steps, e));
  const double chains = static_cast<double>(r.trajectories);
  const double stored = std::ceil(members / static_cast<double>(e.store.every));
  const double posterior = chains * stored * parameters * (*e.store_dtype == Precision::float32 ? 4.0 : 8.0);
  const double trace =
      chains *
      ((stages * static_cast<double>(r.steps) + static_cast<double>(a.epochs)) / static_cast<double>(r.trace_every)) *
      256.0;
  const double tracked = chains * members * static_cast<double>(e.store.track.size()) * 8.0 * 16.0;
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
  refuse_size(tracked, "ensemble.track", format_as(e.store.track, false), "the tracked predictions",
              "fewer tracked rows or members");
  refuse_size(state, "run.trajectories", str(r.trajectories), "the checkpoint",
              "fewer trajectories or a smaller model.architecture");
  return c;
}

}  // namespace

Config validated(const Config& config, int world_size) {
  return with_keys([&] { return validated_unmapped(config, world_size); });
}

}  // namespace simmer::cli
