#include "simmer/cli/problem.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>

#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"
#include "simmer/data/higgs.hpp"
#include "simmer/data/idx.hpp"
#include "simmer/data/sine.hpp"
#include "simmer/model/initializer.hpp"

namespace simmer::cli {
namespace {

using run::EvalSet;
using run::Problem;

data::Dataset load_all(const Config& c, Problem& p) {
  if (c.data.source == "sine") {
    Rng noise_rng = Rng::named(c.data.split_seed, 0, RngPurpose::data_noise);
    data::SineSpec spec;
    spec.points = c.data.sine_points;
    spec.noise = c.data.sine_noise;
    auto d = data::make_noisy_sine(spec, noise_rng);
    p.rows_read = d.rows();
    return d;
  }
  if (c.data.source == "synthetic_higgs") {
    const std::int64_t rows = c.data.rows > 0 ? c.data.rows : c.data.train + c.data.test;
    if (rows < 2) {
      throw option_error("data.rows", std::to_string(c.data.rows),
                         "gives " + std::to_string(rows) + " synthetic rows; set data.rows or data.train");
    }
    auto d = data::make_synthetic_higgs(rows, c.data.split_seed);
    p.rows_read = d.rows();
    return d;
  }
  if (c.data.source == "higgs") {
    auto d = data::read_higgs_csv(c.data.path, c.data.rows);
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

/// dir/<part>-<kind>-ubyte.gz, else the uncompressed name; data.path is named when neither exists.
std::string idx_file(const std::string& dir, const std::string& part, const std::string& kind) {
  const std::string base = dir + "/" + part + "-" + kind + "-ubyte";
  for (const std::string& path : {base + ".gz", base}) {
    if (std::filesystem::is_regular_file(path)) return path;
  }
  throw option_error("data.path", dir,
                     "has no " + part + "-" + kind +
                         "-ubyte[.gz] (an IDX directory holds "
                         "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                         "t10k-labels-idx1-ubyte, each optionally gzip-compressed)");
}

/// `count` images drawn at random (without replacement, in drawn order) from one IDX pair, as
/// a classification data set with ten classes and pixel values in [0, 255].
data::Dataset load_idx_part(const std::string& dir, const std::string& part, const std::string& key, std::int64_t count,
                            Rng& rng, Problem& p) {
  const std::string images_path = idx_file(dir, part, "images-idx3");
  const std::string labels_path = idx_file(dir, part, "labels-idx1");
  const data::IdxImages images = data::read_idx_images(images_path);
  const std::vector<std::uint8_t> labels = data::read_idx_labels(labels_path);
  if (static_cast<std::int64_t>(labels.size()) != images.count) {
    throw Error(labels_path + ": " + std::to_string(labels.size()) + " labels for the " + std::to_string(images.count) +
                " images of " + images_path);
  }
  p.rows_read += images.count;
  if (count > images.count) {
    throw option_error(key, std::to_string(count),
                       "is more than the " + std::to_string(images.count) + " images of " + images_path);
  }
  const data::Split pick = data::split_by_count(images.count, count, 0, rng);
  const Index pixels = images.rows * images.cols;
  data::Dataset d;
  d.task = data::Task::classification;
  d.x.resize(count, pixels);
  d.labels.resize(static_cast<std::size_t>(count));
  for (Index r = 0; r < count; ++r) {
    const auto i = pick.train[static_cast<std::size_t>(r)];
    const std::uint8_t* src = images.pixels.data() + i * pixels;
    for (Index j = 0; j < pixels; ++j) d.x(r, j) = static_cast<double>(src[j]);
    const std::uint8_t label = labels[static_cast<std::size_t>(i)];
    if (label > 9) {
      throw Error(labels_path + ": label " + std::to_string(label) + " of item " + std::to_string(i) +
                  " is not a digit class 0..9");
    }
    d.labels[static_cast<std::size_t>(r)] = label;
  }
  d.y = data::one_hot(d.labels, 10);
  for (int k = 0; k < 10; ++k) d.class_names.push_back(std::to_string(k));
  for (Index j = 0; j < pixels; ++j) {
    std::string name = "p";  // (not "p" + to_string: GCC 12's -Wrestrict false positive)
    name += std::to_string(j);
    d.feature_names.push_back(std::move(name));
  }
  d.target_names = {"label"};
  d.image_shape = {images.rows, images.cols, 1};
  return d;
}

/// "'data/iris.csv' (150 rows)": where the rows came from, for split-size messages.
std::string rows_of(const Config& c, std::int64_t rows, std::int64_t dropped) {
  std::string what = c.data.source == "sine"              ? std::string("the sine data")
                     : c.data.source == "synthetic_higgs" ? std::string("the synthetic HIGGS data")
                                                          : "'" + c.data.path + "'";
  what += " (" + std::to_string(rows) + " rows";
  if (dropped > 0) what += " after dropping " + std::to_string(dropped) + " with a missing value";
  return what + ")";
}

/// data.train / data.test against the rows the data has, naming the key, the value and the
/// file, before the split (whose own message knows neither). Written so that no sum of two
/// user values can overflow.
void check_split_sizes(const Config& c, std::int64_t rows, std::int64_t dropped) {
  const std::int64_t train = c.data.train;
  const std::int64_t test = c.data.test;
  if (train <= 0) {  // data.train_fraction decides
    const auto n_train = static_cast<std::int64_t>(std::llround(c.data.train_fraction * static_cast<double>(rows)));
    if (n_train < 1 || n_train >= rows) {
      throw option_error("data.train_fraction", std::to_string(c.data.train_fraction),
                         "gives " + std::to_string(n_train) + " training rows of " + rows_of(c, rows, dropped) +
                             "; both train and test need at least one");
    }
    return;
  }
  if (train >= rows) {
    throw option_error("data.train", std::to_string(train),
                       "leaves no test rows: the data is " + rows_of(c, rows, dropped));
  }
  if (test > rows - train) {
    throw option_error("data.test", std::to_string(test),
                       "data.train = " + std::to_string(train) + " + data.test = " + std::to_string(test) + " rows > " +
                           rows_of(c, rows, dropped));
  }
}

run::Problem build(const Config& c);

}  // namespace

run::Problem build_problem(const Config& c) {
  return with_keys([&] { return build(c); });
}

namespace {

run::Problem build(const Config& c) {
  Problem p;
  p.config_ini = to_ini(c);
  Rng split_rng = Rng::named(c.data.split_seed, 0, RngPurpose::data_split);
  if (c.data.source == "idx") {
    // Image sets come as a training and a test file: each split draws from its own file.
    if (c.data.train <= 0 || c.data.test <= 0) {
      throw option_error(c.data.train <= 0 ? "data.train" : "data.test",
                         std::to_string(c.data.train <= 0 ? c.data.train : c.data.test),
                         "must be > 0 with data.source = idx (images drawn from the train-* and "
                         "t10k-* files)");
    }
    p.train = load_idx_part(c.data.path, "train", "data.train", c.data.train, split_rng, p);
    p.test = load_idx_part(c.data.path, "t10k", "data.test", c.data.test, split_rng, p);
  } else {
    const data::Dataset all = load_all(c, p);
    check_split_sizes(c, all.rows(), p.rows_dropped);
    const data::Split split =
        c.data.train > 0 ? data::split_by_count(all.rows(), c.data.train,
                                                c.data.test > 0 ? c.data.test : all.rows() - c.data.train, split_rng)
                         : data::split_by_fraction(all.rows(), c.data.train_fraction, split_rng);
    p.train = data::subset(all, split.train);
    p.test = data::subset(all, split.test);
  }
  const data::Dataset& all = p.train;  // names, task, sizes and image shape
  p.classification = all.task == data::Task::classification;
  p.loss = model::parse_loss(c.model.loss);
  p.outputs = all.outputs();
  p.classes = p.classification ? all.outputs() : 0;
  // Binary cross-entropy: one logit per row for two classes; the target is the class index.
  const bool binary = p.classification && p.loss == model::LossKind::bce;
  if (binary && p.classes != 2) {
    throw option_error(
        "model.loss", c.model.loss,
        "needs exactly two classes; '" + c.data.target + "' has " + std::to_string(p.classes) + " (use cce)");
  }
  if (binary) p.outputs = 1;

  p.architecture.layers = c.model.architecture;
  p.architecture.activation = model::parse_activation(c.model.activation);
  p.architecture.output = model::parse_activation(c.model.output);
  p.architecture.pooling = c.model.pooling == "max" ? model::PoolKind::max : model::PoolKind::average;
  p.architecture.input_shape = all.image_shape;
  p.architecture.outputs = p.outputs;
  if (c.model.architecture == "lenet5") {
    if (all.image_shape.size() != 3 || all.image_shape[0] < 12 || all.image_shape[1] < 12) {
      throw option_error("model.architecture", c.model.architecture,
                         "needs images of at least 12x12 pixels (data.source = idx)");
    }
    // The parameter count depends on the image size: check the degrees of freedom again.
    const auto n = static_cast<double>(model::build_network(p.architecture).parameter_count());
    if (n - c.simmer.dof_offset <= 0.0) {
      throw option_error("simmer.dof_offset", std::to_string(c.simmer.dof_offset),
                         "leaves no degrees of freedom for the " + std::to_string(static_cast<long long>(n)) +
                             " parameters of lenet5 on these images");
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
  p.init = model::parse_init(c.model.init);
  p.mode = train::parse_start_mode(c.simmer.mode);

  p.adam.learning_rate = c.adam.lr;
  p.adam.beta1 = c.adam.beta1;
  p.adam.beta2 = c.adam.beta2;
  p.adam.epsilon = c.adam.epsilon;
  p.adam.epochs = p.mode == train::StartMode::retrofit ? c.adam.epochs : 0;
  p.adam.batch_size = c.adam.batch;
  p.start_velocity = train::parse_start_velocity(c.simmer.start_velocity, p.mode);
  const auto probe_layout = [&] {
    model::Network probe = model::build_network(p.architecture);
    p.parameters = probe.parameter_count();
    return probe.layout();
  }();
  p.bayes_temperature = train::bayes_temperature(p.loss, p.train.rows(), p.outputs, c.simmer.noise_sd);
  p.ramp = {c.simmer.T_initial, c.simmer.T_target, c.simmer.dT, c.simmer.every};
  if (c.simmer.temperature_unit == "posterior") p.ramp = p.ramp.scaled(p.bayes_temperature);
  p.nhc.time_step = c.simmer.time_step;
  p.nhc.chain_length = c.simmer.chain_length;
  p.nhc.dof_offset = c.simmer.dof_offset;
  p.nhc.thermostat = train::parse_thermostat(c.simmer.thermostat);
  p.nhc.friction = c.simmer.friction;
  const MassSpec masses = parse_masses(c.simmer.masses);
  p.nhc.masses = masses.martyna ? train::martyna_masses(c.simmer.chain_length,
                                                        static_cast<double>(p.parameters) - c.simmer.dof_offset,
                                                        p.ramp.target, c.simmer.tau)
                                : masses.values;
  p.prior_rms = std::nan("");
  if (c.simmer.prior == "gaussian") {
    p.nhc.prior_precision = train::gaussian_prior_precision(probe_layout, p.parameters, c.simmer.prior_sigma,
                                                            train::parse_prior_scaling(c.simmer.prior_scaling));
    p.prior_rms = train::prior_rms(p.nhc.prior_precision);
  }
  p.start_jitter = c.simmer.start_jitter;
  p.noise_sd = c.simmer.noise_sd;
  p.model_text = {c.model.architecture, c.model.activation, c.model.output,
                  c.model.loss,         c.model.init,       c.model.pooling};
  // How the run is carried out: every string option becomes an enum here, once.
  p.run.trajectories = c.run.trajectories;
  p.run.seed = c.run.seed;
  p.run.steps = c.simmer.steps;
  p.run.gather_interval = c.run.gather_interval;
  p.run.trace_every = c.run.trace_every;
  p.run.checkpoint_interval = c.run.checkpoint_interval;
  p.run.sync_every = c.run.sync_every;
  p.run.adam_checkpoint_every = c.adam.checkpoint_every;
  p.run.ranks_per_trajectory = c.run.ranks_per_trajectory;
  p.run.gradient_chunks = c.run.gradient_chunks;
  p.run.output = c.run.output;
  using Progress = run::RunOptions::Progress;
  p.run.progress = c.run.progress == "bar"     ? Progress::bar
                   : c.run.progress == "lines" ? Progress::lines
                                               : Progress::automatic;
  p.run.progress_seconds = c.run.progress_seconds;
  p.health.every = c.simmer.health_every;
  p.health.on_divergence = c.simmer.on_divergence == "warn" ? run::HealthOptions::OnDivergence::warn
                                                            : run::HealthOptions::OnDivergence::stop;
  using Stability = run::HealthOptions::StabilityCheck;
  p.health.stability_check = c.simmer.stability_check == "off"    ? Stability::off
                             : c.simmer.stability_check == "warn" ? Stability::warn
                                                                  : Stability::refuse;
  p.store.every = c.ensemble.store_every;
  p.store.float32 = c.ensemble.store_dtype == "float32";
  p.store.track = c.ensemble.track;
  p.diagnostics.blocks = c.ensemble.blocks;
  using Report = run::DiagnosticsOptions::CurvatureReport;
  p.diagnostics.curvature_report = c.simmer.curvature_report == "off"     ? Report::off
                                   : c.simmer.curvature_report == "start" ? Report::start
                                                                          : Report::start_end;
  p.diagnostics.lanczos_steps = c.simmer.lanczos_steps;
  p.diagnostics.lanczos_probes = c.simmer.lanczos_probes;
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
                         "is not a test row (the test set has " + std::to_string(p.test.rows()) + " rows)");
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
  if (p.run.gradient_chunks > p.sets[0].rows()) {
    throw Error("option 'run.gradient_chunks' = '" + std::to_string(p.run.gradient_chunks) +
                "': more row blocks than the " + std::to_string(p.sets[0].rows()) + " training rows");
  }
  return p;
}

}  // namespace
}  // namespace simmer::cli
