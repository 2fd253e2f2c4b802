// simmer_analyze export --what inference-data: the archive as ArviZ's InferenceData (a netCDF-4
// file with its groups and names), for LOO, WAIC, az.summary and the rest of the ArviZ world.
#include <cmath>
#include <ctime>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "simmer/core/error.hpp"
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

/// InferenceData's dimension names: chain, draw, rung (a ladder), param, observation, target, feature.
std::string idata_axis(const std::string& path, int axis, int rank) {
  const std::string group = path.substr(1, path.find('/', 1) - 1);
  std::vector<const char*> axes;
  if (group == "posterior") {
    axes = rank == 4 ? std::vector<const char*>{"chain", "draw", "rung", "param"}
                     : std::vector<const char*>{"chain", "draw", "param"};
  } else if (group == "sample_stats") {
    axes = {"chain", "draw", "rung"};
  } else if (group == "log_likelihood") {
    axes = rank == 4 ? std::vector<const char*>{"chain", "draw", "rung", "observation"}
                     : std::vector<const char*>{"chain", "draw", "observation"};
  } else if (group == "observed_data") {
    axes = {"observation", "target"};
  } else if (group == "constant_data") {
    axes = {"observation", "feature"};
  }
  return axis < static_cast<int>(axes.size()) ? axes[static_cast<std::size_t>(axis)] : "axis_" + std::to_string(axis);
}

/// Where each InferenceData draw comes from: the archive's (chain, draw) of slot (c, d, k) of
/// [chains, draws, rungs]. Without a ladder rungs = 1; a sequential ladder's rung k is each
/// chain's k-th block of draws; a parallel one's is the trajectories i with i mod K = k (chain i / K).
struct DrawMap {
  std::int64_t chains = 0, draws = 0, rungs = 1;
  bool ladder = false, parallel = false;
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> source(std::int64_t c, std::int64_t d, std::int64_t k) const {
    if (!ladder) return {c, d};
    if (parallel) return {c * rungs + k, d};
    return {c, k * draws + d};
  }
  [[nodiscard]] std::vector<std::int64_t> dims(std::vector<std::int64_t> tail) const {
    std::vector<std::int64_t> out{chains, draws};
    if (ladder) out.push_back(rungs);
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  }
};

DrawMap draw_map(const RunArchive& run) {
  DrawMap m;
  const auto rungs = static_cast<std::int64_t>(run.config.simmer.ladder.size());
  m.chains = run.chains;
  m.draws = run.draws;
  if (rungs < 2) return m;
  m.ladder = true;
  m.rungs = rungs;
  m.parallel = run.config.simmer.ladder_mode == run::LadderMode::parallel;
  if (m.parallel) {
    if (run.chains % rungs != 0) throw Error("'" + run.path + "': its trajectories are not a multiple of its rungs");
    m.chains = run.chains / rungs;
  } else {
    m.draws = run.draws / rungs;
  }
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

}  // namespace

void export_inference_data(const ExportOptions& o, std::ostream& out) {
  if (o.output.empty()) throw Error("export --what inference-data: --out OUT.nc is missing (a netCDF-4 file)");
  const io::ArchiveReader r(o.archive);
  const RunArchive run = load_run(r);
  const std::string warning = check_complete(r, "export",
                                             std::to_string(written_draws(r, run).size()) + " of " +
                                                 std::to_string(run.chains * run.draws) + " planned stored draws",
                                             o.allow_incomplete);
  if (!warning.empty()) std::cerr << "simmer_analyze export: " << warning << "\n";
  const DrawMap m = draw_map(run);
  const auto P = static_cast<std::int64_t>(run.parameters);
  const std::time_t now = std::time(nullptr);
  char created[32];
  std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%S", std::gmtime(&now));
  const std::string version = r.has_attribute(layout::kRoot, layout::kSimmerVersion)
                                  ? r.attribute_text(layout::kRoot, layout::kSimmerVersion)
                                  : "";

  // Every stored draw's row of each per-draw field, in the InferenceData order.
  const std::size_t slots = static_cast<std::size_t>(m.chains * m.draws * m.rungs);
  const auto each_slot = [&](const auto& fn) {
    std::size_t at = 0;
    for (std::int64_t c = 0; c < m.chains; ++c)
      for (std::int64_t d = 0; d < m.draws; ++d)
        for (std::int64_t k = 0; k < m.rungs; ++k, ++at) fn(at, m.source(c, d, k));
  };
  const auto per_draw = [&](const std::string& field) {
    const auto values = r.read_doubles(layout::sample_stat(field));
    std::vector<double> v(slots);
    each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s) {
      v[at] = values[static_cast<std::size_t>(s.first * run.draws + s.second)];
    });
    return v;
  };

  io::ParallelFile f = io::ParallelFile::create(o.output, MPI_COMM_SELF);
  // posterior: every stored network's parameters.
  stamp(f, "/posterior", created, version);
  std::vector<double> params(slots * static_cast<std::size_t>(P));
  std::vector<double> prior_energy(slots, 0.0);
  Vector precision;
  if (run.config.simmer.prior == cli::Prior::gaussian) {
    precision = train::gaussian_prior_precision(build_network(run).layout(), P, run.config.simmer.prior_sigma,
                                                run.config.simmer.prior_scaling);
  }
  {
    std::int64_t cached = -1;
    std::vector<double> chain_rows;
    each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s) {
      if (s.first != cached) {
        chain_rows = r.read_slab(layout::kPosteriorParams, s.first);
        cached = s.first;
      }
      const double* x = chain_rows.data() + s.second * P;
      std::copy(x, x + P, params.begin() + static_cast<std::ptrdiff_t>(at * static_cast<std::size_t>(P)));
      for (Index i = 0; i < precision.size(); ++i) prior_energy[at] += 0.5 * precision(i) * x[i] * x[i];
    });
  }
  f.put("/posterior/params", params, m.dims({P}));
  f.attribute("/posterior/params", layout::kMeaning,
              std::string("every stored network's parameters in the flat layout of the archive's /model"));
  if (m.ladder) {
    std::string rungs;
    for (const double t : run.config.simmer.ladder) rungs += (rungs.empty() ? "" : ",") + csv_number(t);
    f.attribute("/posterior", "ladder", rungs);
    f.attribute("/posterior", "ladder_mode",
                std::string(m.parallel ? "parallel: rung k is trajectories i with i mod K = k (chain i / K)"
                                       : "sequential: rung k is each chain's k-th block of draws"));
    if (r.has_attribute(layout::kMetrics, layout::kEnsembleName)) {
      f.attribute("/posterior", "chosen", r.attribute_text(layout::kMetrics, layout::kEnsembleName));
    }
  }

  // sample_stats: ArviZ's names where they exist.
  stamp(f, "/sample_stats", created, version);
  const auto loss = per_draw(layout::kLoss), temperature = per_draw(layout::kTemperature),
             step = per_draw(layout::kStep);
  std::vector<double> lp(slots);
  for (std::size_t i = 0; i < slots; ++i)
    lp[i] = temperature[i] > 0 ? -loss[i] / temperature[i] - prior_energy[i] : kNaN;
  const auto diverged_at = r.exists(layout::kDivergedAtStep)
                               ? r.read_ints(layout::kDivergedAtStep)
                               : std::vector<std::int64_t>(static_cast<std::size_t>(run.chains), -1);
  std::vector<std::int64_t> diverging(slots);
  each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s) {
    const std::int64_t d = diverged_at[static_cast<std::size_t>(s.first)];
    diverging[at] = (!std::isfinite(loss[at]) || (d >= 0 && step[at] >= static_cast<double>(d))) ? 1 : 0;
  });
  const std::vector<std::int64_t> stat_dims = m.dims({});
  f.put("/sample_stats/lp", lp, stat_dims);
  f.attribute("/sample_stats/lp", layout::kMeaning,
              std::string("log density the sampler targets at the draw, up to a constant: -loss/T - sum_i x_i^2/(2 "
                          "sigma_i^2) (the Gaussian prior's term when simmer.prior = gaussian); at T = T_Bayes the log "
                          "posterior"));
  f.put("/sample_stats/diverging", diverging, stat_dims);
  f.attribute("/sample_stats/diverging", "dtype", std::string("bool"));  // xarray decodes it to bool
  f.put("/sample_stats/temperature", temperature, stat_dims);
  f.put("/sample_stats/energy", per_draw(layout::kExtendedEnergy), stat_dims);
  f.attribute("/sample_stats/energy", layout::kMeaning,
              std::string("the Nose-Hoover chain's conserved extended energy H_ext at the draw"));
  f.put("/sample_stats/kinetic_temperature", per_draw(layout::kKineticTemperature), stat_dims);
  f.put("/sample_stats/loss", loss, stat_dims);
  f.put("/sample_stats/step", step, stat_dims);

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
    const Matrix x = run.x_scaler.transform(Eigen::Map<const Matrix>(x_raw.data(), rows, features));
    std::vector<NetworkRow> networks(slots);
    each_slot([&](std::size_t at, std::pair<std::int64_t, std::int64_t> s) { networks[at] = s; });
    bool estimated = false;
    // The noise sd T_Bayes assumed: simmer.noise_sd's, or with auto the one the run measured.
    const double sd = run.config.simmer.noise_sd.value_or(r.has_attribute(layout::kMetrics, layout::kNoiseSd)
                                                              ? r.attribute_real(layout::kMetrics, layout::kNoiseSd)
                                                              : 0.0);
    const ensemble::NoiseEstimate noise =
        run.classification ? ensemble::NoiseEstimate{} : group_noise(r, run, layout::kEnsemble, estimated);
    std::vector<double> ll(slots * static_cast<std::size_t>(rows), kNaN);
    Matrix scratch;
    evaluate_networks(r, run, layout::kPosteriorParams, networks, 0, static_cast<std::int64_t>(slots), x,
                      [&](std::int64_t i, const std::string&, ConstBatchView outputs) {
                        row_log_likelihood(run, outputs, y, sd, noise.variance, scratch,
                                           ll.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(rows));
                      });
    f.put("/log_likelihood/y", ll, m.dims({rows}));
    f.attribute(
        "/log_likelihood/y", layout::kMeaning,
        std::string(run.classification ? "log p(y | x, network) of each training row: the log softmax of its class"
                                       : "log N(y; network(x), s^2) of each training row, summed over outputs, s = " +
                                             (sd > 0 ? "the run's noise sd (/metrics noise_sd)"
                                                     : std::string("the ensemble's noise sd")) +
                                             " (the likelihood T_Bayes assumes)"));
  }
  f.name_axes(idata_axis);
  f.close();
  out << "simmer_analyze export: wrote " << o.output << " (InferenceData: posterior " << m.chains << " chains x "
      << m.draws << " draws" << (m.ladder ? " x " + std::to_string(m.rungs) + " rungs" : std::string())
      << ", sample_stats, observed_data, constant_data"
      << (o.log_likelihood ? ", log_likelihood over " + std::to_string(rows) + " training rows (" +
                                 csv_number(8e-6 * static_cast<double>(slots) * static_cast<double>(rows)) + " MB)"
                           : std::string())
      << ")\n";
}

}  // namespace simmer::posthoc
