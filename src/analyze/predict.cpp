// simmer_analyze predict: every stored network on new inputs, the draws split over MPI ranks.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "simmer/analyze/commands.hpp"
#include "simmer/analyze/run_archive.hpp"
#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/mpi/collectives.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::analyze {
namespace {

namespace layout = run::layout;
using Votes = ensemble::VoteAccumulator::Votes;

/// True when no rank failed; otherwise the lowest failing rank prints its message once.
bool agree(MPI_Comm comm, bool failed, const std::string& message) {
  return mpi::agree_on_failure(comm, failed, message, "simmer_analyze");
}

/// Linear interpolation between order statistics (numpy's default): sorted[q (n − 1)].
double quantile(std::vector<double>& values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

std::string quantile_label(double q) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "q%g", q);
  return buf;
}

/// Everything a rank needs before evaluating: identical on every rank.
struct Setup {
  std::optional<io::ArchiveReader> reader;
  RunArchive run;
  Matrix x;  ///< points, scaled to the network's input range
  /// The networks: (chain, draw) rows of `source` (draw ignored for /baseline/params).
  std::vector<std::pair<std::int64_t, std::int64_t>> draws;
  std::string source = layout::kPosteriorParams;
  std::string candidate;  ///< what they are, for the closing line
};

/// The networks of `candidate` ("" = the run's ensemble): a simmering stage's stored draws, a
/// ladder rung's block of them, every stored draw, or the deep ensemble's Adam end points.
void choose_networks(Setup& s, const std::string& requested) {
  const io::ArchiveReader& r = *s.reader;
  std::string name = requested;
  if (name.empty()) {
    name = r.has_attribute(layout::kMetrics, layout::kEnsembleName)
               ? r.attribute_text(layout::kMetrics, layout::kEnsembleName)
               : std::string("all");
    if (name == layout::kSimmeringName) name = "all";
  }
  s.candidate = name;
  if (name == layout::kDeepEnsembleName) {
    if (!r.exists(layout::kDeepEnsemble) || !r.exists(layout::kBaselineParams)) {
      throw Error("'" + s.run.path +
                  "': --candidate deep_ensemble: this run has no deep ensemble (it is not a retrofit)");
    }
    s.source = layout::kBaselineParams;
    s.draws.clear();
    for (std::int64_t c = 0; c < s.run.chains; ++c) s.draws.emplace_back(c, 0);
    return;
  }
  const auto all = written_draws(r, s.run);
  if (name == "all") {
    s.draws = all;
    return;
  }
  const std::vector<double> ladder = s.run.config.simmer.ladder;
  const std::string prefix = layout::kRungPrefix;
  std::int64_t rung = -1;
  if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() &&
      name.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
    rung = std::stoll(name.substr(prefix.size()));
  }
  if (rung < 0 || rung >= static_cast<std::int64_t>(ladder.size())) {
    throw Error("'" + s.run.path + "': --candidate '" + name + "': not one of deep_ensemble, all" +
                (ladder.empty() ? std::string() : ", rung_0 .. rung_" + std::to_string(ladder.size() - 1)));
  }
  const auto rungs = static_cast<std::int64_t>(ladder.size());
  if (s.run.config.simmer.ladder_mode == run::LadderMode::parallel) {
    // Parallel rungs: rung k is every draw of the trajectories i with i mod K = k.
    for (const auto& d : all) {
      if (d.first % rungs == rung) s.draws.push_back(d);
    }
    return;
  }
  // Sequential rungs: rung k is each trajectory's k-th block of draws.
  const std::int64_t per_stage = s.run.draws / rungs;
  for (const auto& d : all) {
    if (d.second / per_stage == rung) s.draws.push_back(d);
  }
}

Setup prepare(const PredictOptions& o) {
  Setup s;
  s.reader.emplace(o.archive);
  s.run = load_run(*s.reader);
  for (const double q : o.quantiles) {
    if (!(q >= 0.0 && q <= 1.0)) throw Error("--quantiles: " + std::to_string(q) + " is not in [0, 1]");
  }
  data::CsvSpec spec;
  spec.path = o.points;
  // Read as the run read its data (archives before data.delimiter / data.missing get the defaults).
  spec.delimiter = cli::parse_delimiter(s.run.config.data.delimiter);
  spec.missing = cli::csv_missing_tokens(s.run.config.data.missing);
  spec.features = s.run.feature_names;
  spec.target = s.run.feature_names.front();  // any numeric column: points have no target
  spec.task = data::Task::regression;
  data::CsvReport report;
  const data::Dataset points = data::read_csv(spec, &report);
  if (report.rows_dropped > 0) {
    throw Error("'" + o.points + "': " + data::describe_drops(report) + "; predict needs every feature of every point");
  }
  s.x = s.run.x_scaler.transform(points.x);
  choose_networks(s, o.candidate);
  if (s.draws.empty()) {
    throw Error("'" + o.archive + "': no stored networks of '" + s.candidate + "' in /posterior/params");
  }
  return s;
}

}  // namespace

int predict(const PredictOptions& o, MPI_Comm comm, std::ostream& out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Setup s;
  std::string message;
  bool failed = false;
  try {
    s = prepare(o);
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  }
  if (!agree(comm, failed, message)) return 2;

  const RunArchive& run = s.run;
  const Index points = s.x.rows();
  const Index width = run.classification ? run.classes : run.outputs;
  const auto n_draws = static_cast<std::int64_t>(s.draws.size());
  const std::int64_t begin = n_draws * rank / size;
  const std::int64_t end = n_draws * (rank + 1) / size;
  Votes votes = Votes::Zero(points, run.classification ? run.classes : 0);
  std::vector<double> predictions;  // regression: [my draws][points][outputs]
  try {
    if (!run.classification && n_draws * points * width > INT_MAX) {
      throw Error("predict: " + std::to_string(n_draws) + " draws x " + std::to_string(points) +
                  " points are too many predictions to gather at once; split the points file");
    }
    // In the run's own precision, so the members predict what they predicted in the run.
    with_scalar(run.precision, [&](auto zero) {
      using S = decltype(zero);
      model::BasicNetwork<S> net = build_network<S>(run);
      const MatrixOf<S> x = s.x.cast<S>();
      const MatrixOf<S> dummy_y = MatrixOf<S>::Zero(points, run.outputs);
      // The run's own path from network output to target units (NetworkObjective::predict).
      train::BasicNetworkObjective<S> objective =
          run.classification
              ? train::BasicNetworkObjective<S>(net, run.loss, x, dummy_y)
              : train::BasicNetworkObjective<S>(net, run.loss, x, dummy_y, run.y_scaler.scale(), run.y_scaler.offset());
      predictions.reserve(static_cast<std::size_t>((end - begin) * points * width));
      Matrix wide;
      for (std::int64_t i = begin; i < end; ++i) {
        const auto [chain, draw] = s.draws[static_cast<std::size_t>(i)];
        const std::vector<double> params = s.source == layout::kPosteriorParams
                                               ? s.reader->read_slab(s.source, chain, draw)
                                               : s.reader->read_slab(s.source, chain);
        net.parameters() = Eigen::Map<const Vector>(params.data(), static_cast<Index>(params.size())).cast<S>();
        if (!net.parameters().allFinite()) {
          throw Error("'" + o.archive + "': " + s.source + "[" + std::to_string(chain) + ", " + std::to_string(draw) +
                      "] is not finite although it was written");
        }
        // One batched forward pass over all points.
        wide = objective.predict(view(x)).template cast<double>();
        const ConstBatchView pred = view(wide);
        if (run.classification) {
          const auto winners = ensemble::predicted_classes(pred);
          for (Index p = 0; p < points; ++p) votes(p, winners[static_cast<std::size_t>(p)]) += 1;
        } else {
          predictions.insert(predictions.end(), pred.data(), pred.data() + pred.size());
        }
      }
    });
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  }
  if (!agree(comm, failed, message)) return 2;

  Votes total_votes;
  std::vector<double> all;
  if (run.classification) {
    total_votes = Votes::Zero(votes.rows(), votes.cols());
    MPI_Reduce(votes.data(), total_votes.data(), static_cast<int>(votes.size()), MPI_INT64_T, MPI_SUM, 0, comm);
  } else {
    // Every rank's block of draws, concatenated in rank order = draw order.
    all = mpi::gather_to_root(predictions, MPI_DOUBLE, comm);
  }

  int code = 0;
  if (rank == 0) {
    try {
      OutputFile file(o.output, out);
      std::ostream& csv = file.stream();
      csv << "point";
      if (run.classification) {
        for (const auto& name : run.class_names) csv << "," << csv_text("fraction_" + name);
        csv << ",majority,majority_class\n";
        ensemble::VoteAccumulator acc(points, run.classes);
        acc.add_votes(total_votes, n_draws);
        const Matrix fraction = acc.fractions();
        const auto majority = acc.majority();
        for (Index p = 0; p < points; ++p) {
          csv << p;
          for (Index k = 0; k < run.classes; ++k) csv << "," << csv_number(fraction(p, k));
          const auto m = majority[static_cast<std::size_t>(p)];
          csv << "," << m << "," << csv_text(run.class_names[static_cast<std::size_t>(m)]) << "\n";
        }
      } else {
        // Per trajectory in draw order, then over trajectories in order: the run's aggregation.
        ensemble::MeanAccumulator total(points, run.outputs);
        const Index cells = points * run.outputs;
        std::size_t i = 0;
        while (i < s.draws.size()) {
          const std::int64_t chain = s.draws[i].first;
          ensemble::MeanAccumulator per_chain(points, run.outputs);
          for (; i < s.draws.size() && s.draws[i].first == chain; ++i) {
            per_chain.add(ConstBatchView(all.data() + static_cast<Index>(i) * cells, points, run.outputs));
          }
          total.merge(per_chain.members(), per_chain.mean(), per_chain.m2());
        }
        const Matrix variance = total.variance();
        for (const auto& name : output_names(run)) {
          csv << "," << csv_text("mean_" + name) << "," << csv_text("sd_" + name);
          for (const double q : o.quantiles) csv << "," << csv_text(quantile_label(q) + "_" + name);
        }
        csv << "\n";
        std::vector<double> column(s.draws.size());
        for (Index p = 0; p < points; ++p) {
          csv << p;
          for (Index k = 0; k < run.outputs; ++k) {
            csv << "," << csv_number(total.mean()(p, k)) << "," << csv_number(std::sqrt(variance(p, k)));
            if (o.quantiles.empty()) continue;
            for (std::size_t d = 0; d < s.draws.size(); ++d) {
              column[d] = all[d * static_cast<std::size_t>(cells) + static_cast<std::size_t>(p * run.outputs + k)];
            }
            for (const double q : o.quantiles) csv << "," << csv_number(quantile(column, q));
          }
          csv << "\n";
        }
      }
      file.close();
      std::cerr << "simmer_analyze predict: " << points << " point(s), " << n_draws << " network(s) of " << run.chains
                << " trajectories (" << s.candidate << "), on " << size << " rank(s)"
                << (o.output.empty() ? std::string() : "; wrote " + o.output) << "\n";
    } catch (const std::exception& e) {
      std::cerr << "simmer_analyze: error: " << e.what() << std::endl;
      code = 2;
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);
  return code;
}

}  // namespace simmer::analyze
