#include "simmer/posthoc/run_archive.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/sampling.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::posthoc {
namespace {

namespace layout = run::layout;

Eigen::RowVectorXd row_of(const std::vector<double>& v) {
  return Eigen::Map<const Eigen::RowVectorXd>(v.data(), static_cast<Index>(v.size()));
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

/// Every per-chain dataset of the layout table (run::layout::chain_datasets, the one the run
/// creates them from) has the dims and type the table gives for this archive's chains, draws,
/// parameters and trace records; the required ones exist.
void check_chain_datasets(const io::ArchiveReader& r, const RunArchive& run) {
  layout::ArchiveCounts counts;
  counts.chains = run.chains;
  counts.draws = run.draws;
  counts.parameters = run.parameters;
  counts.float32 = run.store_type == io::Type::f32;
  if (r.exists(layout::kTraceStep)) {
    const auto t = r.dims(layout::kTraceStep);
    counts.trace_records = t.size() == 2 ? t[1] : -1;
  }
  for (const auto& d : layout::chain_datasets(counts)) {
    if (!r.exists(d.path)) {
      if (d.required) r.require(d.path, "a dataset every simmer archive has");
      continue;
    }
    const auto dims = r.dims(d.path);
    if (dims != d.dims) {
      throw Error("'" + r.path() + "': " + d.path + " has dims " + dims_text(dims) + ", expected " + dims_text(d.dims) +
                  " for " + std::to_string(run.chains) + " chains of " + std::to_string(run.draws) + " draws and " +
                  std::to_string(run.parameters) + " parameters");
    }
    if (r.type(d.path) != d.dtype) throw Error("'" + r.path() + "': " + d.path + " has the wrong element type");
  }
}

}  // namespace

std::vector<Index> parse_input_shape(const std::string& text, const std::string& origin) {
  // "28x28x1 (height x width x channels)": the first word, split at 'x'.
  const std::string word = text.substr(0, text.find(' '));
  std::vector<Index> shape;
  std::stringstream in(word);
  std::string part;
  while (std::getline(in, part, 'x')) {
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || end == nullptr || *end != '\0' || v <= 0) {
      shape.clear();
      break;
    }
    shape.push_back(static_cast<Index>(v));
  }
  if (shape.size() != 3) {
    throw Error("'" + origin + "': " + layout::kModel + " attribute " + layout::kInputShape + " '" + text +
                "' is not 'HEIGHTxWIDTHxCHANNELS'");
  }
  return shape;
}

RunArchive load_run(const io::ArchiveReader& r) {
  RunArchive run;
  run.path = r.path();
  // The objects every subcommand relies on, in the order a reader meets them.
  if (!r.has_attribute(layout::kRoot, layout::kSimmerVersion)) {
    throw Error("'" + r.path() + "' is not a simmer archive: no root attribute '" + layout::kSimmerVersion + "'");
  }
  r.require(layout::kConfig, "the run's configuration");
  r.require(layout::kModel, "the network layout");
  r.require(layout::kFeatureNames, "the input columns");
  r.require(layout::kXMin, "the input scaling");
  r.require(layout::kXMax, "the input scaling");
  r.require(layout::kPosteriorParams, "the stored networks");
  r.require(layout::kSampleStep, "the stored draws' steps");
  r.require(layout::kEnsemble, "the run's ensemble");
  r.require(layout::kMetrics, "the run's metrics");
  if (!r.has_attribute(layout::kModel, layout::kParameters)) {
    throw Error("'" + r.path() + "' is not a simmer archive: " + layout::kModel + " has no attribute '" +
                layout::kParameters + "'");
  }

  const auto config = r.read_strings(layout::kConfig);
  if (config.size() != 1) throw Error("'" + r.path() + "': " + layout::kConfig + " does not hold one INI text");
  run.config_text = config.front();
  cli::apply_ini(run.config_text, r.path() + ":" + layout::kConfig, run.config);
  const cli::Config& c = run.config;

  run.classification = r.has_attribute(layout::kRoot, layout::kTask)
                           ? r.attribute_text(layout::kRoot, layout::kTask) == to_string(data::Task::classification)
                           : c.data.task == data::Task::classification;
  run.feature_names = r.read_strings(layout::kFeatureNames);
  if (r.exists(layout::kTargetNames)) run.target_names = r.read_strings(layout::kTargetNames);
  if (run.classification) {
    r.require(layout::kClassNames, "the class labels of a classification run");
    run.class_names = r.read_strings(layout::kClassNames);
  } else {
    r.require(layout::kYMin, "the output scaling of a regression run");
    r.require(layout::kYMax, "the output scaling of a regression run");
    run.y_scaler = data::MinMaxScaler(row_of(r.read_doubles(layout::kYMin)), row_of(r.read_doubles(layout::kYMax)));
  }
  run.x_scaler = data::MinMaxScaler(row_of(r.read_doubles(layout::kXMin)), row_of(r.read_doubles(layout::kXMax)));
  if (run.x_scaler.columns() != static_cast<Index>(run.feature_names.size())) {
    throw Error("'" + r.path() + "': " + layout::kXMin + " has " + std::to_string(run.x_scaler.columns()) +
                " columns for " + std::to_string(run.feature_names.size()) + " feature names");
  }

  // The architecture as run::build_problem makes it.
  run.loss = cli::loss_of(c);
  const bool binary = run.classification && run.loss == model::LossKind::bce;
  run.classes = run.classification ? static_cast<Index>(run.class_names.size()) : 0;
  run.outputs = run.classification ? (binary ? 1 : run.classes) : run.y_scaler.columns();
  run.architecture.layers = c.model.architecture;
  run.architecture.activation = c.model.activation;
  run.architecture.output = c.model.output;
  run.architecture.pooling = c.model.pooling;
  run.architecture.outputs = run.outputs;
  if (model::is_image_architecture(c.model.architecture)) {
    run.architecture.input_shape = parse_input_shape(r.attribute_text(layout::kModel, layout::kInputShape), r.path());
  }
  run.parameters = static_cast<Index>(r.attribute_integer(layout::kModel, layout::kParameters));

  const auto shape = r.dims(layout::kPosteriorParams);
  if (shape.size() != 3 || shape[2] != run.parameters) {
    throw Error("'" + r.path() + "': " + layout::kPosteriorParams + " is not [chain, draw, " +
                std::to_string(run.parameters) + "]");
  }
  run.chains = shape[0];
  run.draws = shape[1];
  run.store_type = r.type(layout::kPosteriorParams);
  // Archives before run.precision computed in float64.
  run.precision = r.has_attribute(layout::kRoot, layout::kPrecision)
                      ? parse_precision(r.attribute_text(layout::kRoot, layout::kPrecision))
                      : Precision::float64;
  check_chain_datasets(r, run);
  for (const auto& name : r.members(layout::kEnsemble)) {
    if (r.is_group(layout::ensemble_group(name))) run.sets.push_back(name);
  }
  return run;
}

template <class S>
model::BasicNetwork<S> build_network(const RunArchive& run) {
  model::BasicNetwork<S> net = model::build_network<S>(run.architecture);
  if (net.parameter_count() != run.parameters) {
    throw Error("'" + run.path + "': the network rebuilt from /config ('" + run.config.model.architecture + "') has " +
                std::to_string(net.parameter_count()) + " parameters, /model says " + std::to_string(run.parameters));
  }
  if (net.input_size() != static_cast<Index>(run.feature_names.size())) {
    throw Error("'" + run.path + "': the network takes " + std::to_string(net.input_size()) +
                " inputs but the archive names " + std::to_string(run.feature_names.size()) + " features");
  }
  if (net.output_size() != run.outputs) {
    throw Error("'" + run.path + "': the network gives " + std::to_string(net.output_size()) +
                " outputs, the data needs " + std::to_string(run.outputs));
  }
  return net;
}

template model::BasicNetwork<double> build_network(const RunArchive&);
template model::BasicNetwork<float> build_network(const RunArchive&);

void evaluate_networks(const io::ArchiveReader& reader, const RunArchive& run, const std::string& source,
                       const std::vector<NetworkRow>& rows, std::int64_t begin, std::int64_t end, const Matrix& x,
                       const NetworkVisitor& visit) {
  with_scalar(run.precision, [&](auto zero) {
    using S = decltype(zero);
    model::BasicNetwork<S> net = build_network<S>(run);
    const MatrixOf<S> xs = x.cast<S>();
    const MatrixOf<S> dummy_y = MatrixOf<S>::Zero(x.rows(), run.outputs);
    train::BasicNetworkObjective<S> objective =
        run.classification
            ? train::BasicNetworkObjective<S>(net, run.loss, xs, dummy_y)
            : train::BasicNetworkObjective<S>(net, run.loss, xs, dummy_y, run.y_scaler.scale(), run.y_scaler.offset());
    Matrix wide;
    const bool posterior = source == layout::kPosteriorParams;
    for (std::int64_t i = begin; i < end; ++i) {
      const auto [chain, draw] = rows[static_cast<std::size_t>(i)];
      const std::vector<double> params =
          posterior ? reader.read_slab(source, chain, draw) : reader.read_slab(source, chain);
      net.parameters() = Eigen::Map<const Vector>(params.data(), static_cast<Index>(params.size())).cast<S>();
      const std::string name =
          source + "[" + std::to_string(chain) + (posterior ? ", " + std::to_string(draw) : std::string()) + "]";
      if (!net.parameters().allFinite()) {
        throw Error("'" + reader.path() + "': " + name + " is not finite although it was written");
      }
      wide = objective.predict(view(xs)).template cast<double>();  // one batched forward pass over all rows
      visit(i, name, view(wide));
    }
  });
}

std::vector<std::pair<std::int64_t, std::int64_t>> written_draws(const io::ArchiveReader& reader,
                                                                 const RunArchive& run) {
  const auto steps = reader.read_doubles(layout::kSampleStep);
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::int64_t c = 0; c < run.chains; ++c) {
    for (std::int64_t d = 0; d < run.draws; ++d) {
      if (std::isfinite(steps[static_cast<std::size_t>(c * run.draws + d)])) out.emplace_back(c, d);
    }
  }
  return out;
}

std::optional<std::vector<ensemble::MeanAccumulator>> read_components(const io::ArchiveReader& r,
                                                                      const std::string& set_group, Index rows,
                                                                      Index outputs) {
  const std::string members_path = layout::join(set_group, layout::kTrajectoryMembers);
  const std::string mean_path = layout::join(set_group, layout::kTrajectoryMean);
  const std::string variance_path = layout::join(set_group, layout::kTrajectoryVariance);
  if (!r.exists(members_path) || !r.exists(mean_path) || !r.exists(variance_path)) return std::nullopt;
  const auto members = r.read_ints(members_path);
  const auto mean = r.read_doubles(mean_path);
  const auto variance = r.read_doubles(variance_path);
  const auto cells = static_cast<std::size_t>(rows * outputs);
  if (mean.size() != members.size() * cells || variance.size() != mean.size()) {
    throw Error("'" + r.path() + "': " + mean_path + " is " + dims_text(r.dims(mean_path)) + ", not [" +
                std::to_string(members.size()) + ", " + std::to_string(rows) + ", " + std::to_string(outputs) + "]");
  }
  std::vector<ensemble::MeanAccumulator> out;
  for (std::size_t c = 0; c < members.size(); ++c) {
    ensemble::MeanAccumulator& part = out.emplace_back(rows, outputs);
    if (members[c] <= 0) continue;
    const auto n = static_cast<double>(members[c]);
    const Matrix m = Eigen::Map<const Matrix>(mean.data() + c * cells, rows, outputs);
    const Matrix m2 = n * Eigen::Map<const Matrix>(variance.data() + c * cells, rows, outputs).array();
    part.merge(members[c], m, m2);
  }
  return out;
}

std::optional<ensemble::NoiseEstimate> read_noise(const io::ArchiveReader& r, const std::string& group, Index outputs) {
  const std::string path = layout::join(group, layout::kNoiseVariance);
  if (!r.exists(path)) return std::nullopt;
  const auto values = r.read_doubles(path);
  if (static_cast<Index>(values.size()) != outputs) {
    throw Error("'" + r.path() + "': " + path + " holds " + std::to_string(values.size()) +
                " values, not one per output (" + std::to_string(outputs) + ")");
  }
  ensemble::NoiseEstimate noise;
  noise.variance = Eigen::Map<const Matrix>(values.data(), 1, outputs);
  const std::string source =
      r.has_attribute(path, layout::kNoiseSource) ? r.attribute_text(path, layout::kNoiseSource) : "training";
  noise.source = ensemble::kNoiseSourceNames.parse(source);
  return noise;
}

ensemble::NoiseEstimate group_noise(const io::ArchiveReader& r, const RunArchive& run, const std::string& group,
                                    bool& estimated) {
  estimated = false;
  if (auto noise = read_noise(r, group, run.outputs)) return *noise;
  estimated = true;
  const bool held_out = r.exists(layout::data_y(layout::kValidation)) &&
                        r.exists(layout::ensemble_dataset(group, layout::kValidation, layout::kMean));
  const std::string set = held_out ? layout::kValidation : layout::kTrain;
  const std::string mean_path = layout::ensemble_dataset(group, set, layout::kMean);
  r.require(mean_path, "the ensemble mean (for the noise estimate)");
  r.require(layout::data_y(set), "the targets (for the noise estimate)");
  const auto mean = r.read_doubles(mean_path);
  const auto y = r.read_doubles(layout::data_y(set));
  if (mean.size() != y.size() || mean.size() % static_cast<std::size_t>(run.outputs) != 0) {
    throw Error("'" + r.path() + "': " + mean_path + " and " + layout::data_y(set) + " differ in shape");
  }
  const auto rows = static_cast<Index>(mean.size()) / run.outputs;
  const Matrix m = Eigen::Map<const Matrix>(mean.data(), rows, run.outputs);
  const Matrix t = Eigen::Map<const Matrix>(y.data(), rows, run.outputs);
  return ensemble::noise_from_residuals(view(m), view(t),
                                        held_out ? ensemble::NoiseSource::validation : ensemble::NoiseSource::training);
}

std::int64_t planned_members(const RunArchive& run) {
  ensemble::SamplingOptions o;
  o.window = run.config.ensemble.window;
  o.stride = run.config.ensemble.stride;
  o.count = run.config.ensemble.count;
  o.fraction = run.config.ensemble.fraction;
  const auto rungs = static_cast<std::int64_t>(run.config.simmer.ladder.rungs.size());
  const std::int64_t chains = run.config.simmer.ladder.mode == run::LadderMode::parallel && rungs > 0
                                  ? (run.chains + rungs - 1) / rungs
                                  : run.chains;
  return chains * ensemble::member_count(run.config.run.steps, o);
}

std::string run_status(const io::ArchiveReader& r) {
  return r.has_attribute(layout::kRoot, layout::kStatus) ? r.attribute_text(layout::kRoot, layout::kStatus)
                                                         : std::string();
}

std::vector<NetworkRow> rung_draws(const RunArchive& run, const std::vector<NetworkRow>& written, std::int64_t rung) {
  const auto rungs = static_cast<std::int64_t>(run.config.simmer.ladder.rungs.size());
  const bool parallel = run.config.simmer.ladder.mode == run::LadderMode::parallel;
  const std::int64_t per_stage = run.draws / rungs;
  std::vector<NetworkRow> out;
  for (const auto& d : written) {
    if (parallel ? d.first % rungs == rung : d.second / per_stage == rung) out.push_back(d);
  }
  return out;
}

std::string stored_draws_held(const io::ArchiveReader& r, const RunArchive& run) {
  return std::to_string(written_draws(r, run).size()) + " of " + std::to_string(run.chains * run.draws) +
         " planned stored draws";
}

std::int64_t group_members(const io::ArchiveReader& r, const std::string& group) {
  if (!group.empty() && r.has_attribute(group, layout::kMembers)) return r.attribute_integer(group, layout::kMembers);
  if (r.has_attribute(layout::kMetrics, layout::kMembers))
    return r.attribute_integer(layout::kMetrics, layout::kMembers);
  return -1;
}

std::string no_members(const io::ArchiveReader& r, const RunArchive& run) {
  const std::string group = run.sets.empty() ? std::string() : layout::ensemble_group(run.sets.front());
  if (group_members(r, group) != 0) return {};
  std::string why = "the run's ensemble has 0 members";
  if (!r.exists(layout::kDivergedAtStep)) return why;
  const auto diverged = r.read_ints(layout::kDivergedAtStep);
  const auto first = std::find_if(diverged.begin(), diverged.end(), [](std::int64_t s) { return s >= 0; });
  if (first == diverged.end()) return why + ": no trajectory reached the window";
  const bool all = std::all_of(diverged.begin(), diverged.end(), [](std::int64_t s) { return s >= 0; });
  return why + ": " + (all ? "every trajectory" : "each trajectory that reached it") +
         " diverged before the window (first: trajectory " + std::to_string(first - diverged.begin()) + " at step " +
         std::to_string(*first) + "; " + layout::kDivergedAtStep + ")";
}

void refuse_empty(const std::string& command, const io::ArchiveReader& r, const RunArchive& run) {
  const std::string why = no_members(r, run);
  if (!why.empty()) throw Error(command + ": '" + r.path() + "': " + why + "; nothing to export, nothing was written");
}

std::string check_complete(const io::ArchiveReader& r, const std::string& command, const std::string& holds,
                           bool allow) {
  const std::string status = run_status(r);
  if (layout::is_complete(status)) return {};
  const std::string what = "'" + r.path() + "': the run is not complete (status '" +
                           (status.empty() ? std::string("none recorded") : status) + "'): it holds " + holds;
  if (!allow) {
    throw Error(what + "; " + command +
                " uses finished runs only (pass --allow-incomplete to use what it holds, or "
                "resume the run with simmer_mpi --resume)");
  }
  return what + "; using them (--allow-incomplete)";
}

std::vector<std::string> output_names(const RunArchive& run) {
  std::vector<std::string> names = run.target_names;
  names.resize(static_cast<std::size_t>(run.outputs));
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (!names[k].empty()) continue;
    char buf[32];
    std::snprintf(buf, sizeof buf, "y%zu", k);
    names[k] = buf;
  }
  return names;
}

std::string quantile_column(double q, const std::string& output) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "q%g_", q);
  return buf + output;
}

std::string csv_number(double value, int digits) {
  if (std::isnan(value)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, value);
  return buf;
}

std::string csv_text(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

}  // namespace simmer::posthoc
