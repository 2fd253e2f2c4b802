// simmer_analyze export: the archive's tables as tidy CSV (one observation per row).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/core/files.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/predictive.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/posthoc/commands.hpp"
#include "simmer/posthoc/run_archive.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::posthoc {
namespace {

namespace layout = run::layout;

/// [chain, record] fields of one group, read whole; a missing field reads NaN.
std::vector<std::vector<double>> read_fields(const io::ArchiveReader& r, const std::string& group,
                                             const std::vector<std::string>& fields, std::size_t cells) {
  std::vector<std::vector<double>> out;
  for (const auto& f : fields) {
    const std::string path = layout::join(group, f);
    if (!r.exists(path)) throw Error("'" + r.path() + "' is not a simmer archive: it has no " + path);
    out.push_back(r.read_doubles(path));
    if (out.back().size() != cells) throw Error("'" + r.path() + "': " + path + " has an unexpected shape");
  }
  return out;
}

void export_trace(const io::ArchiveReader& r, const RunArchive& run, std::ostream& csv) {
  // Every field the archive has (archives before the drift diagnostics have the first five).
  std::vector<std::string> fields;
  for (const auto& f : layout::trace_fields()) {
    if (r.exists(layout::trace_field(f))) fields.push_back(f);
  }
  r.require(layout::kTraceStep, "the loss trace");
  const auto shape = r.dims(layout::kTraceStep);
  const auto records = static_cast<std::size_t>(shape.size() == 2 ? shape[1] : 0);
  const auto C = static_cast<std::size_t>(run.chains);
  const auto table = read_fields(r, layout::kTrace, fields, C * records);
  csv << "chain";
  for (const auto& f : fields) csv << "," << f;
  csv << "\n";
  for (std::size_t c = 0; c < C; ++c) {
    for (std::size_t i = 0; i < records; ++i) {
      const std::size_t at = c * records + i;
      if (!std::isfinite(table[1][at])) continue;  // unwritten record of a stopped trajectory
      csv << c << "," << static_cast<long long>(table[0][at]) << "," << static_cast<long long>(table[1][at]);
      for (std::size_t f = 2; f < fields.size(); ++f) csv << "," << csv_number(table[f][at]);
      csv << "\n";
    }
  }
}

void export_samples(const io::ArchiveReader& r, const RunArchive& run, bool params, std::ostream& csv) {
  const auto C = static_cast<std::size_t>(run.chains);
  const auto D = static_cast<std::size_t>(run.draws);
  const auto& fields = layout::sample_stat_fields();
  const auto table = read_fields(r, layout::kSampleStats, fields, C * D);
  if (params) {
    csv << "chain,draw,param,value\n";
    for (std::size_t c = 0; c < C; ++c) {
      const auto rows = r.read_slab(layout::kPosteriorParams, static_cast<std::int64_t>(c));
      const auto P = static_cast<std::size_t>(run.parameters);
      for (std::size_t d = 0; d < D; ++d) {
        if (!std::isfinite(table[0][c * D + d])) continue;
        for (std::size_t p = 0; p < P; ++p) {
          csv << c << "," << d << "," << p << "," << csv_number(rows[d * P + p]) << "\n";
        }
      }
    }
    return;
  }
  csv << "chain,draw,step,temperature,loss,kinetic_temperature,extended_energy\n";
  for (std::size_t c = 0; c < C; ++c) {
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t at = c * D + d;
      if (!std::isfinite(table[0][at])) continue;  // unwritten draw of a stopped trajectory
      csv << c << "," << d << "," << static_cast<long long>(table[0][at]);
      for (std::size_t f = 1; f < fields.size(); ++f) csv << "," << csv_number(table[f][at]);
      csv << "\n";
    }
  }
}

/// Each value's truth ([rows][width] of /data/<set>/y), or none for a set without targets.
std::optional<std::vector<double>> truth_of(const io::ArchiveReader& r, const std::string& set) {
  if (!layout::is_scored_set(set) || !r.exists(layout::data_y(set))) return std::nullopt;
  return r.read_doubles(layout::data_y(set));
}

/// <g>/<field> (an ensemble set's dataset), which `what` needs.
std::vector<double> required_doubles(const io::ArchiveReader& r, const std::string& g, const char* field,
                                     const char* what) {
  r.require(layout::join(g, field), what);
  return r.read_doubles(layout::join(g, field));
}

/// Classification: the truth, the prediction by mean probability and the probabilities with their
/// entropy and mutual information (scored sets: the run keeps no probabilities for points), the
/// vote fractions and the majority.
void ensemble_classification(const io::ArchiveReader& r, const RunArchive& run, std::ostream& csv) {
  const auto K = static_cast<std::size_t>(run.classes);
  const auto name_of = [&](std::int64_t k) {
    return k >= 0 && static_cast<std::size_t>(k) < run.class_names.size()
               ? csv_text(run.class_names[static_cast<std::size_t>(k)])
               : std::string();
  };
  csv << "set,row,label,label_class,prediction,prediction_class";
  for (const auto& name : run.class_names) csv << "," << csv_text("probability_" + name);
  csv << ",entropy,mutual_information";
  for (const auto& name : run.class_names) csv << "," << csv_text("fraction_" + name);
  csv << ",vote_prediction,vote_prediction_class\n";
  for (const auto& set : run.sets) {
    const std::string g = layout::ensemble_group(set);
    const auto fraction = required_doubles(r, g, layout::kFraction, "the ensemble's vote fractions");
    r.require(layout::join(g, layout::kPrediction), "the ensemble's majority");
    const auto vote = r.read_ints(layout::join(g, layout::kPrediction));
    const std::size_t rows = vote.size();
    if (fraction.size() != rows * K) throw Error("'" + r.path() + "': " + g + " shapes disagree");
    const std::string probability_path = layout::join(g, layout::kProbability);
    const std::string entropy_path = layout::join(g, layout::kMemberEntropy);
    std::vector<double> probability, member_entropy;
    if (r.exists(probability_path)) probability = r.read_doubles(probability_path);
    if (r.exists(entropy_path)) member_entropy = r.read_doubles(entropy_path);
    if (!probability.empty() && probability.size() != rows * K)
      throw Error("'" + r.path() + "': " + g + " shapes disagree");
    std::vector<double> labels;
    if (const auto y = truth_of(r, set)) labels = *y;
    Matrix p(1, static_cast<Index>(K)), h;
    for (std::size_t i = 0; i < rows; ++i) {
      csv << set << "," << i << ",";
      if (i < labels.size()) {
        const auto label = static_cast<std::int64_t>(labels[i]);
        csv << label << "," << name_of(label);
      } else {
        csv << ",";
      }
      if (!probability.empty()) {
        for (std::size_t k = 0; k < K; ++k) p(0, static_cast<Index>(k)) = probability[i * K + k];
        const auto best = ensemble::argmax_rows(view(p)).front();
        ensemble::row_entropy(view(p), h);
        const double mi = i < member_entropy.size() ? std::max(0.0, h(0, 0) - member_entropy[i]) : std::nan("");
        csv << "," << best << "," << name_of(best);
        for (std::size_t k = 0; k < K; ++k) csv << "," << csv_number(probability[i * K + k]);
        csv << "," << csv_number(h(0, 0)) << "," << csv_number(mi);
      } else {
        csv << ",,";
        for (std::size_t k = 0; k < K + 2; ++k) csv << "," << csv_number(std::nan(""));
      }
      for (std::size_t k = 0; k < K; ++k) csv << "," << csv_number(fraction[i * K + k]);
      csv << "," << vote[i] << "," << name_of(vote[i]) << "\n";
    }
  }
}

/// Regression: per output the truth, the mean, the predictive and the members' sd and the
/// predictive mixture's quantiles (its components as the run archived them; an archive without
/// them, from an unfinished run or before issue 26, one Gaussian of the members' mean and variance).
void ensemble_regression(const io::ArchiveReader& r, const RunArchive& run, const std::vector<double>& quantiles,
                         std::ostream& csv) {
  const auto K = static_cast<std::size_t>(run.outputs);
  bool estimated = false;
  const ensemble::NoiseEstimate noise = group_noise(r, run, layout::kEnsemble, estimated);
  csv << "set,row";
  for (const auto& name : output_names(run)) {
    csv << "," << csv_text("y_" + name) << "," << csv_text("mean_" + name) << "," << csv_text("sd_" + name) << ","
        << csv_text("sd_model_" + name);
    for (const double q : quantiles) csv << "," << csv_text(quantile_column(q, name));
  }
  csv << "\n";
  for (const auto& set : run.sets) {
    const std::string g = layout::ensemble_group(set);
    const auto mean = required_doubles(r, g, layout::kMean, "the ensemble mean");
    const auto variance = required_doubles(r, g, layout::kVariance, "the ensemble variance");
    if (mean.size() != variance.size() || mean.size() % K != 0) {
      throw Error("'" + r.path() + "': " + g + " shapes disagree");
    }
    const auto rows = static_cast<Index>(mean.size() / K);
    std::vector<ensemble::MeanAccumulator> parts;
    if (auto read = read_components(r, g, rows, run.outputs)) {
      parts = std::move(*read);
    } else {
      ensemble::MeanAccumulator& one = parts.emplace_back(rows, run.outputs);
      const std::int64_t n = r.has_attribute(g, layout::kMembers) ? r.attribute_integer(g, layout::kMembers) : 1;
      const Matrix m = Eigen::Map<const Matrix>(mean.data(), rows, run.outputs);
      const Matrix v = Eigen::Map<const Matrix>(variance.data(), rows, run.outputs);
      if (n > 0) one.merge(n, m, v * static_cast<double>(n));
    }
    std::vector<double> truth;
    if (const auto y = truth_of(r, set)) truth = *y;
    ensemble::Mixture m;
    for (Index i = 0; i < rows; ++i) {
      csv << set << "," << i;
      for (Index k = 0; k < run.outputs; ++k) {
        const auto at = static_cast<std::size_t>(i) * K + static_cast<std::size_t>(k);
        ensemble::mixture_at(parts, i, k, m);
        const double sigma2 = noise.variance(0, k);
        const ensemble::MixtureMoments mo = ensemble::mixture_moments(m, sigma2);
        csv << "," << (at < truth.size() ? csv_number(truth[at]) : std::string()) << "," << csv_number(mean[at]) << ","
            << csv_number(std::sqrt(mo.total)) << "," << csv_number(std::sqrt(mo.model));
        for (const double q : quantiles) csv << "," << csv_number(ensemble::mixture_quantile(m, sigma2, q));
      }
      csv << "\n";
    }
  }
  std::cerr << "simmer_analyze export: intervals of /ensemble: the mixture of its trajectories' members with noise sd "
            << csv_number(std::sqrt(noise.mean())) << " ("
            << std::string(ensemble::kNoiseSourceNames.name(noise.source)) << " residuals of its mean"
            << (estimated ? ", estimated here: the archive records none" : "") << ")\n";
}

/// --what metrics: every number of /metrics and of each ladder rung's group, one row each
/// (candidate, split, metric, value), parsed from metrics.hpp's names: <prefix><set>_<score>; a
/// ladder's stacked candidates' scores are /stacked's (candidate "stacked").
void export_metrics(const io::ArchiveReader& r, std::ostream& out) {
  out << "candidate,split,metric,value\n";
  std::vector<std::pair<std::string, std::string>> groups{{"run", layout::kMetrics}};  // (candidate, group)
  for (std::int64_t k = 0; r.exists(layout::ladder_group(layout::rung_name(k))); ++k) {
    groups.emplace_back(layout::rung_name(k), layout::ladder_group(layout::rung_name(k)));
  }
  if (r.is_group(layout::kStacked)) groups.emplace_back(layout::kStackedName, layout::kStacked);
  for (const auto& [owner, group] : groups) {
    // The run's own group names its candidates by prefix; a rung's scores are its ensemble's.
    const std::vector<std::pair<std::string, std::string>> prefixes =
        owner == "run"
            ? std::vector<std::pair<std::string, std::string>>{{layout::kDeepEnsemblePrefix, layout::kDeepEnsembleName},
                                                               {layout::kEnsemblePrefix, "ensemble"},
                                                               {layout::kBaselinePrefix, layout::kBaselineName}}
            : std::vector<std::pair<std::string, std::string>>{{layout::kEnsemblePrefix, owner}};
    for (const auto& a : r.attributes(group)) {
      if (a.kind == io::AttributeValue::Kind::text) continue;
      const std::string value =
          a.kind == io::AttributeValue::Kind::integer ? std::to_string(a.integer) : csv_number(a.real);
      std::string candidate = owner, split, metric = a.name;
      for (const auto& [prefix, name] : prefixes) {
        if (a.name.rfind(prefix, 0) != 0) continue;
        candidate = name;
        metric = a.name.substr(prefix.size());
        for (const char* set : {layout::kTrain, layout::kTest, layout::kValidation}) {
          const std::string head = std::string(set) + "_";
          if (metric.rfind(head, 0) == 0) {
            split = set;
            metric = metric.substr(head.size());
            break;
          }
        }
        break;
      }
      out << candidate << "," << split << "," << metric << "," << value << "\n";
    }
  }
}

/// What an archive holds of the plan, for the message on an unfinished run: the run's ensemble's
/// members (--what ensemble) or the stored draws written (trace, samples).
std::string holdings(const io::ArchiveReader& r, const RunArchive& run, const std::string& what) {
  if (what == "ensemble") {
    const std::string first = run.sets.empty() ? std::string() : layout::ensemble_group(run.sets.front());
    const std::int64_t members = std::max<std::int64_t>(group_members(r, first), 0);
    return "/ensemble's " + std::to_string(members) + " members gathered so far of " +
           std::to_string(planned_members(run)) + " planned";
  }
  return stored_draws_held(r, run);
}

}  // namespace

void export_csv(const ExportOptions& o, std::ostream& out) {
  if (o.what == "inference-data") {
    export_inference_data(o, out);
    return;
  }
  if (o.what != "trace" && o.what != "samples" && o.what != "ensemble" && o.what != "metrics") {
    throw Error("export: --what '" + o.what + "' is not one of trace, samples, ensemble, metrics, inference-data");
  }
  if (o.log_likelihood) throw Error("export: --log-likelihood goes with --what inference-data");
  if (o.params && o.what != "samples") throw Error("export: --params goes with --what samples");
  const io::ArchiveReader r(o.archive);
  const RunArchive run = load_run(r);
  // An unfinished run's tables are refused before anything is written (--allow-incomplete).
  const std::string warning = check_complete(r, "export", holdings(r, run, o.what), o.allow_incomplete);
  if (!warning.empty()) std::cerr << "simmer_analyze export: " << warning << "\n";
  // An empty ensemble is not a table of class 0 with probabilities 0.
  if (o.what == "ensemble" || o.what == "samples") refuse_empty("export", r, run);
  OutputFile file("export", o.output, out, {o.archive});
  if (o.what == "metrics")
    export_metrics(r, file.stream());
  else if (o.what == "trace")
    export_trace(r, run, file.stream());
  else if (o.what == "samples")
    export_samples(r, run, o.params, file.stream());
  else if (run.classification)
    ensemble_classification(r, run, file.stream());
  else
    ensemble_regression(r, run, o.quantiles, file.stream());
  file.close();
}

void guard_output(const std::string& command, const std::string& output, const std::vector<std::string>& inputs) {
  const auto refuse = [&](const std::string& why) {
    throw Error(command + ": refusing to write '" + output + "': " + why + "; nothing was written");
  };
  const std::string_view own = own_file_suffix(output);
  if (!own.empty()) {
    refuse("a name ending in " + std::string(own) +
           " is simmer's own (a checkpoint, a run's lock or a temporary file)");
  }
  for (const auto& in : inputs) {
    if (in.empty()) continue;
    if (same_file(output, in)) refuse("it is the input '" + in + "'");
    for (const Companion& c : kArchiveCompanions) {
      if (same_file(output, in + c.suffix)) refuse("it is the " + std::string(c.what) + " of the input '" + in + "'");
    }
    if (same_file(output + kPartialSuffix, in)) {
      refuse("its temporary file '" + output + kPartialSuffix + "' is the input '" + in + "'");
    }
  }
  std::error_code ec;
  if (std::filesystem::exists(output + ".lock", ec)) {
    refuse("a run is writing it (its lock file '" + output + ".lock' exists; when no run is, delete that file)");
  }
}

PartialOutput::PartialOutput(std::string path) : path_(std::move(path)), partial_(path_ + kPartialSuffix) {}

PartialOutput::~PartialOutput() {
  if (committed_) return;
  std::error_code ec;
  std::filesystem::remove(partial_, ec);
}

void PartialOutput::commit() {
  std::filesystem::rename(partial_, path_);
  committed_ = true;
}

OutputFile::OutputFile(const std::string& command, const std::string& path, std::ostream& fallback,
                       const std::vector<std::string>& inputs)
    : path_(path) {
  if (path.empty()) {
    stream_ = &fallback;
    return;
  }
  guard_output(command, path, inputs);
  {
    std::ifstream existing(path, std::ios::binary);
    char magic[4] = {};
    if (existing && existing.read(magic, 4) && std::string(magic, 4) == "\x89HDF") {
      throw Error(command + ": refusing to write '" + path +
                  "': it is an HDF5 file (an archive?), which a table must not replace; nothing was written");
    }
  }
  partial_ = std::make_unique<PartialOutput>(path);
  file_ = std::make_unique<std::ofstream>(partial_->partial(), std::ios::out | std::ios::trunc);
  if (!*file_) throw Error("cannot write '" + partial_->partial() + "'");
  stream_ = file_.get();
}

void OutputFile::close() {
  stream_->flush();
  if (file_) {
    file_->close();
    if (!*file_) throw Error("writing '" + path_ + "' failed (disk full?)");
    partial_->commit();
  } else if (!*stream_) {
    throw Error("writing the standard output failed");
  }
}

}  // namespace simmer::posthoc
