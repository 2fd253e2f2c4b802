// simmer_analyze merge of temperature-ladder runs (simmer.ladder): each rung's members pooled
// across the runs into one candidate, every candidate scored again, and the run's choice made
// again on the pooled validation rows by the rule the runs' configuration names
// (parallel::choose, the run's own); then /ladder, /ensemble (the candidate chosen),
// /diagnostics (the chosen rung's trajectories), /selection and /metrics written by the run's
// writers. What one run with all the trajectories would report, except the per-block pooled
// metrics (the runs' block ensembles are not stored).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "merge_parts.hpp"
#include "simmer/core/error.hpp"
#include "simmer/ensemble/candidate.hpp"
#include "simmer/parallel/archive_writer.hpp"
#include "simmer/parallel/metrics_writer.hpp"
#include "simmer/parallel/report.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/metrics.hpp"

namespace simmer::posthoc::merging {
namespace {

namespace layout = run::layout;
using Votes = ensemble::VoteAccumulator::Votes;

std::int64_t rungs(const Input& in) { return static_cast<std::int64_t>(in.run.config.simmer.ladder.rungs.size()); }

bool parallel_rungs(const Input& in) { return in.run.config.simmer.ladder.mode == run::LadderMode::parallel; }

/// Rung k's temperature in loss units as the run wrote it (/ladder/rung_<k>@temperature).
double rung_temperature(const Input& in, std::int64_t k) {
  return in.reader->attribute_real(layout::ladder_group(layout::rung_name(k)), layout::kTemperature);
}

/// `group`'s ensemble (/ladder/rung_<k>) pooled over every input: votes add, the members' mean
/// probabilities and entropies average weighted by members, means and variances combine by
/// Chan's formula, coverage counts add, and the trajectories' mixture components follow each
/// other in input order; σ² by the run's rule on the pooled mean.
ensemble::Candidate pooled_candidate(const std::vector<Input>& inputs, const Evaluation& ev, const std::string& group,
                                     const std::string& name, double temperature) {
  const parallel::EnsembleLayout& l = ev.shape;
  ensemble::Candidate c;
  c.name = name;
  c.temperature = temperature;
  c.classification = l.classification;
  const auto matrix = [&](const Input& in, const std::string& path, Index rows, Index cols) {
    if (!in.reader->exists(path)) {
      throw Error("merge: '" + in.run.path + "': " + path +
                  " is missing (a ladder archive from before it cannot be merged; rerun it)");
    }
    return as_matrix(in.reader->read_doubles(path), rows, cols);
  };
  for (std::size_t s = 0; s < l.sets.size(); ++s) {
    const std::string g = layout::join(group, l.sets[s]);
    const Index rows = l.rows[s];
    const bool scored = s < l.scored;
    if (l.classification) {
      ensemble::VoteAccumulator votes(rows, l.classes);
      Matrix probability = Matrix::Zero(rows, l.classes), entropy = Matrix::Zero(rows, 1);
      for (const auto& in : inputs) {
        const std::int64_t n = set_members(*in.reader, g);
        const auto v = in.reader->read_ints(layout::join(g, layout::kVotes));
        if (static_cast<Index>(v.size()) != rows * l.classes)
          throw Error("merge: '" + in.run.path + "': " + layout::join(g, layout::kVotes) + " has an unexpected shape");
        votes.add_votes(Eigen::Map<const Votes>(v.data(), rows, l.classes), n);
        if (scored) {
          probability += static_cast<double>(n) * matrix(in, layout::join(g, layout::kProbability), rows, l.classes);
          entropy += static_cast<double>(n) * matrix(in, layout::join(g, layout::kMemberEntropy), rows, 1);
        }
      }
      if (scored) {
        const double n = static_cast<double>(std::max<std::int64_t>(votes.members(), 1));
        c.probability.push_back(probability / n);
        c.member_entropy.push_back(entropy / n);
      }
      c.votes.push_back(std::move(votes));
    } else {
      ensemble::MeanAccumulator means(rows, l.outputs);
      std::vector<std::int64_t> below, equal;
      std::vector<ensemble::MeanAccumulator> components;
      for (const auto& in : inputs) {
        const std::int64_t n = set_members(*in.reader, g);
        const Matrix mean = matrix(in, layout::join(g, layout::kMean), rows, l.outputs);
        const Matrix variance = matrix(in, layout::join(g, layout::kVariance), rows, l.outputs);
        means.merge(n, mean, variance * static_cast<double>(std::max<std::int64_t>(n - 1, 0)));
        auto parts = read_components(*in.reader, g, rows, l.outputs);
        if (!parts || static_cast<std::int64_t>(parts->size()) != in.run.chains) {
          throw Error("merge: '" + in.run.path + "': " + layout::join(g, layout::kTrajectoryMembers) +
                      " does not hold one mixture component per trajectory");
        }
        components.insert(components.end(), parts->begin(), parts->end());
        if (!scored) continue;
        const auto b = in.reader->read_ints(layout::join(g, layout::kCoverageBelow));
        const auto e = in.reader->read_ints(layout::join(g, layout::kCoverageEqual));
        if (below.empty()) {
          below.assign(b.size(), 0);
          equal.assign(e.size(), 0);
        }
        if (b.size() != below.size() || e.size() != equal.size() || static_cast<Index>(b.size()) != rows * l.outputs) {
          throw Error("merge: '" + in.run.path + "': " + layout::join(g, layout::kCoverageBelow) +
                      " has an unexpected shape");
        }
        for (std::size_t i = 0; i < b.size(); ++i) {
          below[i] += b[i];
          equal[i] += e[i];
        }
      }
      if (scored) {
        ensemble::CoverageCounter counts;
        counts.restore(means.members(), std::move(below), std::move(equal));
        c.coverage.push_back(std::move(counts));
      }
      c.means.push_back(std::move(means));
      c.components.push_back(std::move(components));
    }
  }
  c.members = l.classification ? c.votes.front().members() : c.means.front().members();
  if (!l.classification && c.members > 0) c.noise = ensemble::estimate_noise(c, ev.scored);
  return c;
}

/// /ladder's replica-exchange log (parallel rungs with simmer.exchange_every > 0), pooled: the
/// proposals and acceptances per rung pair add, and the per-trajectory records follow each
/// other in input order (the configurations renumbered with their trajectories).
void merge_exchange(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains) {
  const io::ArchiveReader& r0 = *inputs.front().reader;
  if (!all_have(inputs, layout::kExchangeProposed)) return;
  std::vector<std::int64_t> proposed, accepted;
  for (const auto& in : inputs) {
    const auto p = in.reader->read_ints(layout::kExchangeProposed);
    const auto a = in.reader->read_ints(layout::kExchangeAccepted);
    if (proposed.empty()) {
      proposed.assign(p.size(), 0);
      accepted.assign(a.size(), 0);
    }
    if (p.size() != proposed.size() || a.size() != proposed.size())
      throw Error("merge: '" + in.run.path + "': " + layout::kExchangeProposed + " has another number of rung pairs");
    for (std::size_t k = 0; k < p.size(); ++k) {
      proposed[k] += p[k];
      accepted[k] += a[k];
    }
  }
  std::vector<double> rate;
  for (std::size_t k = 0; k < proposed.size(); ++k) {
    rate.push_back(proposed[k] > 0 ? static_cast<double>(accepted[k]) / static_cast<double>(proposed[k])
                                   : std::nan(""));
  }
  const auto pairs = static_cast<std::int64_t>(proposed.size());
  f.put(layout::kExchangeProposed, proposed, {pairs});
  f.put(layout::kExchangeAccepted, accepted, {pairs});
  f.put(layout::kExchangeAcceptance, rate, {pairs});
  f.put(layout::kRoundTrips, concatenated<std::int64_t>(inputs, layout::kRoundTrips), {chains});
  std::vector<std::int64_t> held;
  std::int64_t offset = 0;
  for (const auto& in : inputs) {
    for (const auto c : in.reader->read_ints(layout::kConfigurationHeld)) held.push_back(c + offset);
    offset += in.run.chains;
  }
  f.put(layout::kConfigurationHeld, held, {chains});
  for (const char* path : {layout::kExchangeLoss, layout::kExchangeSwapped}) {
    if (!all_have(inputs, path)) continue;
    const std::int64_t rounds = r0.dims(path).front();
    std::vector<double> rows(static_cast<std::size_t>(rounds * chains));
    offset = 0;
    for (const auto& in : inputs) {
      if (in.reader->dims(path) != std::vector<std::int64_t>{rounds, in.run.chains})
        throw Error("merge: '" + in.run.path + "': " + path + " has another number of exchange rounds");
      const auto v = in.reader->read_doubles(path);
      for (std::int64_t r = 0; r < rounds; ++r) {
        std::copy_n(v.begin() + r * in.run.chains, in.run.chains, rows.begin() + r * chains + offset);
      }
      offset += in.run.chains;
    }
    if (r0.type(path) == io::Type::i64) {
      f.put(path, std::vector<std::int64_t>(rows.begin(), rows.end()), {rounds, chains});
    } else {
      f.put(path, rows, {rounds, chains});
    }
  }
  for (const char* path :
       {layout::kExchangeProposed, layout::kExchangeAccepted, layout::kExchangeAcceptance, layout::kRoundTrips,
        layout::kConfigurationHeld, layout::kExchangeLoss, layout::kExchangeSwapped}) {
    if (f.exists(path)) copy_attributes(r0, f, path);
  }
}

}  // namespace

void check_ladders(const Input& first, const Input& other) {
  const std::string pair = "'" + first.run.path + "' and '" + other.run.path + "'";
  const std::int64_t K = rungs(first);
  if (K != rungs(other)) throw Error("cannot merge " + pair + ": their ladders have different rung counts");
  // (Parallel rungs: each run's trajectory count is a multiple of K, which simmer_mpi requires,
  // so trajectory i of the merged archive still simmers rung i mod K.)
  for (std::int64_t k = 0; k < K; ++k) {
    const double a = rung_temperature(first, k), b = rung_temperature(other, k);
    if (a != b) {
      char line[160];
      std::snprintf(line, sizeof line, "rung_%lld's temperature is %.17g in one and %.17g in the other",
                    static_cast<long long>(k), a, b);
      throw Error("cannot merge " + pair + ": " + line +
                  " (loss units: each run set its ladder from its own T_Bayes, e.g. with simmer.noise_sd = auto); "
                  "only ladders at the same temperatures pool");
    }
  }
}

parallel::Metrics write_ladder(const std::vector<Input>& inputs, io::ParallelFile& f, std::int64_t chains) {
  const Input& first = inputs.front();
  const io::ArchiveReader& r0 = *first.reader;
  const cli::Config& config = first.run.config;
  const Evaluation ev(inputs, chains);
  const std::int64_t K = rungs(first);

  // The candidates in the run's order: the deep ensemble (retrofit runs), then the rungs.
  std::vector<ensemble::Candidate> candidates;
  if (auto deep = deep_ensemble(inputs, ev)) candidates.push_back(std::move(*deep));
  const std::size_t first_rung = candidates.size();
  for (std::int64_t k = 0; k < K; ++k) {
    const std::string name = layout::rung_name(k);
    candidates.push_back(pooled_candidate(inputs, ev, layout::ladder_group(name), name, rung_temperature(first, k)));
  }
  parallel::SelectionPolicy policy;
  policy.stages = K;
  policy.ladder = true;
  policy.parallel_rungs = parallel_rungs(first);
  policy.has_validation = ev.scored.size() > run::Problem::kValidation && ev.scored.back().rows() > 0;
  policy.selection = config.ensemble.selection;
  const parallel::RunReport report = parallel::choose(policy, candidates, ev.scored);
  const auto& chosen = report.chosen();
  const auto metrics_of = [&](const parallel::EnsembleReport& e) {
    ensemble::CandidateScores s;
    s.sets = e.scores;
    s.coverage = e.coverage;
    s.mean_coverage = e.mean_coverage;
    s.noise = e.noise;
    return parallel::set_metrics(ev.scored_names, s, ev.shape.classification);
  };

  // /ladder: its attributes (the same in every input), each rung's ensemble, scores and
  // diagnostics, and the exchange log.
  f.create_group(layout::kLadder);
  copy_attributes(r0, f, layout::kLadder);
  std::vector<parallel::StageMetrics> stages;
  for (std::int64_t k = 0; k < K; ++k) {
    const auto i = first_rung + static_cast<std::size_t>(k);
    const std::string name = layout::rung_name(k), g = layout::ladder_group(name);
    parallel::write_candidate(f, MPI_COMM_SELF, ev.shape, g, &candidates[i]);
    f.attribute(g, layout::kTemperature, candidates[i].temperature);
    f.attribute(g, layout::kTemperatureOverBayes, r0.attribute_real(g, layout::kTemperatureOverBayes));
    const parallel::EnsembleReport& e = report.candidates.at(i);
    parallel::write_set_metrics(f, g, layout::kEnsemblePrefix, ev.shape.classification, metrics_of(e), e.noise);
    f.attribute(g, layout::kMembers, e.members);
    const std::string d = layout::ladder_diagnostics(name);
    stages.push_back(merge_diagnostics(inputs, f, d, d, g).value_or(parallel::StageMetrics{}));
    parallel::write_stage_metrics(f, g, stages.back());
  }
  merge_exchange(inputs, f, chains);

  // The deep ensemble, the stacked candidates and the chosen candidate, as the run writes them.
  if (first_rung > 0) parallel::write_candidate(f, MPI_COMM_SELF, ev.shape, layout::kDeepEnsemble, &candidates[0]);
  if (report.stacked) {
    const parallel::EnsembleReport& e = report.candidates.back();
    parallel::write_candidate(f, MPI_COMM_SELF, ev.shape, layout::kStacked, &candidates.back());
    parallel::write_set_metrics(f, layout::kStacked, layout::kEnsemblePrefix, ev.shape.classification, metrics_of(e),
                                e.noise);
    f.attribute(layout::kStacked, layout::kMembers, e.members);
  }
  parallel::write_candidate(f, MPI_COMM_SELF, ev.shape, layout::kEnsemble,
                            &candidates.at(static_cast<std::size_t>(report.selected)));

  parallel::Metrics m;
  m.classification = ev.shape.classification;
  m.baseline = baseline_columns(inputs);
  m.ensemble = metrics_of(chosen);
  m.ensemble_noise = chosen.noise;
  m.members = chosen.members;
  m.ensemble_name = chosen.name;
  if (const parallel::EnsembleReport* deep = report.deep()) {
    m.deep_ensemble = metrics_of(*deep);
    m.deep_ensemble_noise = deep->noise;
    m.deep_ensemble_members = deep->members;
  }
  if (report.diagnostics_stage >= 0) {
    const std::string name = layout::rung_name(report.diagnostics_stage);
    m.stage = merge_diagnostics(inputs, f, layout::ladder_diagnostics(name), layout::kDiagnostics,
                                layout::ladder_group(name));
  }
  const auto attribute = [&](const char* name) -> std::optional<double> {
    if (!r0.has_attribute(layout::kMetrics, name)) return std::nullopt;
    return r0.attribute_real(layout::kMetrics, name);
  };
  m.bayes_temperature = attribute(layout::kBayesTemperature);
  if (m.bayes_temperature) m.temperature_over_bayes = chosen.temperature / *m.bayes_temperature;
  if (!m.classification && r0.has_attribute(layout::kMetrics, layout::kNoiseSd)) {
    m.noise_sd = attribute(layout::kNoiseSd);
    m.noise_sd_source = r0.attribute_text(layout::kMetrics, layout::kNoiseSdSource);
  }

  parallel::SelectionTable table;
  table.policy = policy;
  table.classification = m.classification;
  table.bayes_temperature = m.bayes_temperature.value_or(std::nan(""));
  table.scored_sets = ev.scored_names;
  table.validation_rows = policy.has_validation ? ev.scored.back().rows() : 0;
  for (const auto& c : report.candidates) {
    const auto& verdicts = c.stage >= 0 ? stages.at(static_cast<std::size_t>(c.stage)).verdicts : std::nullopt;
    table.drifting.push_back(
        verdicts ? static_cast<double>((*verdicts)[static_cast<std::size_t>(ensemble::Verdict::drifting)])
                 : std::nan(""));
  }
  parallel::write_selection(f, table, report);
  return m;
}

}  // namespace simmer::posthoc::merging
