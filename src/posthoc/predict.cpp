// simmer_analyze predict: every stored network on new inputs, the draws split over MPI ranks.
// Classification: the networks' mean probability, its entropy and mutual information, and their
// votes; regression: the predictive mixture of N(prediction, σ²) over the networks (issue 26).
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

#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/predictive.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/parallel/collectives.hpp"
#include "simmer/posthoc/commands.hpp"
#include "simmer/posthoc/run_archive.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::posthoc {
namespace {

namespace layout = run::layout;
using Votes = ensemble::VoteAccumulator::Votes;

/// Networks per block: a rank evaluates whole blocks, and rank 0 adds the blocks' probability
/// sums in block order, so the sums do not depend on the number of ranks.
constexpr std::int64_t kBlock = 64;
/// outside_training_range widens the training data's [min, max] by this share of the range.
constexpr double kRangeMargin = 0.1;
/// A scaled input beyond this (a million half-ranges of the training data from its middle) is
/// taken for a data error (a sentinel such as 9e99, a unit mistake) and refused, like a value the
/// run's precision cannot hold: a network extrapolates it to a confident, meaningless output.
constexpr double kMaxScaled = 1e6;

/// True when no rank failed; otherwise the lowest failing rank prints its message once.
bool agree(MPI_Comm comm, bool failed, const std::string& message) {
  return parallel::agree_on_failure(comm, failed, message, "simmer_analyze");
}

/// Everything a rank needs before evaluating: identical on every rank.
struct Setup {
  std::optional<io::ArchiveReader> reader;
  RunArchive run;
  data::Dataset points;  ///< raw inputs, with their file lines
  Matrix x;              ///< points, scaled to the network's input range
  /// The networks: (chain, draw) rows of their part's `source` (draw ignored for /baseline/params).
  std::vector<std::pair<std::int64_t, std::int64_t>> draws;
  std::int64_t planned = 0;  ///< networks of the candidate a finished run holds
  /// One candidate's networks, draws[first .. first + count): one part, or with --candidate
  /// stacked one per candidate of nonzero stacking weight.
  struct Part {
    std::string name;  ///< the candidate
    std::string source = layout::kPosteriorParams;
    std::string group = layout::kEnsemble;  ///< the ensemble group whose σ² regression uses
    std::int64_t first = 0, count = 0;
    double weight = 1.0;  ///< its stacking weight (1: the one part)
  };
  std::vector<Part> parts;
  bool stacked = false;                        ///< --candidate stacked: each network weighs weight / count
  std::string candidate;                       ///< what they are, for the closing line
  std::vector<std::int64_t> outside;           ///< per point: features outside the widened training range
  std::string incomplete;                      ///< the warning for an unfinished run ("" when complete)
  std::vector<std::string> kept_names;         ///< --keep: the points file's columns copied to the output
  std::vector<std::vector<std::string>> kept;  ///< per point
  int digits = 7;                              ///< --digits
};

/// The networks of one candidate `name` (not "stacked"): a simmering stage's stored draws, a
/// ladder rung's block of them, every stored draw ("all"), or the deep ensemble's Adam end points,
/// appended to s.draws as a part; returns the networks a finished run holds of it.
std::int64_t add_part(Setup& s, const std::string& name) {
  const io::ArchiveReader& r = *s.reader;
  Setup::Part part;
  part.name = name;
  part.first = static_cast<std::int64_t>(s.draws.size());
  std::vector<NetworkRow> draws;
  std::int64_t planned = 0;
  if (name == layout::kDeepEnsembleName) {
    if (!r.exists(layout::kDeepEnsemble) || !r.exists(layout::kBaselineParams)) {
      throw Error("'" + s.run.path +
                  "': --candidate deep_ensemble: this run has no deep ensemble (it is not a retrofit)");
    }
    part.source = layout::kBaselineParams;
    part.group = layout::kDeepEnsemble;
    for (std::int64_t c = 0; c < s.run.chains; ++c) draws.emplace_back(c, 0);
    planned = s.run.chains;
  } else if (name == "all") {
    draws = written_draws(r, s.run);
    planned = s.run.chains * s.run.draws;
  } else {
    const std::vector<double> ladder = s.run.config.simmer.ladder.rungs;
    const std::string prefix = layout::kRungPrefix;
    std::int64_t rung = -1;
    if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
      rung = std::stoll(name.substr(prefix.size()));
    }
    if (rung < 0 || rung >= static_cast<std::int64_t>(ladder.size())) {
      throw Error(
          "'" + s.run.path + "': --candidate '" + name + "': not one of deep_ensemble, all" +
          (ladder.empty() ? std::string() : ", rung_0 .. rung_" + std::to_string(ladder.size() - 1) + ", stacked"));
    }
    part.group = layout::ladder_group(name);
    const auto rungs = static_cast<std::int64_t>(ladder.size());
    draws = rung_draws(s.run, written_draws(r, s.run), rung);
    planned = s.run.config.simmer.ladder.mode == run::LadderMode::parallel
                  ? ((s.run.chains - rung + rungs - 1) / rungs) * s.run.draws
                  : s.run.chains * (s.run.draws / rungs);
  }
  part.count = static_cast<std::int64_t>(draws.size());
  s.draws.insert(s.draws.end(), draws.begin(), draws.end());
  s.parts.push_back(std::move(part));
  return planned;
}

/// The networks of `requested` ("" = the run's ensemble; "stacked": every candidate of nonzero
/// stacking weight in /selection, each network weighing its candidate's weight over its count).
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
  if (name != layout::kStackedName) {
    s.planned = add_part(s, name);
    return;
  }
  const std::string weights = layout::selection_column(layout::kStackingWeight);
  if (!r.exists(weights)) {
    throw Error("'" + s.run.path +
                "': --candidate stacked: the run has no stacked candidates (/selection/stacking_weight): only a "
                "ladder run with a validation set, written by a simmer that stacks, has them");
  }
  if (!r.is_group(layout::kStacked)) {
    throw Error("'" + s.run.path + "': --candidate stacked: the run has no " + layout::kStacked +
                " (it was written by a simmer from before the stacked candidates were a candidate of their own)");
  }
  const auto names = r.read_strings(layout::selection_column(layout::kCandidate));
  const auto w = r.read_doubles(weights);
  s.stacked = true;
  for (std::size_t c = 0; c < names.size() && c < w.size(); ++c) {
    if (!(w[c] > 0.0)) continue;
    s.planned += add_part(s, names[c]);
    s.parts.back().weight = w[c];
  }
  if (s.parts.empty()) {
    throw Error("'" + s.run.path +
                "': --candidate stacked: no candidate has a stacking weight (no finite validation "
                "likelihood)");
  }
}

/// The inputs scaled as the run scaled them, refused where a scaled value is not finite or beyond
/// kMaxScaled, and each point's count of features outside the training range widened by
/// kRangeMargin.
void scale_points(Setup& s) {
  const data::MinMaxScaler& scaler = s.run.x_scaler;
  s.x = scaler.transform(s.points.x);
  s.outside.assign(static_cast<std::size_t>(s.x.rows()), 0);
  for (Index i = 0; i < s.x.rows(); ++i) {
    for (Index f = 0; f < s.x.cols(); ++f) {
      const double raw = s.points.x(i, f), scaled = s.x(i, f);
      if (!std::isfinite(raw) || !(std::abs(scaled) <= kMaxScaled)) {
        throw Error(data::cell_name(s.points, i, f) + ": " + csv_number(raw) + " scales to " + csv_number(scaled) +
                    ", more than 1e6 half-ranges of the training data [" + csv_number(scaler.min()(f)) + ", " +
                    csv_number(scaler.max()(f)) +
                    "] from its middle: taken for a data error (a sentinel value, a "
                    "unit mistake), not a point to predict; nothing written");
      }
      const double margin = kRangeMargin * (scaler.max()(f) - scaler.min()(f));
      if (raw < scaler.min()(f) - margin || raw > scaler.max()(f) + margin) s.outside[static_cast<std::size_t>(i)] += 1;
    }
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
  spec.keep = o.keep;
  // A points file without a feature the networks take: every missing one, and all they need.
  spec.missing_features = [&features = s.run.feature_names](const std::vector<std::string>& missing) {
    std::string names, needed;
    for (const auto& name : missing) names += (names.empty() ? "'" : ", '") + name + "'";
    for (const auto& name : features) needed += (needed.empty() ? "" : ",") + name;
    return "the column(s) " + names + " are missing; the archive's networks take " + std::to_string(features.size()) +
           " features, so the header needs " + needed + " (other columns are copied to the output, see --keep)";
  };
  data::CsvReport report;
  s.points = data::read_csv(spec, &report);
  s.kept_names = report.kept_names;
  s.kept = std::move(report.kept);
  s.digits = o.digits;
  if (report.rows_dropped > 0) {
    throw Error("'" + o.points + "': " + data::describe_drops(report) + "; predict needs every feature of every point");
  }
  choose_networks(s, o.candidate);
  s.incomplete = check_complete(*s.reader, "predict",
                                std::to_string(s.draws.size()) + " of " + std::to_string(s.planned) +
                                    " planned stored networks of " + s.candidate,
                                o.allow_incomplete);
  if (s.draws.empty()) {
    const std::string why = no_members(*s.reader, s.run);
    throw Error("'" + o.archive + "': no stored networks of '" + s.candidate + "' in /posterior/params" +
                (why.empty() ? std::string() : ": " + why) + "; nothing to predict with");
  }
  scale_points(s);
  return s;
}

/// "'points.csv' line 7 (point 5)" for point `p`.
std::string point_name(const Setup& s, Index p) {
  const auto& lines = s.points.origin.lines;
  return "'" + s.points.origin.path + "' line " +
         (static_cast<std::size_t>(p) < lines.size() ? std::to_string(lines[static_cast<std::size_t>(p)])
                                                     : std::string("?")) +
         " (point " + std::to_string(p) + ")";
}

/// ",id,name": point `p`'s --keep fields, each after a comma ("" without --keep columns).
std::string kept_fields(const Setup& s, Index p) {
  std::string out;
  if (static_cast<std::size_t>(p) >= s.kept.size()) return out;
  for (const auto& field : s.kept[static_cast<std::size_t>(p)]) out += "," + csv_text(field);
  return out;
}

/// Network `d`'s weight in the sums: 1, or with --candidate stacked its candidate's stacking
/// weight over the candidate's networks (the weights then sum to 1), and its part.
const Setup::Part& part_of(const Setup& s, std::int64_t d) {
  for (const auto& part : s.parts) {
    if (d >= part.first && d < part.first + part.count) return part;
  }
  throw Error("internal: network " + std::to_string(d) + " is in no part");
}
double network_weight(const Setup& s, std::int64_t d) {
  if (!s.stacked) return 1.0;
  const Setup::Part& part = part_of(s, d);
  return part.weight / static_cast<double>(part.count);
}

/// One block of networks' classification sums (each network times network_weight): probabilities
/// [points][classes], each network's entropy [points], and (stacked) the weight of the networks
/// voting for each class [points][classes].
struct ClassSums {
  Matrix probability, entropy, vote_weight;
};

void write_classification(const Setup& s, const Votes& votes, const ClassSums& sums, std::int64_t networks,
                          std::ostream& csv) {
  const RunArchive& run = s.run;
  const Index points = s.x.rows();
  csv << "point";
  for (const auto& name : s.kept_names) csv << "," << csv_text(name);
  csv << ",prediction,prediction_class";
  for (const auto& name : run.class_names) csv << "," << csv_text("probability_" + name);
  csv << ",entropy,mutual_information";
  for (const auto& name : run.class_names) csv << "," << csv_text("fraction_" + name);
  csv << ",vote_prediction,vote_prediction_class,outside_training_range\n";
  // Stacked: the sums are weighted means already, and the vote is the weighted one (its ties,
  // like the majority's, to the lowest class).
  ensemble::VoteAccumulator acc(points, run.classes);
  acc.add_votes(votes, networks);
  const Matrix fraction = s.stacked ? sums.vote_weight : acc.fractions();
  const auto majority = s.stacked ? ensemble::argmax_rows(view(fraction)) : acc.majority();
  const double normaliser = s.stacked ? 1.0 : static_cast<double>(networks);
  const Matrix probability = sums.probability / normaliser;
  const auto best = ensemble::argmax_rows(view(probability));
  Matrix entropy;
  ensemble::row_entropy(view(probability), entropy);
  const auto name_of = [&](std::int64_t k) { return csv_text(run.class_names[static_cast<std::size_t>(k)]); };
  for (Index p = 0; p < points; ++p) {
    const auto b = best[static_cast<std::size_t>(p)];
    csv << p << kept_fields(s, p) << "," << b << "," << name_of(b);
    for (Index k = 0; k < run.classes; ++k) csv << "," << csv_number(probability(p, k), s.digits);
    // The mutual information H(mean p) − mean H(p_m) >= 0; rounding may leave −1e-17.
    const double mi = std::max(0.0, entropy(p, 0) - sums.entropy(p, 0) / normaliser);
    csv << "," << csv_number(entropy(p, 0), s.digits) << "," << csv_number(mi, s.digits);
    for (Index k = 0; k < run.classes; ++k) csv << "," << csv_number(fraction(p, k), s.digits);
    const auto m = majority[static_cast<std::size_t>(p)];
    csv << "," << m << "," << name_of(m) << "," << s.outside[static_cast<std::size_t>(p)] << "\n";
  }
}

/// `noise`: the candidate's σ² (stacked: the stacked candidates', /stacked's). Each network is the
/// component N(prediction, σ²), weighing network_weight.
void write_regression(const Setup& s, const std::vector<double>& all, const ensemble::NoiseEstimate& noise,
                      const std::vector<double>& quantiles, std::ostream& csv) {
  const RunArchive& run = s.run;
  const Index points = s.x.rows();
  const Index cells = points * run.outputs;
  csv << "point";
  for (const auto& name : s.kept_names) csv << "," << csv_text(name);
  for (const auto& name : output_names(run)) {
    csv << "," << csv_text("mean_" + name) << "," << csv_text("sd_" + name) << "," << csv_text("sd_model_" + name);
    for (const double q : quantiles) csv << "," << csv_text(quantile_column(q, name));
  }
  csv << ",outside_training_range\n";
  ensemble::Mixture m;
  m.resize(s.draws.size());
  for (std::size_t d = 0; d < s.draws.size(); ++d) m.weight[d] = network_weight(s, static_cast<std::int64_t>(d));
  for (Index p = 0; p < points; ++p) {
    csv << p << kept_fields(s, p);
    for (Index k = 0; k < run.outputs; ++k) {
      for (std::size_t d = 0; d < s.draws.size(); ++d) {
        m.mean[d] = all[d * static_cast<std::size_t>(cells) + static_cast<std::size_t>(p * run.outputs + k)];
        m.variance[d] = 0.0;
      }
      const double sigma2 = noise.variance(0, k);
      const ensemble::MixtureMoments mo = ensemble::mixture_moments(m, sigma2);
      csv << "," << csv_number(mo.mean, s.digits) << "," << csv_number(std::sqrt(mo.total), s.digits) << ","
          << csv_number(std::sqrt(mo.model), s.digits);
      for (const double q : quantiles) {
        csv << "," << csv_number(ensemble::mixture_quantile(m, sigma2, q), s.digits);
      }
    }
    csv << "," << s.outside[static_cast<std::size_t>(p)] << "\n";
  }
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
  // Whole blocks of networks per rank, in order.
  const std::int64_t blocks = (n_draws + kBlock - 1) / kBlock;
  const auto block_owner = [&](std::int64_t b) {  // the rank whose [blocks r / size, blocks (r + 1) / size) holds b
    int r = 0;
    while (r + 1 < size && blocks * (r + 1) / size <= b) ++r;
    return r;
  };
  const std::int64_t first_block = blocks * rank / size, end_block = blocks * (rank + 1) / size;
  const std::int64_t begin = std::min(n_draws, first_block * kBlock), end = std::min(n_draws, end_block * kBlock);
  Votes votes = Votes::Zero(points, run.classification ? run.classes : 0);
  std::vector<ClassSums> block_sums;  // classification: this rank's blocks
  std::vector<double> predictions;    // regression: [my draws][points][outputs]
  try {
    if (!run.classification && n_draws * points * width > INT_MAX) {
      throw Error("predict: " + std::to_string(n_draws) + " draws x " + std::to_string(points) +
                  " points are too many predictions to gather at once; split the points file");
    }
    if (!run.classification) predictions.reserve(static_cast<std::size_t>((end - begin) * points * width));
    Matrix probability, entropy;
    const NetworkVisitor visit = [&](std::int64_t i, const std::string& network, ConstBatchView pred) {
      for (Index p = 0; p < points; ++p) {
        for (Index k = 0; k < pred.cols(); ++k) {
          if (!std::isfinite(pred(p, k))) {
            throw Error(point_name(s, p) + ": the network " + network + " gives " + csv_number(pred(p, k)) +
                        " for output " + std::to_string(k) + " there; nothing written");
          }
        }
      }
      if (!run.classification) {
        predictions.insert(predictions.end(), pred.data(), pred.data() + pred.size());
        return;
      }
      if ((i - begin) % kBlock == 0) {
        block_sums.push_back(
            {Matrix::Zero(points, run.classes), Matrix::Zero(points, 1), Matrix::Zero(points, run.classes)});
      }
      const double w = network_weight(s, i);
      const auto winners = ensemble::predicted_classes(pred);
      for (Index p = 0; p < points; ++p) {
        votes(p, winners[static_cast<std::size_t>(p)]) += 1;
        block_sums.back().vote_weight(p, winners[static_cast<std::size_t>(p)]) += w;
      }
      ensemble::class_probabilities(pred, probability);
      ensemble::row_entropy(view(probability), entropy);
      // w is 1 unless stacked, and a product by 1 is exact: the unweighted sums' bits.
      block_sums.back().probability += w * probability;
      block_sums.back().entropy += w * entropy;
    };
    // Each part's networks from its own source (the deep ensemble's are /baseline/params').
    for (const auto& part : s.parts) {
      const std::int64_t from = std::max(begin, part.first), to = std::min(end, part.first + part.count);
      if (from < to) evaluate_networks(*s.reader, run, part.source, s.draws, from, to, s.x, visit);
    }
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  }
  if (!agree(comm, failed, message)) return 2;

  Votes total_votes;
  ClassSums total;
  std::vector<double> all;
  if (run.classification) {
    total_votes = Votes::Zero(votes.rows(), votes.cols());
    MPI_Reduce(votes.data(), total_votes.data(), static_cast<int>(votes.size()), MPI_INT64_T, MPI_SUM, 0, comm);
    // Rank 0 adds the blocks in block order (the same sums for any number of ranks).
    const int values = static_cast<int>(points * (2 * run.classes + 1));
    std::vector<double> buffer(static_cast<std::size_t>(values));
    if (rank == 0) {
      total = {Matrix::Zero(points, run.classes), Matrix::Zero(points, 1), Matrix::Zero(points, run.classes)};
      for (std::int64_t b = 0; b < blocks; ++b) {
        const int owner = block_owner(b);
        if (owner == 0) {
          const ClassSums& mine = block_sums.at(static_cast<std::size_t>(b - first_block));
          total.probability += mine.probability;
          total.entropy += mine.entropy;
          total.vote_weight += mine.vote_weight;
          continue;
        }
        MPI_Recv(buffer.data(), values, MPI_DOUBLE, owner, static_cast<int>(b % 32768), comm, MPI_STATUS_IGNORE);
        total.probability += Eigen::Map<const Matrix>(buffer.data(), points, run.classes);
        total.entropy += Eigen::Map<const Matrix>(buffer.data() + points * run.classes, points, 1);
        total.vote_weight += Eigen::Map<const Matrix>(buffer.data() + points * (run.classes + 1), points, run.classes);
      }
    } else {
      for (std::int64_t b = first_block; b < end_block; ++b) {
        const ClassSums& mine = block_sums.at(static_cast<std::size_t>(b - first_block));
        std::copy(mine.probability.data(), mine.probability.data() + mine.probability.size(), buffer.begin());
        std::copy(mine.entropy.data(), mine.entropy.data() + mine.entropy.size(),
                  buffer.begin() + points * run.classes);
        std::copy(mine.vote_weight.data(), mine.vote_weight.data() + mine.vote_weight.size(),
                  buffer.begin() + points * (run.classes + 1));
        MPI_Send(buffer.data(), values, MPI_DOUBLE, 0, static_cast<int>(b % 32768), comm);
      }
    }
  } else {
    // Every rank's block of draws, concatenated in rank order = draw order.
    all = parallel::gather_to_root(predictions, MPI_DOUBLE, comm);
  }

  int code = 0;
  if (rank == 0) {
    try {
      OutputFile file("predict", o.output, out, {o.archive, o.points});
      std::string noise_line;
      if (run.classification) {
        write_classification(s, total_votes, total, n_draws, file.stream());
      } else {
        bool estimated = false;
        const std::string group = s.stacked ? std::string(layout::kStacked) : s.parts.front().group;
        const ensemble::NoiseEstimate noise = group_noise(*s.reader, run, group, estimated);
        write_regression(s, all, noise, o.quantiles, file.stream());
        noise_line = std::string("; intervals: the networks' mixture of N(prediction, sigma^2)") +
                     (s.stacked ? ", each candidate's networks weighing its stacking weight" : "") +
                     ", sigma = " + csv_number(std::sqrt(noise.mean())) + " (" +
                     std::string(ensemble::kNoiseSourceNames.name(noise.source)) + " residuals of " + group +
                     "'s mean" + (estimated ? ", estimated here: the archive records none" : "") + ")";
      }
      file.close();
      if (!s.incomplete.empty()) std::cerr << "simmer_analyze predict: " << s.incomplete << "\n";
      std::int64_t flagged = 0;
      for (const auto n : s.outside) flagged += n > 0 ? 1 : 0;
      std::cerr << "simmer_analyze predict: " << points << " point(s), " << n_draws << " network(s) of " << run.chains
                << " trajectories (" << s.candidate << "), on " << size << " rank(s)"
                << (run.classification ? (s.stacked ? "; prediction = arg max of the stacked probability (each "
                                                      "candidate's networks weighing its stacking weight), "
                                                      "vote_prediction = their weighted vote"
                                                    : "; prediction = arg max of the mean probability, "
                                                      "vote_prediction = the networks' majority")
                                       : noise_line)
                << "; " << flagged << " point(s) outside the training range (widened by 10 %)"
                << (o.output.empty() ? std::string() : "; wrote " + o.output) << "\n";
    } catch (const std::exception& e) {
      std::cerr << "simmer_analyze: error: " << e.what() << std::endl;
      code = 2;
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);
  return code;
}

}  // namespace simmer::posthoc
