#include "simmer/app/problem.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"
#include "simmer/data/sine.hpp"
#include "simmer/model/initializer.hpp"

namespace simmer::app {
namespace {

data::Dataset load_all(const cli::Config& c, Problem& p) {
  if (c.data.source == "sine") {
    Rng noise_rng(c.data.split_seed, 1);
    data::SineSpec spec;
    spec.points = c.data.sine_points;
    spec.noise = c.data.sine_noise;
    auto d = data::make_noisy_sine(spec, noise_rng);
    p.rows_read = d.rows();
    return d;
  }
  data::CsvSpec spec;
  spec.path = c.data.path;
  spec.features = c.data.features;
  spec.target = c.data.target;
  spec.task = c.data.task == "classification" ? data::Task::classification : data::Task::regression;
  data::CsvReport report;
  auto d = data::read_csv(spec, &report);
  p.rows_read = report.rows_read;
  p.rows_dropped = report.rows_dropped;
  return d;
}

/// "'data/iris.csv' (150 rows)": where the rows came from, for split-size messages.
std::string rows_of(const cli::Config& c, std::int64_t rows, std::int64_t dropped) {
  std::string what = c.data.source == "csv" ? "'" + c.data.path + "'" : "the sine data";
  what += " (" + std::to_string(rows) + " rows";
  if (dropped > 0) what += " after dropping " + std::to_string(dropped) + " with a missing value";
  return what + ")";
}

/// data.train / data.test against the rows the data has, naming the key, the value and the
/// file, before the split (whose own message knows neither). Written so that no sum of two
/// user values can overflow.
void check_split_sizes(const cli::Config& c, std::int64_t rows, std::int64_t dropped) {
  const std::int64_t train = c.data.train;
  const std::int64_t test = c.data.test;
  if (train <= 0) {  // data.train_fraction decides
    const auto n_train = static_cast<std::int64_t>(
        std::llround(c.data.train_fraction * static_cast<double>(rows)));
    if (n_train < 1 || n_train >= rows) {
      throw option_error("data.train_fraction", std::to_string(c.data.train_fraction),
                         "gives " + std::to_string(n_train) + " training rows of " +
                             rows_of(c, rows, dropped) + "; both train and test need at least one");
    }
    return;
  }
  if (train >= rows) {
    throw option_error("data.train", std::to_string(train),
                       "leaves no test rows: the data is " + rows_of(c, rows, dropped));
  }
  if (test > rows - train) {
    throw option_error("data.test", std::to_string(test),
                       "data.train = " + std::to_string(train) + " + data.test = " +
                           std::to_string(test) + " rows > " + rows_of(c, rows, dropped));
  }
}

}  // namespace

Problem build_problem(const cli::Config& c) {
  Problem p;
  p.config = c;
  const data::Dataset all = load_all(c, p);
  check_split_sizes(c, all.rows(), p.rows_dropped);
  Rng split_rng(c.data.split_seed, 0);
  const data::Split split =
      c.data.train > 0 ? data::split_by_count(all.rows(), c.data.train,
                                              c.data.test > 0 ? c.data.test : all.rows() - c.data.train,
                                              split_rng)
                       : data::split_by_fraction(all.rows(), c.data.train_fraction, split_rng);
  p.train = data::subset(all, split.train);
  p.test = data::subset(all, split.test);
  p.classification = all.task == data::Task::classification;
  p.loss = model::parse_loss(c.model.loss);
  p.outputs = all.outputs();
  p.classes = p.classification ? all.outputs() : 0;
  // Binary cross-entropy: one logit per row for two classes; the target is the class index.
  const bool binary = p.classification && p.loss == model::LossKind::bce;
  if (binary && p.classes != 2) {
    throw option_error("model.loss", c.model.loss,
                       "needs exactly two classes; '" + c.data.target + "' has " + std::to_string(p.classes) +
                           " (use cce)");
  }
  if (binary) p.outputs = 1;

  p.architecture.layers = c.model.architecture;
  p.architecture.activation = model::parse_activation(c.model.activation);
  p.architecture.output = model::parse_activation(c.model.output);
  const auto widths = model::parse_widths(c.model.architecture);
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
  p.init = model::parse_init(c.model.init);
  p.mode = train::parse_start_mode(c.simmer.mode);

  p.adam.learning_rate = c.adam.lr;
  p.adam.beta1 = c.adam.beta1;
  p.adam.beta2 = c.adam.beta2;
  p.adam.epsilon = c.adam.epsilon;
  p.adam.epochs = p.mode == train::StartMode::retrofit ? c.adam.epochs : 0;
  p.adam.batch_size = c.adam.batch;
  p.nhc.time_step = c.simmer.time_step;
  p.nhc.chain_length = c.simmer.chain_length;
  p.nhc.masses = c.simmer.masses;
  p.nhc.dof_offset = c.simmer.dof_offset;
  p.ramp = {c.simmer.T_initial, c.simmer.T_target, c.simmer.dT, c.simmer.every};
  p.sampling.window = c.ensemble.window;
  p.sampling.stride = c.ensemble.stride;
  p.sampling.count = c.ensemble.count;
  p.sampling.fraction = c.ensemble.fraction;

  p.x_scaler = data::MinMaxScaler::fit(p.train.x);
  if (!p.classification) {
    p.y_scaler = data::MinMaxScaler::fit(p.train.y);
    p.output_scale = p.y_scaler.scale();
    p.output_offset = p.y_scaler.offset();
  }
  for (const auto& [name, d] : {std::pair{"train", &p.train}, std::pair{"test", &p.test}}) {
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
  for (const auto t : c.ensemble.track) {
    if (t >= p.test.rows()) {
      throw option_error("ensemble.track", std::to_string(t),
                         "is not a test row (the test set has " + std::to_string(p.test.rows()) +
                             " rows)");
    }
  }
  if (!c.ensemble.points.empty()) {
    data::CsvSpec spec;
    spec.path = c.ensemble.points;
    spec.features = all.feature_names;
    spec.target = all.feature_names.front();  // any numeric column: the points have no target
    spec.task = data::Task::regression;
    const auto pts = data::read_csv(spec);
    EvalSet s;
    s.name = "points";
    s.x_raw = pts.x;
    s.x = p.x_scaler.transform(pts.x);
    p.sets.push_back(std::move(s));
  }
  return p;
}

}  // namespace simmer::app
