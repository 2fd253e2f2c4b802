// simmer_analyze export --what inference-data: the archive as ArviZ's InferenceData (a netCDF-4
// file with its groups and names), for LOO, WAIC, az.summary and the rest of the ArviZ world.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/core/rng.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/posthoc/commands.hpp"
#include "simmer/posthoc/run_archive.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/train/posterior.hpp"

namespace simmer::posthoc {
namespace {

namespace layout = run::layout;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kLog2Pi = 1.8378770664093453;

/// InferenceData's dimension names: chain, draw, rung (a ladder), then the variable's own axes:
/// <variable>_dim_<i> in /posterior (ArviZ's default), observation, target, feature.
std::string idata_axis(const std::string& path, int axis, int rank, bool rung_axis) {
  const std::string group = path.substr(1, path.find('/', 1) - 1);
  const std::string variable = path.substr(path.find_last_of('/') + 1);
  std::vector<std::string> axes;
  const bool predictive = group == "posterior_predictive" || group == "predictions";
  if (group == "posterior" || group == "sample_stats" || group == "log_likelihood" || predictive) {
    if (rank == 1) return "rung";  // rung_temperature, the rung coordinate's values
    axes = {"chain", "draw"};
    if (rung_axis) axes.emplace_back("rung");
    const int own = rank - static_cast<int>(axes.size());
    for (int i = 0; i < own; ++i) {
      const char* observed[] = {"observation", "target"};
      axes.push_back(group == "log_likelihood" || predictive ? std::string(observed[std::min(i, 1)])
                                                             : variable + "_dim_" + std::to_string(i));
    }
  } else if (group == "observed_data") {
    axes = {"observation", "target"};
  } else if (group == "constant_data" || group == "constant_data_predictions") {
    axes = {"observation", "feature"};
  }
  return axis < static_cast<int>(axes.size()) ? axes[static_cast<std::size_t>(axis)] : "axis_" + std::to_string(axis);
}

/// /model's tensors: their InferenceData variable names ("layer0_dense/kernel" becomes
/// layer0_dense_kernel), offsets in the flat parameter vector and shapes.
struct Tensor {
  std::string name;    ///< the InferenceData variable
  std::string source;  ///< /model's tensor name
  std::int64_t offset = 0, size = 1;
  std::vector<std::int64_t> shape;
};
std::vector<Tensor> tensors_of(const io::ArchiveReader& r, std::int64_t parameters) {
  std::vector<Tensor> out;
  if (!r.exists(layout::kTensorName)) return {{"params", "the flat vector", 0, parameters, {parameters}}};  // older
  const auto names = r.read_strings(layout::kTensorName);
  const auto offsets = r.read_ints(layout::kTensorOffset);
  const auto shapes = r.read_ints(layout::kTensorShape);
  const auto ranks = r.read_ints(layout::kTensorRank);
  const std::size_t width = names.empty() ? 0 : shapes.size() / names.size();
  for (std::size_t t = 0; t < names.size(); ++t) {
    Tensor x;
    x.name = x.source = names[t];
    for (char& ch : x.name) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
    }
    x.offset = offsets[t];
    for (std::int64_t a = 0; a < ranks[t]; ++a) x.shape.push_back(shapes[t * width + static_cast<std::size_t>(a)]);
    x.size = std::accumulate(x.shape.begin(), x.shape.end(), std::int64_t{1}, std::multiplies<>());
    out.push_back(std::move(x));
  }
  return out;
}

/// Where each InferenceData draw comes from: the archive's (chain, draw) of slot (c, d, k) of
/// [chains, draws, rungs]. Without a ladder rungs = 1; a sequential ladder's rung k is each
/// chain's k-th block of draws; a parallel one's is the trajectories i with i mod K = k (chain i / K).
struct DrawMap {
  std::int64_t chains = 0, draws = 0, rungs = 1;
  bool ladder = false, parallel = false;
  std::int64_t first_rung = 0, exported_rungs = 1;  ///< the rungs written (--rung: one)
  bool rung_axis = false;                           ///< a rung dimension (a ladder, every rung)
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> source(std::int64_t c, std::int64_t d, std::int64_t k) const {
    if (!ladder) return {c, d};
    if (parallel) return {c * rungs + k, d};
    return {c, k * draws + d};
  }
  [[nodiscard]] std::vector<std::int64_t> dims(std::vector<std::int64_t> tail) const {
    std::vector<std::int64_t> out{chains, draws};
    if (rung_axis) out.push_back(exported_rungs);
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  }
};

DrawMap draw_map(const RunArchive& run, int only_rung) {
  DrawMap m;
  const auto rungs = static_cast<std::int64_t>(run.config.simmer.ladder.rungs.size());
  m.chains = run.chains;
  m.draws = run.draws;
  if (rungs < 2) {
    if (only_rung > 0 || (only_rung == 0 && rungs == 0)) {
      throw Error("export: --rung " + std::to_string(only_rung) + ": '" + run.path + "' has " +
                  (rungs == 0 ? std::string("no ladder") : "one rung, rung 0"));
    }
    return m;
  }
  m.ladder = true;
  m.rungs = rungs;
  m.parallel = run.config.simmer.ladder.mode == run::LadderMode::parallel;
  if (m.parallel) {
    if (run.chains % rungs != 0) throw Error("'" + run.path + "': its trajectories are not a multiple of its rungs");
    m.chains = run.chains / rungs;
  } else {
    m.draws = run.draws / rungs;
  }
  if (only_rung >= rungs) {
    throw Error("export: --rung " + std::to_string(only_rung) + ": '" + run.path + "' has rungs 0.." +
                std::to_string(rungs - 1));
  }
  m.rung_axis = only_rung < 0;
  m.first_rung = only_rung < 0 ? 0 : only_rung;
  m.exported_rungs = only_rung < 0 ? rungs : 1;
  return m;
}

/// The group attributes ArviZ writes on every group (`version`: the simmer that ran).
void stamp(io::ParallelFile& f, const std::string& group, const std::string& created, const std::string& version) {
  f.create_group(group);
  f.attribute(group, "created_at", created);
  f.attribute(group, "inference_library", std::string("simmer"));
  f.attribute(group, "inference_library_version", version);
}

/// Pointwise log-likelihood of each training row under one network's outputs.
void row_log_likelihood(const RunArchive& run, ConstBatchView outputs, const std::vector<double>& y, double sd,
                        const Matrix& noise, Matrix& scratch, double* out) {
  const Index rows = outputs.rows();
  if (run.classification) {
    ensemble::class_probabilities(outputs, scratch);
    for (Index i = 0; i < rows; ++i) {
      const auto label = static_cast<Index>(y[static_cast<std::size_t>(i)]);
      out[i] = std::log(std::max(scratch(i, label), std::numeric_limits<double>::min()));
    }
    return;
  }
  for (Index i = 0; i < rows; ++i) {
    double ll = 0.0;
    for (Index o = 0; o < outputs.cols(); ++o) {
      const double var = sd > 0 ? sd * sd : noise(0, o);
      const double r = y[static_cast<std::size_t>(i * outputs.cols() + o)] - outputs(i, o);
      ll -= 0.5 * (kLog2Pi + std::log(var) + r * r / var);
    }
    out[i] = ll;
  }
}

/// The noise regression's likelihood assumes: the sd T_Bayes assumed (simmer.noise_sd's, or with
/// auto the one the run measured; 0: unknown) and the ensemble's noise variance per output (used
/// when the sd is unknown).
std::pair<double, Matrix> likelihood_noise(const io::ArchiveReader& r, const RunArchive& run) {
  if (run.classification) return {0.0, Matrix()};
  bool estimated = false;
  const double sd = run.config.simmer.noise_sd.value_or(
      r.has_attribute(layout::kMetrics, layout::kNoiseSd) ? r.attribute_real(layout::kMetrics, layout::kNoiseSd) : 0.0);
  return {sd, group_noise(r, run, layout::kEnsemble, estimated).variance};
}

/// One outcome per network and row of `set` (/data/<set>/x), drawn from the network's predictive:
/// a class from its softmax (classes) or f(x) + N(0, s^2) per output (values [network, row,
/// output]). Network k draws from its own stream (run.seed, k, RngPurpose::predictive), so the
/// export is the same every time.
struct Outcomes {
  std::vector<std::int64_t> classes;
  std::vector<double> values;
  std::int64_t rows = 0;
};
Outcomes sampled_outcomes(const io::ArchiveReader& r, const RunArchive& run, const std::vector<NetworkRow>& networks,
                          const std::string& set) {
  const auto x_raw = r.read_doubles(layout::data_x(set));
  Outcomes out;
  out.rows = r.dims(layout::data_x(set)).front();
  const auto features = static_cast<std::int64_t>(run.feature_names.size());
  const Matrix x = run.x_scaler.transform(Eigen::Map<const Matrix>(x_raw.data(), out.rows, features));
  const auto [sd, noise] = likelihood_noise(r, run);
  const std::size_t per_network = static_cast<std::size_t>(out.rows * (run.classification ? 1 : run.outputs));
  if (run.classification) {
    out.classes.assign(networks.size() * per_network, -1);
  } else {
    out.values.assign(networks.size() * per_network, kNaN);
  }
  Matrix p;
  evaluate_networks(r, run, layout::kPosteriorParams, networks, 0, static_cast<std::int64_t>(networks.size()), x,
                    [&](std::int64_t k, const std::string&, ConstBatchView outputs) {
                      Rng rng = Rng::named(run.config.run.seed, static_cast<std::uint64_t>(k), RngPurpose::predictive);
                      const std::size_t at = static_cast<std::size_t>(k) * per_network;
                      if (run.classification) {
                        ensemble::class_probabilities(outputs, p);
                        for (Index i = 0; i < p.rows(); ++i) {
                          const double u = rng.uniform();
                          double cumulative = 0.0;
                          Index c = 0;
                          for (; c + 1 < p.cols(); ++c) {
                            cumulative += p(i, c);
                            if (u < cumulative) break;
                          }
                          out.classes[at + static_cast<std::size_t>(i)] = c;
                        }
                        return;
                      }
                      for (Index i = 0; i < outputs.rows(); ++i) {
                        for (Index o = 0; o < outputs.cols(); ++o) {
                          const double s = sd > 0 ? sd : std::sqrt(noise(0, o));
                          out.values[at + static_cast<std::size_t>(i * outputs.cols() + o)] =
                              outputs(i, o) + s * rng.normal();
                        }
                      }
                    });
  return out;
}

}  // namespace

TrainingLogLikelihood training_log_likelihood(const io::ArchiveReader& r, const RunArchive& run,
                                              const std::vector<NetworkRow>& networks) {
  const auto x_raw = r.read_doubles(layout::data_x(layout::kTrain));
  const auto y = r.read_doubles(layout::data_y(layout::kTrain));
  const auto rows = r.dims(layout::data_x(layout::kTrain)).front();
  const auto features = static_cast<std::int64_t>(run.feature_names.size());
  const Matrix x = run.x_scaler.transform(Eigen::Map<const Matrix>(x_raw.data(), rows, features));
  const auto [sd, noise] = likelihood_noise(r, run);
  TrainingLogLikelihood out;
  out.values = Matrix::Constant(static_cast<Index>(networks.size()), rows, kNaN);
  Matrix scratch;
  std::vector<double> row(static_cast<std::size_t>(rows));
  evaluate_networks(r, run, layout::kPosteriorParams, networks, 0, static_cast<std::int64_t>(networks.size()), x,
                    [&](std::int64_t i, const std::string&, ConstBatchView outputs) {
                      row_log_likelihood(run, outputs, y, sd, noise, scratch, row.data());
                      for (Index j = 0; j < rows; ++j) out.values(i, j) = row[static_cast<std::size_t>(j)];
                    });
  out.meaning = run.classification
                    ? "log p(y | x, network) of each training row: the log softmax of its class"
                    : "log N(y; network(x), s^2) of each training row, summed over outputs, s = " +
                          (sd > 0 ? "the run's noise sd (/metrics noise_sd)" : std::string("the ensemble's noise sd")) +
                          " (the likelihood T_Bayes assumes)";
  return out;
}

void export_inference_data(const ExportOptions& o, std::ostream& out) {
  if (o.output.empty()) throw Error("export --what inference-data: --out OUT.nc is missing (a netCDF-4 file)");
  const io::ArchiveReader r(o.archive);
  const RunArchive run = load_run(r);
  const std::string warning = check_complete(r, "export", stored_draws_held(r, run), o.allow_incomplete);
  if (!warning.empty()) std::cerr << "simmer_analyze export: " << warning << "\n";
  refuse_empty("export", r, run);
  const DrawMap m = draw_map(run, o.rung);
  const auto P = static_cast<std::int64_t>(run.parameters);
  const std::time_t now = std::time(nullptr);
  char created[32];
  std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));  // UTC, as ArviZ's
  const std::string version = r.has_attribute(layout::kRoot, layout::kSimmerVersion)
                                  ? r.attribute_text(layout::kRoot, layout::kSimmerVersion)
                                  : "";

  // Every exported draw's row of each per-draw field, in the InferenceData order.
  const std::size_t slots = static_cast<std::size_t>(m.chains * m.draws * m.exported_rungs);
  const auto each_slot = [&](const auto& fn) {
    std::size_t at = 0;
    for (std::int64_t c = 0; c < m.chains; ++c)
      for (std::int64_t d = 0; d < m.draws; ++d)
        for (std::int64_t k = m.first_rung; k < m.first_rung + m.exported_rungs; ++k, ++at)
          fn(at, m.source(c, d, k), k);
  };
  const auto per_draw = [&](const std::string& field) {
    const auto values = r.read_doubles(layout::sample_stat(field));
    std::vector<double> v(slots);
    each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s, std::int64_t) {
      v[at] = values[static_cast<std::size_t>(s.first * run.draws + s.second)];
    });
    return v;
  };
  std::vector<double> rung_temperature;  // the loss-unit T of each exported rung
  for (std::int64_t k = m.first_rung; k < m.first_rung + m.exported_rungs && m.ladder; ++k) {
    rung_temperature.push_back(r.attribute_real(layout::ladder_group(layout::rung_name(k)), layout::kTemperature));
  }

  guard_output("export", o.output, {o.archive});
  PartialOutput written(o.output);  // destroyed after f: a failed export leaves no file
  io::ParallelFile f = io::ParallelFile::create(written.partial(), MPI_COMM_SELF);
  // The rung coordinate's values (each group with a rung axis gets its own copy, as netCDF wants).
  const auto rung_coordinate = [&](const std::string& group) {
    if (!m.rung_axis) return;
    const std::string path = group + "/rung_temperature";
    f.put(path, rung_temperature, {m.exported_rungs});
    f.attribute(path, layout::kMeaning,
                std::string("each rung's temperature T (loss units; T/T_Bayes in the group attribute "
                            "ladder): the coordinate of the rung dimension"));
  };
  const auto ladder_attributes = [&](const std::string& group) {
    if (!m.ladder) return;
    std::string rungs;
    for (const double t : run.config.simmer.ladder.rungs) {
      if (!rungs.empty()) rungs += ',';
      rungs += csv_number(t);
    }
    f.attribute(group, "ladder", rungs);
    f.attribute(group, "ladder_mode",
                std::string(m.parallel ? "parallel: rung k is trajectories i with i mod K = k (chain i / K)"
                                       : "sequential: rung k is each chain's k-th block of draws"));
    if (!m.rung_axis) {
      f.attribute(group, "rung", m.first_rung);
      f.attribute(group, "rung_temperature", rung_temperature.front());
    }
  };

  // posterior: every stored network's parameters, one variable per tensor of /model, in the
  // precision the archive stores them in.
  stamp(f, "/posterior", created, version);
  const std::vector<Tensor> tensors = tensors_of(r, P);
  const bool single = run.store_type == io::Type::f32;
  std::vector<std::vector<double>> by_tensor(tensors.size());
  for (std::size_t t = 0; t < tensors.size(); ++t)
    by_tensor[t].resize(slots * static_cast<std::size_t>(tensors[t].size));
  std::vector<double> prior_energy(slots, 0.0);
  Vector precision;
  if (run.config.simmer.prior == cli::Prior::gaussian) {
    precision = train::gaussian_prior_precision(build_network(run).layout(), P, run.config.simmer.prior_sigma,
                                                run.config.simmer.prior_scaling);
  }
  {
    std::int64_t cached = -1;
    std::vector<double> chain_rows;
    each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s, std::int64_t) {
      if (s.first != cached) {
        chain_rows = r.read_slab(layout::kPosteriorParams, s.first);
        cached = s.first;
      }
      const double* x = chain_rows.data() + s.second * P;
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        const auto n = static_cast<std::size_t>(tensors[t].size);
        std::copy(x + tensors[t].offset, x + tensors[t].offset + tensors[t].size,
                  by_tensor[t].begin() + static_cast<std::ptrdiff_t>(at * n));
      }
      for (Index i = 0; i < precision.size(); ++i) prior_energy[at] += 0.5 * precision(i) * x[i] * x[i];
    });
  }
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const std::string path = "/posterior/" + tensors[t].name;
    const auto dims = m.dims(tensors[t].shape);
    if (single) {
      const std::vector<float> narrow(by_tensor[t].begin(), by_tensor[t].end());  // stored as float32: exact
      f.create_dataset(path, io::Type::f32, dims);
      f.write_from_root(path, narrow);
    } else {
      f.put(path, by_tensor[t], dims);
    }
    f.attribute(path, layout::kMeaning,
                "/model's tensor '" + tensors[t].source + "' of every stored network: parameters " +
                    std::to_string(tensors[t].offset) + ".." + std::to_string(tensors[t].offset + tensors[t].size - 1) +
                    " of the flat vector, in that order (row-major over its own axes)");
    std::vector<double>().swap(by_tensor[t]);
  }
  ladder_attributes("/posterior");
  if (m.ladder && r.has_attribute(layout::kMetrics, layout::kEnsembleName)) {
    f.attribute("/posterior", "chosen", r.attribute_text(layout::kMetrics, layout::kEnsembleName));
  }
  // The stacking weights (the stacked candidates: each candidate's draws weigh its weight over
  // their count), one attribute per candidate but the stacked row itself.
  const std::string weights = layout::selection_column(layout::kStackingWeight);
  if (m.ladder && r.exists(weights)) {
    const auto names = r.read_strings(layout::selection_column(layout::kCandidate));
    const auto w = r.read_doubles(weights);
    for (std::size_t c = 0; c < names.size() && c < w.size(); ++c) {
      if (names[c] != layout::kStackedName) f.attribute("/posterior", "stacking_weight_" + names[c], w[c]);
    }
  }
  rung_coordinate("/posterior");

  // sample_stats: ArviZ's names where they mean what ArviZ means (lp, step_size, diverging); the
  // thermostat's extended energy is not an HMC Hamiltonian, so it is not called energy.
  stamp(f, "/sample_stats", created, version);
  const auto loss = per_draw(layout::kLoss), temperature = per_draw(layout::kTemperature),
             step = per_draw(layout::kStep);
  std::vector<double> lp(slots);
  for (std::size_t i = 0; i < slots; ++i)
    lp[i] = temperature[i] > 0 ? -loss[i] / temperature[i] - prior_energy[i] : kNaN;
  const auto diverged_at = r.exists(layout::kDivergedAtStep)
                               ? r.read_ints(layout::kDivergedAtStep)
                               : std::vector<std::int64_t>(static_cast<std::size_t>(run.chains), -1);
  std::vector<std::int64_t> diverging(slots), steps(slots);
  std::vector<double> step_size(slots, kNaN);
  std::map<std::int64_t, std::vector<double>> stage_steps;  // each stage's h [chain] (/diagnostics time_step)
  const auto stage_h = [&](std::int64_t k) -> const std::vector<double>& {
    auto it = stage_steps.find(k);
    if (it != stage_steps.end()) return it->second;
    const std::string group =
        m.ladder ? layout::ladder_diagnostics(layout::rung_name(k)) : std::string(layout::kDiagnostics);
    const std::string path = layout::join(group, layout::kTimeStep);
    std::vector<double> h = r.exists(path) ? r.read_doubles(path) : std::vector<double>();
    return stage_steps.emplace(k, std::move(h)).first->second;
  };
  each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s, std::int64_t k) {
    const std::int64_t d = diverged_at[static_cast<std::size_t>(s.first)];
    // A draw never written (its step is the NaN fill: an unfinished run's, or after a trajectory
    // stopped) is no draw at all, not a divergent one.
    const bool drawn = std::isfinite(step[at]);
    diverging[at] = drawn && (!std::isfinite(loss[at]) || (d >= 0 && step[at] >= static_cast<double>(d))) ? 1 : 0;
    steps[at] = std::isfinite(step[at]) ? static_cast<std::int64_t>(step[at]) : -1;
    const std::vector<double>& h = stage_h(k);
    if (static_cast<std::size_t>(s.first) < h.size()) step_size[at] = h[static_cast<std::size_t>(s.first)];
    if (!std::isfinite(step_size[at]) && run.config.simmer.time_step) step_size[at] = *run.config.simmer.time_step;
  });
  const std::vector<std::int64_t> stat_dims = m.dims({});
  f.put("/sample_stats/lp", lp, stat_dims);
  f.attribute("/sample_stats/lp", layout::kMeaning,
              std::string("log density the sampler targets at the draw, up to a constant: -loss/T - sum_i x_i^2/(2 "
                          "sigma_i^2) (the Gaussian prior's term when simmer.prior = gaussian); at T = T_Bayes the log "
                          "posterior"));
  f.put("/sample_stats/step_size", step_size, stat_dims);
  f.attribute("/sample_stats/step_size", layout::kMeaning,
              std::string("the integrator's time step h when the draw was made (its stage's window step: "
                          "/diagnostics time_step)"));
  f.put("/sample_stats/diverging", diverging, stat_dims);
  f.attribute("/sample_stats/diverging", "dtype", std::string("bool"));  // xarray decodes it to bool
  f.put("/sample_stats/temperature", temperature, stat_dims);
  f.attribute("/sample_stats/temperature", layout::kMeaning, std::string("the temperature T of the draw (loss units)"));
  f.put("/sample_stats/extended_energy", per_draw(layout::kExtendedEnergy), stat_dims);
  f.attribute("/sample_stats/extended_energy", layout::kMeaning,
              std::string("the thermostat's extended energy H_ext at the draw (conserved by the Nose-Hoover chain "
                          "alone; not an HMC Hamiltonian, so not ArviZ's energy: no E-BFMI)"));
  f.put("/sample_stats/kinetic_temperature", per_draw(layout::kKineticTemperature), stat_dims);
  f.put("/sample_stats/loss", loss, stat_dims);
  f.put("/sample_stats/step", steps, stat_dims);
  f.attribute("/sample_stats/step", layout::kMeaning,
              std::string("the simmering step of the draw (-1: never written)"));
  ladder_attributes("/sample_stats");
  rung_coordinate("/sample_stats");

  // observed_data and constant_data: the training rows.
  const auto x_raw = r.read_doubles(layout::data_x(layout::kTrain));
  const auto y = r.read_doubles(layout::data_y(layout::kTrain));
  const auto rows = r.dims(layout::data_x(layout::kTrain)).front();
  const auto features = static_cast<std::int64_t>(run.feature_names.size());
  stamp(f, "/observed_data", created, version);
  if (run.classification) {
    std::vector<std::int64_t> labels(y.begin(), y.end());
    f.put("/observed_data/y", labels, {rows});
  } else {
    f.put("/observed_data/y", y, {rows, run.outputs});
  }
  stamp(f, "/constant_data", created, version);
  f.put("/constant_data/x", x_raw, {rows, features});

  // log_likelihood (opt-in: every draw on every training row).
  if (o.log_likelihood) {
    stamp(f, "/log_likelihood", created, version);
    std::vector<NetworkRow> networks(slots);
    each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s, std::int64_t) { networks[at] = s; });
    const TrainingLogLikelihood ll = training_log_likelihood(r, run, networks);
    std::vector<double> values(ll.values.data(), ll.values.data() + ll.values.size());  // row-major: draw, row
    f.put("/log_likelihood/y", values, m.dims({rows}));
    f.attribute("/log_likelihood/y", layout::kMeaning, ll.meaning);
    rung_coordinate("/log_likelihood");
  }
  // posterior_predictive and predictions (opt-in): one outcome per draw and training / test row.
  if (o.predictive) {
    std::vector<NetworkRow> networks(slots);
    each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s, std::int64_t) { networks[at] = s; });
    for (const auto& [set, group] : {std::pair<const char*, const char*>{layout::kTrain, "/posterior_predictive"},
                                     std::pair<const char*, const char*>{layout::kTest, "/predictions"}}) {
      stamp(f, group, created, version);
      const Outcomes y_rep = sampled_outcomes(r, run, networks, set);
      const std::string path = std::string(group) + "/y";
      if (run.classification) {
        f.put(path, y_rep.classes, m.dims({y_rep.rows}));
      } else {
        f.put(path, y_rep.values, m.dims({y_rep.rows, run.outputs}));
      }
      f.attribute(path, layout::kMeaning,
                  std::string(run.classification ? "one class per draw and " : "one value per draw and ") + set +
                      " row, drawn from the draw's predictive: " +
                      (run.classification ? "its softmax" : "f(x) + N(0, s^2), s the noise the log-likelihood uses") +
                      " (stream run.seed, draw index, predictive)");
      ladder_attributes(group);
      rung_coordinate(group);
    }
    const auto test_x = r.read_doubles(layout::data_x(layout::kTest));
    stamp(f, "/constant_data_predictions", created, version);
    f.put("/constant_data_predictions/x", test_x, {r.dims(layout::data_x(layout::kTest)).front(), features});
  }
  f.name_axes([&](const std::string& path, int axis, int rank) { return idata_axis(path, axis, rank, m.rung_axis); });
  f.close();
  // Names as coordinates: the features of constant_data, a regression's targets, and a
  // classification's classes as CF categories of its integer y (there is no class axis).
  const std::string nc = written.partial();
  const auto groups_with = [&](std::initializer_list<const char*> plain, std::initializer_list<const char*> extra) {
    std::vector<std::string> names(plain.begin(), plain.end());
    if (o.predictive) names.insert(names.end(), extra.begin(), extra.end());
    return names;
  };
  for (const auto& g : groups_with({"/constant_data"}, {"/constant_data_predictions"})) {
    io::replace_scale_with_strings(nc, g + "/feature", run.feature_names);
  }
  if (run.classification) {
    if (!run.class_names.empty()) {
      for (const auto& g : groups_with({"/observed_data"}, {"/posterior_predictive", "/predictions"})) {
        io::set_categories(nc, g + "/y", run.class_names);
      }
    }
  } else {
    for (const auto& g : groups_with({"/observed_data"}, {"/posterior_predictive", "/predictions"})) {
      io::replace_scale_with_strings(nc, g + "/target", output_names(run));
    }
  }
  written.commit();
  const double megabytes = 1e-6 * static_cast<double>(slots) * static_cast<double>(rows) * 8.0;
  char size[32];
  std::snprintf(size, sizeof size, "%.3g", megabytes);
  out << "simmer_analyze export: wrote " << o.output << " (InferenceData: posterior " << m.chains << " chains x "
      << m.draws << " draws"
      << (m.rung_axis ? " x " + std::to_string(m.exported_rungs) + " rungs"
          : m.ladder  ? " of rung " + std::to_string(m.first_rung)
                      : std::string())
      << " in " << tensors.size() << " tensors (" << (single ? "float32" : "float64")
      << "), sample_stats, observed_data, constant_data"
      << (o.log_likelihood ? ", log_likelihood over " + std::to_string(rows) + " training rows (" + size + " MB)"
                           : std::string())
      << (o.predictive ? ", posterior_predictive, predictions, constant_data_predictions" : std::string()) << ")\n";
}

}  // namespace simmer::posthoc
