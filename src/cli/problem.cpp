#include "simmer/cli/problem.hpp"

#include "config_keys.hpp"
#include "config_text.hpp"
#include "problem_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"
#include "simmer/model/initializer.hpp"

namespace simmer::cli {
namespace {

using detail::format_as;
using detail::format_short;
using run::EvalSet;
using run::Problem;

run::Problem build(const Config& c);

}  // namespace

run::Problem build_problem(const Config& c, PriorVector prior) {
  return with_keys([&] {
    run::Problem p = build(c);
    if (prior == PriorVector::filled) p.fill_prior_precision();
    return p;
  });
}

std::string rows_line(const run::Problem& p) {
  const std::int64_t used = p.train.rows() + p.validation.rows() + p.test.rows();
  const std::int64_t unused = p.rows_read - p.rows_dropped - used;
  std::string out = "rows: " + std::to_string(p.rows_read) + " read; train " + std::to_string(p.train.rows()) +
                    ", validation " + std::to_string(p.validation.rows()) + ", test " + std::to_string(p.test.rows());
  if (p.rows_dropped > 0) out += ", " + std::to_string(p.rows_dropped) + " dropped (a missing value)";
  if (unused > 0) {
    out +=
        ", " + std::to_string(unused) + " unused (data.train + data.test are fixed counts; 0 for both uses every row)";
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> input_files(const Config& c) {
  std::vector<std::pair<std::string, std::string>> out;
  if (c.data.source == DataSource::csv || c.data.source == DataSource::higgs)
    out.emplace_back("data.path", c.data.path);
  if (c.data.source == DataSource::idx) {
    for (const char* part : {"train", "t10k"}) {
      for (const char* kind : {"images-idx3", "labels-idx1"}) {
        const std::string file = idx_file(c.data.path, part, kind);
        out.emplace_back("data.path/" + std::filesystem::path(file).filename().string(), file);
      }
    }
  }
  if (!c.ensemble.points.empty()) out.emplace_back("ensemble.points", c.ensemble.points);
  return out;
}

namespace {

/// Refuses a temperature (absolute, after temperature_unit) that no step can integrate, or at which
/// one step of a fixed simmer.time_step throws every parameter beyond run::kMaxThermalDisplacement,
/// naming the key that set it (an automatic step is checked after Adam, with the step it chose:
/// parallel/driver.cpp).
void check_hottest(const Problem& p, const Config& c) {
  // (Temperatures in units of a T_Bayes that is measured after Adam are checked there too.)
  if (p.posterior_pending) return;
  const double h = c.simmer.time_step.value_or(std::numeric_limits<double>::quiet_NaN());
  const std::string why = run::too_hot(p, h, "simmer.time_step = " + format_short(h));
  if (why.empty()) return;
  const bool ladder = !p.ladder.rungs.empty();
  const std::string key = run::hottest_key(p);
  throw option_error(key,
                     ladder                      ? format_as(c.simmer.ladder.rungs, false)
                     : key == "simmer.T_initial" ? format_short(c.simmer.T_initial)
                                                 : format_short(c.simmer.T_target),
                     why);
}

/// The data's part: the splits, and what the task asks of the network (outputs, classes, the
/// loss: a binary cross-entropy has one logit for two classes).
void set_task(const Config& given, Problem& p) {
  load_splits(given, p);
  const data::Dataset& all = p.train;  // names, task, sizes and image shape
  p.outputs = all.outputs();
  p.classes = p.classification ? all.outputs() : 0;
  p.loss = loss_of(given);
  const bool binary = p.classification && p.loss == model::LossKind::bce;
  if (binary && p.classes != 2) {
    throw option_error(
        "model.loss", model::to_string(p.loss),
        "needs exactly two classes; '" + given.data.target + "' has " + std::to_string(p.classes) + " (use cce)");
  }
  if (binary) p.outputs = 1;
}

/// The configuration as the run uses it: what auto chose (the loss, the thermostat, the widths),
/// which the archive records (a merge, a resume and the analysis read them from it).
Config resolved(const Config& given, const Problem& p) {
  Config c = given;
  c.model.loss = p.loss;
  c.simmer.thermostat = thermostat_of(given);
  if (given.model.architecture == kAutoName) {
    c.model.architecture = std::to_string(p.train.features()) + "-" + kAutoHidden + "-" + std::to_string(p.outputs);
  }
  return c;
}

/// The network: its widths checked against the data, its parameter count (from the layout alone:
/// a network too large for the node is refused by the memory check before anything of its size
/// is allocated) and the prior on its parameters.
void set_model(const Config& given, const Config& c, Problem& p) {
  const data::Dataset& all = p.train;
  p.architecture.layers = c.model.architecture;
  p.architecture.input_shape = all.image_shape;
  p.architecture.outputs = p.outputs;
  if (c.model.architecture == "lenet5" &&
      (all.image_shape.size() != 3 || all.image_shape[0] < 12 || all.image_shape[1] < 12)) {
    throw option_error("model.architecture", c.model.architecture,
                       "needs images of at least 12x12 pixels (data.source = idx)");
  }
  if (c.model.architecture == "lenet5" || given.model.architecture == kAutoName) {
    // The parameter count depends on the data: check the degrees of freedom again.
    const auto n = static_cast<double>(model::parameter_count(model::network_layout(p.architecture)));
    if (n - c.simmer.nhc.dof_offset <= 0.0) {
      throw option_error("simmer.dof_offset", std::to_string(c.simmer.nhc.dof_offset),
                         "leaves no degrees of freedom for the " + std::to_string(static_cast<long long>(n)) +
                             " parameters of " + c.model.architecture + " on this data");
    }
  }
  const auto widths = c.model.architecture == "lenet5" ? std::vector<Index>{all.features(), p.outputs}
                                                       : model::parse_widths(c.model.architecture);
  if (widths.front() != all.features()) {
    throw option_error("model.architecture", c.model.architecture,
                       "takes " + std::to_string(widths.front()) + " inputs but the data has " +
                           std::to_string(all.features()) + " feature column(s)");
  }
  if (widths.back() != p.outputs) {
    throw option_error("model.architecture", c.model.architecture,
                       "gives " + std::to_string(widths.back()) + " outputs but the data needs " +
                           std::to_string(p.outputs) +
                           (p.classification ? " (one logit per class)" : " (one per target)"));
  }
  const auto layout = model::network_layout(p.architecture);
  p.parameters = model::parameter_count(layout);
  p.prior_rms = std::nan("");
  if (c.simmer.prior == Prior::gaussian) {
    p.prior_sigma = c.simmer.prior_sigma;
    p.prior_scaling = c.simmer.prior_scaling;
    p.prior_rms = train::gaussian_prior_rms(layout, p.parameters, p.prior_sigma, p.prior_scaling);
  }
  p.model_text = {c.model.architecture,     model::to_string(c.model.activation), model::to_string(c.model.output),
                  model::to_string(p.loss), model::to_string(c.model.init),       model::to_string(c.model.pooling)};
}

/// The integrator: the mode, the temperatures (the ramp or the ladder, in loss units once the
/// noise sd is known), the thermostat, the step and the thermostat's masses.
void set_integrator(const Config& c, Problem& p) {
  // simmer.mode = adam: a retrofit's Adam phase alone (the deep ensemble).
  p.adam_only = c.simmer.mode == SimmerMode::adam;
  if (p.adam_only) p.ladder.rungs.clear();  // nothing simmers: no rungs (the rules ignore the key too)
  p.mode = c.simmer.mode == SimmerMode::abinitio ? train::StartMode::abinitio : train::StartMode::retrofit;
  p.adam.epochs = p.mode == train::StartMode::retrofit ? c.adam.epochs : 0;
  p.start_velocity = train::parse_start_velocity(
      c.simmer.start_velocity ? train::to_string(*c.simmer.start_velocity) : std::string(kAutoName), p.mode);
  // simmer.noise_sd = auto: the deep ensemble's residuals after Adam set it (Problem::set_noise_sd).
  const bool regression_loss = p.loss == model::LossKind::sse || p.loss == model::LossKind::mse;
  p.noise_pending = regression_loss && !c.simmer.noise_sd && p.mode == train::StartMode::retrofit;
  p.bayes_temperature = train::bayes_temperature(p.loss, p.train.rows(), p.outputs, 0.0);  // until it is known
  p.ramp = {c.simmer.T_initial, c.simmer.T_target, c.simmer.dT, c.simmer.every};
  if (!p.ladder.rungs.empty()) {
    // The ladder replaces the ramp; the ramp stays constant at the first rung (the start
    // velocity, Martyna masses and the curvature report use it).
    const cli::Config defaults;
    if (c.simmer.T_initial != defaults.simmer.T_initial || c.simmer.T_target != defaults.simmer.T_target ||
        c.simmer.dT != defaults.simmer.dT || c.simmer.every != defaults.simmer.every) {
      p.notes.push_back(
          "simmer.ladder replaces the ramp: simmer.T_initial, T_target, dT and every are not used (the ladder is "
          "the default; an empty simmer.ladder, e.g. --simmer.ladder '', runs the ramp)");
    }
    p.ramp = {p.ladder.rungs.front(), p.ladder.rungs.front(), 0.0, 1};
  }
  // In posterior units the ramp and the ladder hold multiples of T_Bayes until the noise sd is
  // known: now, or after Adam (auto). set_noise_sd turns them into loss units either way.
  p.posterior_pending = c.simmer.temperature_unit == TemperatureUnit::posterior;
  p.posterior_units = p.posterior_pending;
  if (!p.noise_pending) {
    const double sd = c.simmer.noise_sd.value_or(0.0);
    p.set_noise_sd(sd, sd > 0.0 ? "simmer.noise_sd" : "unknown");
  }
  check_hottest(p, c);
  p.nhc.thermostat = *c.simmer.thermostat;
  p.nhc.time_step = c.simmer.time_step.value_or(std::numeric_limits<double>::quiet_NaN());
  p.auto_step.on = !c.simmer.time_step.has_value();
  if (p.adam_only && p.auto_step.on) {
    // Adam alone integrates nothing: no step to choose (the library's default keeps the
    // integrator's options valid).
    p.auto_step.on = false;
    p.nhc.time_step = train::NhcOptions{}.time_step;
  }
  const MassSpec masses = parse_masses(c.simmer.masses);
  p.nhc.masses = masses.martyna ? train::martyna_masses(c.simmer.nhc.chain_length,
                                                        static_cast<double>(p.parameters) - c.simmer.nhc.dof_offset,
                                                        p.ramp.target, c.simmer.tau)
                                : masses.values;
}

/// What the ensemble is scored and evaluated on: the scalers fitted to the training rows, every
/// set with targets (train, test, validation) and the optional points, each as the network sees
/// it; the rows to track; how /posterior is stored.
void set_evaluation(const Config& c, Problem& p) {
  const data::Dataset& all = p.train;
  const bool binary = p.classification && p.loss == model::LossKind::bce;
  p.store.float32 = c.ensemble.store_dtype.value_or(c.run.precision) == Precision::float32;
  p.x_scaler = data::MinMaxScaler::fit(p.train.x);
  if (!p.classification) {
    p.y_scaler = data::MinMaxScaler::fit(p.train.y);
    p.output_scale = p.y_scaler.scale();
    p.output_offset = p.y_scaler.offset();
  }
  std::vector<std::pair<const char*, const data::Dataset*>> scored{{"train", &p.train}, {"test", &p.test}};
  if (p.has_validation()) scored.emplace_back("validation", &p.validation);
  for (const auto& [name, d] : scored) {
    EvalSet s;
    s.name = name;
    s.x_raw = d->x;
    s.x = p.x_scaler.transform(d->x);
    s.y = d->y;
    if (binary) {
      s.y.resize(d->rows(), 1);
      for (Index i = 0; i < d->rows(); ++i) s.y(i, 0) = static_cast<double>(d->labels[static_cast<std::size_t>(i)]);
    }
    s.labels = d->labels;
    p.sets.push_back(std::move(s));
  }
  for (const auto t : c.ensemble.store.track) {
    if (t >= p.test.rows()) {
      throw option_error("ensemble.track", std::to_string(t),
                         "is not a test row (the test set has " + std::to_string(p.test.rows()) + " rows)");
    }
  }
  std::vector<const data::Dataset*> with_targets{&p.train, &p.test};
  if (p.has_validation()) with_targets.push_back(&p.validation);
  check_scaling(p.x_scaler, with_targets, false);
  if (!p.classification) check_scaling(p.y_scaler, with_targets, true);
  if (!c.ensemble.points.empty()) {
    // The points are read as the data is (delimiter, missing tokens), but every point must be
    // complete: a dropped row would shift the points' indices.
    data::CsvSpec spec = csv_spec(c);
    spec.path = c.ensemble.points;
    spec.features = all.feature_names;
    spec.exclude.clear();
    spec.target = all.feature_names.front();  // any numeric column: the points have no target
    spec.task = data::Task::regression;
    data::CsvReport report;
    const auto pts = data::read_csv(spec, &report);
    if (report.rows_dropped > 0) {
      throw option_error("ensemble.points", c.ensemble.points,
                         data::describe_drops(report) + "; every point needs every feature");
    }
    check_scaling(p.x_scaler, {&pts}, false);
    EvalSet s;
    s.name = "points";
    s.x_raw = pts.x;
    s.x = p.x_scaler.transform(pts.x);
    p.sets.push_back(std::move(s));
  }
  if (p.run.gradient_chunks > p.sets[0].rows()) {
    throw Error("option 'run.gradient_chunks' = '" + std::to_string(p.run.gradient_chunks) +
                "': more row blocks than the " + std::to_string(p.sets[0].rows()) + " training rows");
  }
  for (auto& s : p.sets) s.prepare(p.run.precision);
}

/// build_problem by job: every key of a Part copied to the Problem's struct (copy_into),
/// then the task, the configuration as run, the model, the integrator and the evaluation sets,
/// each checking its own keys against the data.
run::Problem build(const Config& given) {
  Problem p;
  detail::copy_into(given, p);
  set_task(given, p);
  const Config c = resolved(given, p);
  p.config_ini = to_ini(c);
  set_model(given, c, p);
  set_integrator(c, p);
  set_evaluation(c, p);
  return p;
}

}  // namespace
}  // namespace simmer::cli
