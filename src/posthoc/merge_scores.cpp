// simmer_analyze merge, its second half: what pools the runs, re-derived from the inputs (the
// ensembles' scores with their uncertainty, /diagnostics with the verdict counts, the deep
// ensemble) and returned as the /metrics that the run's report writes too (parallel::write_metrics).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "merge_parts.hpp"
#include "simmer/core/error.hpp"
#include "simmer/ensemble/candidate.hpp"
#include "simmer/ensemble/convergence.hpp"
#include "simmer/ensemble/predictive.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/parallel/archive_writer.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/metrics.hpp"

namespace simmer::posthoc::merging {
namespace {

namespace layout = run::layout;

/// The pooled ensemble's scores on every scored set: the vote accuracy, or the mean's MSE and R²;
/// and the uncertainty scores again (issue 10) from what each run kept of them: the members' mean
/// class probabilities (averaged, weighted by members, written) or the coverage counts (summed,
/// written). Inputs without them (older archives) leave those scores out.
/// The merged ensemble's σ² by the run's rule (ensemble/predictive.hpp): the pooled mean's
/// residuals on the validation set where the runs have one, else on the training set; unknown
/// without the targets (classification, or an archive without /data/<set>/y).
ensemble::NoiseEstimate merged_noise(const io::ArchiveReader& r0, const RunArchive& run0, const PooledSets& pooled) {
  if (run0.classification) return {};
  std::size_t train = run0.sets.size(), validation = run0.sets.size();
  for (std::size_t s = 0; s < run0.sets.size(); ++s) {
    if (run0.sets[s] == layout::kTrain) train = s;
    if (run0.sets[s] == layout::kValidation) validation = s;
  }
  const bool held_out = validation < run0.sets.size() && r0.exists(layout::data_y(layout::kValidation)) &&
                        pooled.means.at(validation).mean().rows() > 0;
  const std::size_t s = held_out ? validation : train;
  if (s >= run0.sets.size() || !r0.exists(layout::data_y(run0.sets[s]))) return {};
  const auto& acc = pooled.means.at(s);
  if (acc.members() == 0) return {};
  const Matrix truth = as_matrix(r0.read_doubles(layout::data_y(run0.sets[s])), acc.mean().rows(), acc.mean().cols());
  return ensemble::noise_from_residuals(view(acc.mean()), view(truth),
                                        held_out ? ensemble::NoiseSource::validation : ensemble::NoiseSource::training);
}

/// <group>/noise_variance [output] with its source, as the run writes it (parallel::write_candidate).
void write_noise(io::ParallelFile& f, const std::string& group, const ensemble::NoiseEstimate& noise) {
  const std::string path = layout::join(group, layout::kNoiseVariance);
  f.put(path, std::vector<double>(noise.variance.data(), noise.variance.data() + noise.variance.size()),
        {noise.variance.cols()});
  f.attribute(path, layout::kNoiseSource, std::string(ensemble::kNoiseSourceNames.name(noise.source)));
}

std::vector<parallel::SetMetrics> merge_scores(const std::vector<Input>& inputs, io::ParallelFile& f,
                                               const PooledSets& pooled, ensemble::NoiseEstimate& noise_out) {
  const io::ArchiveReader& r0 = *inputs.front().reader;
  const RunArchive& run0 = inputs.front().run;
  std::vector<parallel::SetMetrics> out;
  const ensemble::NoiseEstimate noise = merged_noise(r0, run0, pooled);
  if (noise.known()) write_noise(f, layout::kEnsemble, noise);
  for (std::size_t s = 0; s < run0.sets.size(); ++s) {
    const std::string& set = run0.sets[s];
    if (!is_scored(set)) continue;
    const std::string y = layout::data_y(set);
    if (!r0.exists(y)) continue;
    const std::string g = layout::ensemble_group(set);
    const std::string probability_path = layout::join(g, layout::kProbability);
    const std::string below_path = layout::join(g, layout::kCoverageBelow);
    const std::string equal_path = layout::join(g, layout::kCoverageEqual);
    parallel::SetMetrics metrics;
    metrics.set = set;
    metrics.uncertainty = false;
    ensemble::SetScores& scores = metrics.scores;
    if (run0.classification) {
      const auto& acc = pooled.votes[s];
      const auto labels = r0.read_ints(y);
      const double accuracy = acc.members() > 0 ? ensemble::accuracy(acc.majority(), labels) : std::nan("");
      const Index rows = acc.votes().rows();
      // A per-member mean of the runs (`width` values per row), weighted by their members, written.
      const auto pool = [&](const std::string& path, Index width) {
        Matrix sum = Matrix::Zero(rows, width);
        std::int64_t n = 0;
        for (const auto& in : inputs) {
          const std::int64_t m = set_members(*in.reader, g);
          sum += static_cast<double>(m) * as_matrix(in.reader->read_doubles(path), rows, width);
          n += m;
        }
        const Matrix mean = n > 0 ? Matrix(sum / static_cast<double>(n)) : sum;
        f.put(path, std::vector<double>(mean.data(), mean.data() + mean.size()),
              width == 1 ? std::vector<std::int64_t>{rows} : std::vector<std::int64_t>{rows, width});
        return mean;
      };
      if (all_have(inputs, probability_path)) {
        const Matrix probability = pool(probability_path, run0.classes);
        scores = ensemble::score_probabilities(view(probability), labels);
        metrics.uncertainty = true;
      }
      const std::string entropy_path = layout::join(g, layout::kMemberEntropy);
      if (all_have(inputs, entropy_path)) pool(entropy_path, 1);
      scores.metric = accuracy;  // the vote's, not arg max of the mean probabilities
    } else {
      const auto& acc = pooled.means[s];
      const Matrix truth = as_matrix(r0.read_doubles(y), acc.mean().rows(), acc.mean().cols());
      const bool any = acc.members() > 0;
      const double mse = any ? ensemble::mean_squared_error(view(acc.mean()), view(truth)) : std::nan("");
      const double r2 = any ? ensemble::r_squared(view(acc.mean()), view(truth)) : std::nan("");
      if (noise.known()) {
        scores = ensemble::score_with_noise(view(acc.mean()), acc.variance(), noise.variance, view(truth));
        metrics.uncertainty = true;
        if (!pooled.components.at(s).empty()) {
          metrics.coverage = ensemble::predictive_coverage(pooled.components[s], noise, view(truth));
        }
      }
      scores.metric = mse;
      scores.r2 = r2;
      if (metrics.uncertainty && all_have(inputs, below_path) && all_have(inputs, equal_path)) {
        std::vector<std::int64_t> below, equal;
        std::int64_t members = 0;
        for (const auto& in : inputs) {
          const auto b = in.reader->read_ints(below_path);
          const auto e = in.reader->read_ints(equal_path);
          if (below.empty()) {
            below.assign(b.size(), 0);
            equal.assign(e.size(), 0);
          }
          if (b.size() != below.size() || e.size() != equal.size()) {
            throw Error("'" + in.run.path + "': " + below_path + " has an unexpected shape");
          }
          for (std::size_t i = 0; i < b.size(); ++i) {
            below[i] += b[i];
            equal[i] += e[i];
          }
          members += set_members(*in.reader, g);
        }
        f.put(below_path, below, {acc.mean().rows(), acc.mean().cols()});
        f.put(equal_path, equal, {acc.mean().rows(), acc.mean().cols()});
        ensemble::CoverageCounter counts;
        counts.restore(members, std::move(below), std::move(equal));
        auto& coverage = metrics.mean_coverage.emplace();
        for (std::size_t l = 0; l < ensemble::kCoverageLevels.size(); ++l) {
          coverage[l] = counts.coverage(ensemble::kCoverageLevels[l]);
        }
      }
    }
    out.push_back(std::move(metrics));
  }
  noise_out = noise;
  return out;
}

/// The deep ensemble of every input's Adam end points again (issue 17), from their outputs on
/// each evaluation set (/baseline/<set>/prediction, merged in input order): writes
/// /deep_ensemble and puts its scores in `m`. Inputs without one (ab initio runs, older archives)
/// leave it out.
void merge_deep_ensemble(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains,
                         parallel::Metrics& m) {
  if (!all_have(inputs, layout::kDeepEnsemble)) return;  // (before Evaluation reads the targets)
  const Evaluation ev(inputs, chains);
  const auto deep = deep_ensemble(inputs, ev);
  if (!deep) return;
  parallel::write_candidate(f, MPI_COMM_SELF, ev.shape, layout::kDeepEnsemble, &*deep);
  const ensemble::CandidateScores scores = ensemble::score(*deep, ev.scored);
  m.deep_ensemble = parallel::set_metrics(ev.scored_names, scores, ev.shape.classification);
  m.deep_ensemble_noise = scores.noise;
  m.deep_ensemble_members = deep->members;
}

/// Every member's series of the inputs' `in` group [chain, member] concatenated into `out`
/// (shorter runs padded with NaN) and their pooled rank-normalised R-hat and bulk ESS recomputed
/// over all the merged chains (NaN when an input lacks a series: the copied attributes of the
/// first input would be its alone).
void merge_member_series(const std::vector<Input>& inputs, io::ParallelFile& f, const std::string& in,
                         const std::string& out, parallel::ScaleAxes& by_chain) {
  parallel::ScaleAxes by_member;
  std::int64_t members = 0;
  for (const auto& name : layout::member_series_names()) {
    const std::string path = layout::join(in, layout::member_series(name));
    if (!all_have(inputs, path)) {
      if (inputs.front().reader->has_attribute(in, layout::series_bulk_ess(name))) {
        f.attribute(out, layout::series_bulk_ess(name), std::nan(""));
        f.attribute(out, layout::series_rank_rhat(name), std::nan(""));
      }
      continue;
    }
    ensemble::Chains pooled;
    for (const auto& input : inputs) {
      const auto shape = input.reader->dims(path);
      const auto v = input.reader->read_doubles(path);
      const auto m = static_cast<std::size_t>(shape.back());
      for (std::size_t c = 0; c < static_cast<std::size_t>(shape.front()); ++c) {
        std::vector<double> one(v.begin() + static_cast<std::ptrdiff_t>(c * m),
                                v.begin() + static_cast<std::ptrdiff_t>((c + 1) * m));
        while (!one.empty() && std::isnan(one.back())) one.pop_back();  // a stopped trajectory's padding
        pooled.push_back(std::move(one));
      }
    }
    members = parallel::write_member_series(f, out, name, pooled, by_chain, by_member);
  }
  if (!by_member.empty()) parallel::write_member_scale(f, out, members, by_member);
}

}  // namespace

std::optional<parallel::StageMetrics> merge_diagnostics(const std::vector<Input>& inputs, io::ParallelFile& f,
                                                        const std::string& in, const std::string& out,
                                                        const std::string& scores) {
  const std::string verdict_path = layout::join(in, layout::kVerdict);
  const std::string reason_path = layout::join(in, layout::kVerdictReason);
  if (!all_have(inputs, verdict_path)) return std::nullopt;
  const io::ArchiveReader& r0 = *inputs.front().reader;
  f.create_group(out);
  copy_attributes(r0, f, in);
  f.attribute(out, layout::kPooledBlockMetrics,
              std::string("not in a merged archive (the runs' block ensembles are not stored)"));
  // The trajectories of this stage: each input's (its chain scale, or all of them) after the
  // trajectories of the inputs before it.
  std::vector<double> ids;
  std::int64_t offset = 0;
  for (const auto& input : inputs) {
    const std::string scale = layout::join(in, layout::kChainAxis);
    const auto n = static_cast<std::int64_t>(input.reader->dims(verdict_path).front());
    std::vector<double> own(static_cast<std::size_t>(n));
    std::iota(own.begin(), own.end(), 0.0);
    if (input.reader->exists(scale)) own = input.reader->read_doubles(scale);
    if (static_cast<std::int64_t>(own.size()) != n)
      throw Error("'" + input.run.path + "': " + scale + " does not have one value per verdict");
    for (const double id : own) ids.push_back(id + static_cast<double>(offset));
    offset += input.run.chains;
  }
  const auto chains = static_cast<std::int64_t>(ids.size());
  std::vector<std::pair<std::string, unsigned>> by_chain;
  for (const auto& name : layout::diagnostic_fields()) {
    if (!all_have(inputs, layout::join(in, name))) continue;
    f.put(layout::join(out, name), concatenated<double>(inputs, layout::join(in, name)), {chains});
    by_chain.emplace_back(layout::join(out, name), 0U);
  }
  std::vector<std::string> verdicts, reasons;
  std::map<std::string, std::int64_t> counts;
  for (const auto& input : inputs) {
    for (const auto& v : input.reader->read_strings(verdict_path)) {
      verdicts.push_back(v);
      counts[v] += 1;
    }
    if (input.reader->exists(reason_path)) {
      for (const auto& v : input.reader->read_strings(reason_path)) reasons.push_back(v);
    }
  }
  f.put_strings(layout::join(out, layout::kVerdict), verdicts);
  if (reasons.size() == verdicts.size()) f.put_strings(layout::join(out, layout::kVerdictReason), reasons);
  parallel::StageMetrics stage;
  auto& verdict_counts = stage.verdicts.emplace();
  for (const auto& entry : ensemble::kVerdictNames.table) {
    verdict_counts[static_cast<std::size_t>(entry.value)] = counts[std::string(entry.name)];
  }
  std::vector<std::pair<std::string, unsigned>> by_block;
  std::int64_t blocks = -1;
  for (const char* split : {layout::kTrain, layout::kTest}) {
    const std::string path = layout::join(in, layout::block_metric(split));
    if (!all_have(inputs, path)) continue;
    std::vector<double> rows;
    for (const auto& input : inputs) {
      const auto shape = input.reader->dims(path);
      if (blocks < 0) blocks = shape.back();
      if (shape.back() != blocks) throw Error("'" + input.run.path + "': " + path + " has another number of blocks");
      const auto v = input.reader->read_doubles(path);
      rows.insert(rows.end(), v.begin(), v.end());
    }
    const std::string merged = layout::join(out, layout::block_metric(split));
    f.put(merged, rows, {chains, blocks});
    by_chain.emplace_back(merged, 0U);
    by_block.emplace_back(merged, 1U);
  }
  merge_member_series(inputs, f, in, out, by_chain);
  const std::string chain_scale = layout::join(out, layout::kChainAxis);
  f.put(chain_scale, ids, {chains});
  f.attach_scale(chain_scale, layout::kChainAxis, by_chain);
  if (blocks > 0) {
    const std::string first_step = layout::join(in, layout::kBlockFirstStep);
    if (r0.exists(first_step)) {
      f.put(layout::join(out, layout::kBlockFirstStep), r0.read_doubles(first_step), {blocks});
      by_block.emplace_back(layout::join(out, layout::kBlockFirstStep), 0U);
    }
    std::vector<double> block_ids(static_cast<std::size_t>(blocks));
    std::iota(block_ids.begin(), block_ids.end(), 0.0);
    const std::string block_scale = layout::join(out, layout::kBlockAxis);
    f.put(block_scale, block_ids, {blocks});
    f.attach_scale(block_scale, layout::kBlockAxis, by_block);
  }
  // The loss rise against equipartition: means over all trajectories again.
  const std::string member_loss = layout::join(in, layout::kMeanMemberLoss);
  const std::string start_loss = layout::join(in, layout::kStartLoss);
  if (all_have(inputs, member_loss) && all_have(inputs, start_loss)) {
    const auto member = concatenated<double>(inputs, member_loss);
    const auto start = concatenated<double>(inputs, start_loss);
    std::vector<double> rise(member.size());
    for (std::size_t i = 0; i < rise.size(); ++i) rise[i] = member[i] - start[i];
    stage.observed_rise = parallel::finite_mean_sd(rise).first;
  }
  if (r0.has_attribute(scores, layout::kHarmonicLossRise))
    stage.harmonic_rise = r0.attribute_real(scores, layout::kHarmonicLossRise);
  // The stiff modes' rise is T/2 x the mean eigenvalue count over trajectories: the inputs'
  // values weighted by their trajectories.
  const char* stiff = layout::kHarmonicLossRiseStiffModes;
  if (std::all_of(inputs.begin(), inputs.end(),
                  [&](const Input& input) { return input.reader->has_attribute(scores, stiff); })) {
    double sum = 0.0;
    std::int64_t n = 0;
    for (const auto& input : inputs) {
      const auto trajectories = static_cast<std::int64_t>(input.reader->dims(verdict_path).front());
      sum += static_cast<double>(trajectories) * input.reader->attribute_real(scores, stiff);
      n += trajectories;
    }
    stage.stiff_rise = n > 0 ? sum / static_cast<double>(n) : std::nan("");
  }
  return stage;
}

void copy_attributes(const io::ArchiveReader& r, io::ParallelFile& f, const std::string& object) {
  for (const auto& a : r.attributes(object)) {
    if (a.name == "CLASS" || a.name == "NAME" || a.name == "_Netcdf4Dimid") continue;  // dimension-scale bookkeeping
    if (a.name == io::kContentDigest) continue;  // the writer's own, of what it wrote here
    switch (a.kind) {
      case io::AttributeValue::Kind::text:
        f.attribute(object, a.name, a.text);
        break;
      case io::AttributeValue::Kind::integer:
        f.attribute(object, a.name, a.integer);
        break;
      case io::AttributeValue::Kind::real:
        f.attribute(object, a.name, a.real);
        break;
    }
  }
}

Evaluation::Evaluation(const std::vector<Input>& inputs, std::int64_t chains) {
  const io::ArchiveReader& r0 = *inputs.front().reader;
  const RunArchive& run0 = inputs.front().run;
  shape.chains = chains;
  shape.classification = run0.classification;
  shape.classes = run0.classes;
  shape.outputs = run0.outputs;
  for (const auto& set : run0.sets) {
    shape.sets.push_back(set);
    const std::string x = layout::data_x(set);
    const std::string g = layout::ensemble_group(set);
    shape.rows.push_back(r0.exists(x)
                             ? r0.dims(x).front()
                             : r0.dims(layout::join(g, run0.classification ? layout::kVotes : layout::kMean)).front());
  }
  shape.scored = static_cast<std::size_t>(std::count_if(run0.sets.begin(), run0.sets.end(), is_scored));
  labels.resize(shape.scored);
  truth.resize(shape.scored);
  for (std::size_t s = 0; s < shape.scored; ++s) {
    scored_names.push_back(shape.sets[s]);
    const std::string y = layout::data_y(shape.sets[s]);
    if (run0.classification) {
      labels[s] = r0.read_ints(y);
      scored.push_back({nullptr, &labels[s]});
    } else {
      truth[s] = as_matrix(r0.read_doubles(y), shape.rows[s], run0.outputs);
      scored.push_back({&truth[s], nullptr});
    }
  }
}

std::optional<ensemble::Candidate> deep_ensemble(const std::vector<Input>& inputs, const Evaluation& ev) {
  if (!all_have(inputs, layout::kDeepEnsemble)) return std::nullopt;
  for (const auto& set : ev.shape.sets) {
    if (!all_have(inputs, layout::baseline_prediction(set))) return std::nullopt;
  }
  const RunArchive& run0 = inputs.front().run;
  ensemble::DeepEnsembleBuilder deep(run0.classification, run0.classes, run0.outputs, ev.shape.rows, ev.scored);
  for (const auto& in : inputs) {
    for (std::int64_t c = 0; c < in.run.chains; ++c) {
      for (std::size_t s = 0; s < ev.shape.sets.size(); ++s) {
        const auto values = in.reader->read_slab(layout::baseline_prediction(ev.shape.sets[s]), c);
        deep.add(s, view(as_matrix(values, ev.shape.rows[s], run0.outputs)));
      }
      deep.done();
    }
  }
  return deep.candidate();
}

std::vector<parallel::Metrics::BaselineColumn> baseline_columns(const std::vector<Input>& inputs) {
  const io::ArchiveReader& r0 = *inputs.front().reader;
  const RunArchive& run0 = inputs.front().run;
  std::vector<parallel::Metrics::BaselineColumn> out;
  for (const auto& set : run0.sets) {
    if (!is_scored(set)) continue;
    for (const auto& field : layout::score_fields(run0.classification)) {
      const std::string column = layout::baseline_score(set, field.first);
      if (r0.exists(column)) out.push_back({set, field.first, concatenated<double>(inputs, column)});
    }
  }
  return out;
}

std::vector<ensemble::MeanAccumulator> merge_components(const std::vector<Input>& inputs, io::ParallelFile& f,
                                                        const std::string& group, Index rows, Index outputs,
                                                        std::int64_t chains) {
  std::vector<ensemble::MeanAccumulator> out;
  for (const auto& in : inputs) {
    auto parts = read_components(*in.reader, group, rows, outputs);
    if (!parts) return {};
    if (static_cast<std::int64_t>(parts->size()) != in.run.chains) {
      throw Error("'" + in.run.path + "': " + layout::join(group, layout::kTrajectoryMembers) + " has " +
                  std::to_string(parts->size()) + " trajectories, not " + std::to_string(in.run.chains));
    }
    out.insert(out.end(), parts->begin(), parts->end());
  }
  parallel::EnsembleLayout shape;
  shape.outputs = outputs;
  shape.chains = chains;
  parallel::write_components(f, group, rows, shape, &out);
  return out;
}

parallel::Metrics merged_metrics(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains,
                                 const PooledSets& pooled) {
  const io::ArchiveReader& r0 = *inputs.front().reader;
  const RunArchive& run0 = inputs.front().run;
  parallel::Metrics m;
  m.classification = run0.classification;
  m.baseline = baseline_columns(inputs);  // the columns the first archive has
  m.ensemble = merge_scores(inputs, f, pooled, m.ensemble_noise);
  m.stage = merge_diagnostics(inputs, f, layout::kDiagnostics, layout::kDiagnostics, layout::kMetrics);
  const auto first = [&](const char* name) -> std::optional<double> {
    if (!r0.has_attribute(layout::kMetrics, name)) return std::nullopt;
    return r0.attribute_real(layout::kMetrics, name);
  };
  m.bayes_temperature = first(layout::kBayesTemperature);
  m.temperature_over_bayes = first(layout::kTemperatureOverBayes);
  merge_deep_ensemble(inputs, f, chains, m);
  for (const auto& in : inputs) m.members += in.reader->attribute_integer(layout::kMetrics, layout::kMembers);
  return m;
}

}  // namespace simmer::posthoc::merging
