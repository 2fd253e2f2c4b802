// simmer_analyze merge, its second half: what pools the runs, re-derived from the inputs (the
// ensembles' scores with their uncertainty, /diagnostics with the verdict counts, the deep
// ensemble) and returned as the /metrics that the run's report writes too (mpi::write_metrics).
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
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/mpi/archive_writer.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/metrics.hpp"

namespace simmer::analyze::merging {
namespace {

/// The pooled ensemble's scores on every scored set: the vote accuracy, or the mean's MSE and R²;
/// and the uncertainty scores again (issue 10) from what each run kept of them: the members' mean
/// class probabilities (averaged, weighted by members, written) or the coverage counts (summed,
/// written). Inputs without them (older archives) leave those scores out.
std::vector<mpi::SetMetrics> merge_scores(const std::vector<Input>& inputs, io::ParallelFile& f,
                                          const PooledSets& pooled) {
  const io::ArchiveReader& r0 = *inputs.front().reader;
  const RunArchive& run0 = inputs.front().run;
  std::vector<mpi::SetMetrics> out;
  Matrix noise;
  for (std::size_t s = 0; s < run0.sets.size(); ++s) {
    const std::string& set = run0.sets[s];
    if (!is_scored(set)) continue;
    const std::string y = "/data/" + set + "/y";
    if (!r0.exists(y)) continue;
    const std::string g = "/ensemble/" + set;
    mpi::SetMetrics metrics;
    metrics.set = set;
    metrics.uncertainty = false;
    ensemble::SetScores& scores = metrics.scores;
    if (run0.classification) {
      const auto& acc = pooled.votes[s];
      const auto labels = r0.read_ints(y);
      const double accuracy = acc.members() > 0 ? ensemble::accuracy(acc.majority(), labels) : std::nan("");
      if (all_have(inputs, g + "/probability")) {
        const Index rows = acc.votes().rows();
        Matrix sum = Matrix::Zero(rows, run0.classes);
        std::int64_t n = 0;
        for (const auto& in : inputs) {
          const std::int64_t m = set_members(*in.reader, g);
          sum += static_cast<double>(m) * as_matrix(in.reader->read_doubles(g + "/probability"), rows, run0.classes);
          n += m;
        }
        const Matrix probability = n > 0 ? Matrix(sum / static_cast<double>(n)) : sum;
        f.put(g + "/probability", std::vector<double>(probability.data(), probability.data() + probability.size()),
              {rows, run0.classes});
        scores = ensemble::score_probabilities(view(probability), labels);
        metrics.uncertainty = true;
      }
      scores.metric = accuracy;  // the vote's, not arg max of the mean probabilities
    } else {
      const auto& acc = pooled.means[s];
      const Matrix truth = as_matrix(r0.read_doubles(y), acc.mean().rows(), acc.mean().cols());
      const bool any = acc.members() > 0;
      const double mse = any ? ensemble::mean_squared_error(view(acc.mean()), view(truth)) : std::nan("");
      const double r2 = any ? ensemble::r_squared(view(acc.mean()), view(truth)) : std::nan("");
      if (set == "train") noise = ensemble::residual_variance(view(acc.mean()), view(truth));
      if (noise.size() != 0) {
        scores = ensemble::score_with_noise(view(acc.mean()), acc.variance(), noise, view(truth));
        metrics.uncertainty = true;
      }
      scores.metric = mse;
      scores.r2 = r2;
      if (metrics.uncertainty && all_have(inputs, g + "/coverage_below") && all_have(inputs, g + "/coverage_equal")) {
        std::vector<std::int64_t> below, equal;
        std::int64_t members = 0;
        for (const auto& in : inputs) {
          const auto b = in.reader->read_ints(g + "/coverage_below");
          const auto e = in.reader->read_ints(g + "/coverage_equal");
          if (below.empty()) {
            below.assign(b.size(), 0);
            equal.assign(e.size(), 0);
          }
          if (b.size() != below.size() || e.size() != equal.size()) {
            throw Error("'" + in.run.path + "': " + g + "/coverage_below has an unexpected shape");
          }
          for (std::size_t i = 0; i < b.size(); ++i) {
            below[i] += b[i];
            equal[i] += e[i];
          }
          members += set_members(*in.reader, g);
        }
        f.put(g + "/coverage_below", below, {acc.mean().rows(), acc.mean().cols()});
        f.put(g + "/coverage_equal", equal, {acc.mean().rows(), acc.mean().cols()});
        ensemble::CoverageCounter counts;
        counts.restore(members, std::move(below), std::move(equal));
        auto& coverage = metrics.coverage.emplace();
        for (std::size_t l = 0; l < ensemble::kCoverageLevels.size(); ++l) {
          coverage[l] = counts.coverage(ensemble::kCoverageLevels[l]);
        }
      }
    }
    out.push_back(std::move(metrics));
  }
  return out;
}

/// The deep ensemble of every input's Adam end points again (issue 17), from their outputs on
/// each evaluation set (/baseline/<set>/prediction, merged in input order): writes
/// /deep_ensemble and puts its scores in `m`. Inputs without one (ab initio runs, older archives)
/// leave it out.
void merge_deep_ensemble(const std::vector<Input>& inputs, io::ParallelFile& f, const RunArchive& run0,
                         mpi::Metrics& m) {
  if (!all_have(inputs, "/deep_ensemble")) return;
  const io::ArchiveReader& r0 = *inputs.front().reader;
  mpi::EnsembleLayout layout;
  layout.classification = run0.classification;
  layout.classes = run0.classes;
  layout.outputs = run0.outputs;
  std::vector<std::vector<std::int64_t>> labels;
  std::vector<Matrix> truth;
  for (const auto& set : run0.sets) {
    if (!all_have(inputs, "/baseline/" + set + "/prediction")) return;
    layout.sets.push_back(set);
    layout.rows.push_back(r0.dims("/baseline/" + set + "/prediction")[1]);
  }
  layout.scored = static_cast<std::size_t>(std::count_if(run0.sets.begin(), run0.sets.end(), is_scored));
  labels.resize(layout.scored);
  truth.resize(layout.scored);
  std::vector<ensemble::ScoredSet> scored;
  for (std::size_t s = 0; s < layout.scored; ++s) {
    const std::string y = "/data/" + layout.sets[s] + "/y";
    if (run0.classification) {
      labels[s] = r0.read_ints(y);
      scored.push_back({nullptr, &labels[s]});
    } else {
      truth[s] = as_matrix(r0.read_doubles(y), layout.rows[s], run0.outputs);
      scored.push_back({&truth[s], nullptr});
    }
  }
  ensemble::DeepEnsembleBuilder deep(run0.classification, run0.classes, run0.outputs, layout.rows, scored);
  for (const auto& in : inputs) {
    for (std::int64_t c = 0; c < in.run.chains; ++c) {
      for (std::size_t s = 0; s < layout.sets.size(); ++s) {
        const auto values = in.reader->read_slab("/baseline/" + layout.sets[s] + "/prediction", c);
        deep.add(s, view(as_matrix(values, layout.rows[s], run0.outputs)));
      }
      deep.done();
    }
  }
  mpi::write_candidate(f, MPI_COMM_SELF, layout, "/deep_ensemble", &deep.candidate());
  const ensemble::CandidateScores scores = ensemble::score(deep.candidate(), scored);
  m.deep_ensemble = mpi::set_metrics(layout.sets, scores.sets, scores.coverage, run0.classification);
  m.deep_ensemble_members = deep.candidate().members;
}

/// /diagnostics concatenated in input order (each trajectory's numbers are its own), and in `m`
/// the verdict counts, loss rises and T's reading. The pooled per-block metrics need the runs'
/// block ensembles, which archives do not keep: a merged archive has none.
void merge_diagnostics(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains, mpi::Metrics& m) {
  if (!all_have(inputs, "/diagnostics/verdict")) return;
  const io::ArchiveReader& r0 = *inputs.front().reader;
  f.create_group("/diagnostics");
  copy_attributes(r0, f, "/diagnostics");
  f.attribute("/diagnostics", "pooled_block_metrics",
              std::string("not in a merged archive (the runs' block ensembles are not stored)"));
  std::vector<std::pair<std::string, unsigned>> by_chain;
  for (const auto& name : run::layout::diagnostic_fields()) {
    const std::string path = "/diagnostics/" + name;
    if (!all_have(inputs, path)) continue;
    f.put(path, concatenated<double>(inputs, path), {chains});
    by_chain.emplace_back(path, 0U);
  }
  std::vector<std::string> verdicts, reasons;
  std::map<std::string, std::int64_t> counts;
  for (const auto& in : inputs) {
    for (const auto& v : in.reader->read_strings("/diagnostics/verdict")) {
      verdicts.push_back(v);
      counts[v] += 1;
    }
    if (in.reader->exists("/diagnostics/verdict_reason")) {
      for (const auto& v : in.reader->read_strings("/diagnostics/verdict_reason")) reasons.push_back(v);
    }
  }
  f.put_strings("/diagnostics/verdict", verdicts);
  if (reasons.size() == verdicts.size()) f.put_strings("/diagnostics/verdict_reason", reasons);
  mpi::StageMetrics& stage = m.stage.emplace();
  auto& verdict_counts = stage.verdicts.emplace();
  for (const auto& entry : ensemble::kVerdictNames.table) {
    verdict_counts[static_cast<std::size_t>(entry.value)] = counts[std::string(entry.name)];
  }
  std::vector<std::pair<std::string, unsigned>> by_block;
  std::int64_t blocks = -1;
  for (const char* split : {"train", "test"}) {
    const std::string path = std::string("/diagnostics/block_") + split + "_metric";
    if (!all_have(inputs, path)) continue;
    std::vector<double> rows;
    for (const auto& in : inputs) {
      const auto shape = in.reader->dims(path);
      if (blocks < 0) blocks = shape.back();
      if (shape.back() != blocks) throw Error("'" + in.run.path + "': " + path + " has another number of blocks");
      const auto v = in.reader->read_doubles(path);
      rows.insert(rows.end(), v.begin(), v.end());
    }
    f.put(path, rows, {chains, blocks});
    by_chain.emplace_back(path, 0U);
    by_block.emplace_back(path, 1U);
  }
  std::vector<double> ids(static_cast<std::size_t>(chains));
  std::iota(ids.begin(), ids.end(), 0.0);
  f.put("/diagnostics/chain", ids, {chains});
  f.attach_scale("/diagnostics/chain", "chain", by_chain);
  if (blocks > 0) {
    if (r0.exists("/diagnostics/block_first_step")) {
      f.put("/diagnostics/block_first_step", r0.read_doubles("/diagnostics/block_first_step"), {blocks});
      by_block.emplace_back("/diagnostics/block_first_step", 0U);
    }
    std::vector<double> block_ids(static_cast<std::size_t>(blocks));
    std::iota(block_ids.begin(), block_ids.end(), 0.0);
    f.put("/diagnostics/block", block_ids, {blocks});
    f.attach_scale("/diagnostics/block", "block", by_block);
  }
  // The loss rise against equipartition: means over all trajectories again.
  namespace layout = run::layout;
  if (all_have(inputs, "/diagnostics/mean_member_loss") && all_have(inputs, "/diagnostics/start_loss")) {
    const auto member = concatenated<double>(inputs, "/diagnostics/mean_member_loss");
    const auto start = concatenated<double>(inputs, "/diagnostics/start_loss");
    std::vector<double> rise(member.size());
    for (std::size_t i = 0; i < rise.size(); ++i) rise[i] = member[i] - start[i];
    stage.observed_rise = mpi::finite_mean_sd(rise).first;
  }
  const auto first = [&](const char* name) -> std::optional<double> {
    if (!r0.has_attribute(layout::kMetrics, name)) return std::nullopt;
    return r0.attribute_real(layout::kMetrics, name);
  };
  stage.harmonic_rise = first(layout::kHarmonicLossRise);
  m.bayes_temperature = first(layout::kBayesTemperature);
  m.temperature_over_bayes = first(layout::kTemperatureOverBayes);
  // The stiff modes' rise is T/2 x the mean eigenvalue count over trajectories: the inputs'
  // values weighted by their trajectories.
  const char* stiff = layout::kHarmonicLossRiseStiffModes;
  if (std::all_of(inputs.begin(), inputs.end(),
                  [&](const Input& in) { return in.reader->has_attribute(layout::kMetrics, stiff); })) {
    double sum = 0.0;
    for (const auto& in : inputs) {
      sum += static_cast<double>(in.run.chains) * in.reader->attribute_real(layout::kMetrics, stiff);
    }
    stage.stiff_rise = sum / static_cast<double>(chains);
  }
}

}  // namespace

void copy_attributes(const io::ArchiveReader& r, io::ParallelFile& f, const std::string& object) {
  for (const auto& a : r.attributes(object)) {
    if (a.name == "CLASS" || a.name == "NAME" || a.name == "_Netcdf4Dimid") continue;  // dimension-scale bookkeeping
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

mpi::Metrics merged_metrics(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains,
                            const PooledSets& pooled) {
  const io::ArchiveReader& r0 = *inputs.front().reader;
  const RunArchive& run0 = inputs.front().run;
  mpi::Metrics m;
  m.classification = run0.classification;
  // The baselines' scores per trajectory, concatenated (the columns the first archive has).
  for (const auto& set : run0.sets) {
    if (!is_scored(set)) continue;
    for (const auto& field : run::layout::score_fields(run0.classification)) {
      const std::string column = "/baseline/" + run::layout::baseline_column(set, field.first);
      if (r0.exists(column)) m.baseline.push_back({set, field.first, concatenated<double>(inputs, column)});
    }
  }
  m.ensemble = merge_scores(inputs, f, pooled);
  merge_diagnostics(inputs, f, chains, m);
  merge_deep_ensemble(inputs, f, run0, m);
  for (const auto& in : inputs) m.members += in.reader->attribute_integer(run::layout::kMetrics, run::layout::kMembers);
  return m;
}

}  // namespace simmer::analyze::merging
