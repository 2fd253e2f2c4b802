#include "simmer/parallel/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "report_parts.hpp"
#include "simmer/ensemble/convergence.hpp"
#include "simmer/parallel/metrics_writer.hpp"
#include "simmer/parallel/progress.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/metrics.hpp"

namespace simmer::parallel {
namespace {

using namespace detail;
namespace layout = run::layout;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kSplits[2] = {layout::kTrain, layout::kTest};  ///< the sets with block metrics
using Verdict = ensemble::Verdict;

using run::layout::score_fields;

/// One value per trajectory of the diagnostics named in layout::diagnostic_fields(), of
/// simmering stage `stage`.
double diagnostic(const run::ChainReport& r, std::size_t stage, const std::string& name) {
  const auto& s = r.stages.at(stage).summary;
  if (name == layout::kMembers) return static_cast<double>(s.members);
  if (name == layout::kDistance) return s.distance;
  if (name == layout::kPathLength) return s.path_length;
  if (name == layout::kBallisticRatio) return s.ballistic_ratio();
  if (name == layout::kWindowDistance) return s.window_distance;
  if (name == layout::kWindowPathLength) return s.window_path_length;
  if (name == layout::kWindowBallisticRatio) return s.window_ballistic_ratio();
  if (name == layout::kRmsStart) return s.rms_start;
  if (name == layout::kRmsWindowStart) return s.rms_window_start;
  if (name == layout::kRmsEnd) return s.rms_end;
  if (name == layout::kMaxAbsEnd) return s.max_abs_end;
  if (name == layout::kMemberTrainMetricMedian) return s.member_train_median;
  if (name == layout::kMemberTestMetricMedian) return s.member_test_median;
  if (name == layout::kMemberTestMetricQ25) return s.member_test_q25;
  if (name == layout::kMemberTestMetricQ75) return s.member_test_q75;
  if (name == layout::kMeanMemberLoss) return s.mean_member_loss;
  if (name == layout::kStartLoss) return r.stages[stage].start_loss;
  if (name == layout::kRhat) return s.rhat;
  if (name == layout::kSlowToHeatAtStep) return static_cast<double>(r.slow_to_heat_at);
  const auto curvature = [](const train::SpectrumEstimate& c, double v) { return c.probes > 0 ? v : kNaN; };
  if (name == layout::kEigenvaluesAboveTStart) return curvature(r.curvature_start, r.curvature_start.count_above);
  if (name == layout::kEigenvaluesAboveTStartStderr)
    return curvature(r.curvature_start, r.curvature_start.count_stderr);
  if (name == layout::kLambdaMaxStart) return curvature(r.curvature_start, r.curvature_start.lambda_max);
  if (name == layout::kEigenvaluesAboveTEnd) return curvature(r.curvature_end, r.curvature_end.count_above);
  if (name == layout::kEigenvaluesAboveTEndStderr) return curvature(r.curvature_end, r.curvature_end.count_stderr);
  if (name == layout::kLambdaMaxEnd) return curvature(r.curvature_end, r.curvature_end.lambda_max);
  if (name == layout::kMassMin) return r.masses[0];
  if (name == layout::kMassMedian) return r.masses[1];
  if (name == layout::kMassMax) return r.masses[2];
  if (name == layout::kTimeStep) return s.time_step;
  if (name == layout::kTemperature) return s.target_temperature;
  if (name == layout::kKineticTemperature) return s.kinetic_temperature;
  if (name == layout::kConfigurationalTemperature) return s.configurational_temperature;
  if (name == layout::kConfigurationalTemperatureStderr) return s.configurational_stderr;
  throw Error("internal: unknown diagnostic '" + name + "'");
}

/// A candidate's scores on the scored sets, named as the problem names them.
std::vector<SetMetrics> ensemble_sets(const run::Problem& p, const EnsembleReport& e) {
  std::vector<std::string> sets;
  for (std::size_t s = 0; s < e.scores.size(); ++s) sets.push_back(p.sets[s].name);
  return set_metrics(sets, ensemble::CandidateScores{e.scores, e.coverage, e.mean_coverage, e.noise}, p.classification);
}

/// Stage `stage`'s verdict counts and loss rises.
StageMetrics stage_metrics(const run::Problem& p, const std::vector<run::ChainReport>& t, std::size_t stage) {
  const double temperature = p.stage_temperature(static_cast<std::int64_t>(stage));
  const auto [rise, stiff] = rise_and_stiff(p, t, stage);
  StageMetrics out;
  out.verdicts = verdict_counts(p, t, stage);
  out.observed_rise = rise;
  out.harmonic_rise = harmonic_rise(p, temperature);
  out.stiff_rise = stiff_rise(p, stiff, temperature);
  return out;
}

/// Every member series of stage `stage` (write_member_series: training loss, test metric, the
/// fixed test points) under <group>, with its member scale. Per second: over the root's
/// wall_seconds (simmer_analyze summary divides), so the archive is the same for any rank count.
void write_stage_series(io::ParallelFile& f, const std::vector<run::ChainReport>& t, std::size_t stage,
                        const std::string& group, ScaleAxes& by_chain) {
  std::size_t points = 0;
  for (const auto& r : t) {
    const auto& s = r.stages[stage].summary;
    if (!s.series_loss.empty()) points = s.series_points.size() / s.series_loss.size();
  }
  // Each trajectory's values series[offset], series[offset + stride], ...
  const auto chains = [&](std::vector<double> ensemble::TrajectorySummary::*series, std::size_t stride,
                          std::size_t offset) {
    ensemble::Chains out;
    for (const auto& r : t) {
      const auto& v = r.stages[stage].summary.*series;
      auto& one = out.emplace_back();
      for (std::size_t i = offset; i < v.size(); i += stride) one.push_back(v[i]);
    }
    return out;
  };
  // The names' order: training loss, test metric, then the fixed test points.
  const auto& names = layout::member_series_names();
  ScaleAxes by_member;
  const std::int64_t members = write_member_series(
      f, group, names[0], chains(&ensemble::TrajectorySummary::series_loss, 1, 0), by_chain, by_member);
  write_member_series(f, group, names[1], chains(&ensemble::TrajectorySummary::series_test_metric, 1, 0), by_chain,
                      by_member);
  for (std::size_t j = 0; j < points && 2 + j < names.size(); ++j) {
    write_member_series(f, group, names[2 + j], chains(&ensemble::TrajectorySummary::series_points, points, j),
                        by_chain, by_member);
  }
  write_member_scale(f, group, members, by_member);
  f.attribute(group, layout::kMemberSeriesMeaning,
              std::string("series_train_loss, series_test_metric and series_point_<j> [chain, member]: every member's "
                          "training loss, test metric and, at fixed test rows (the first, middle and last), the "
                          "log-probability of the true class (classification) or the prediction of output 0 "
                          "(regression); rank_rhat_ and bulk_ess_<series> pool the chains (Vehtari et al. 2021); "
                          "bulk ESS per second: over the root attribute wall_seconds"));
}

/// <group> = /diagnostics (or a rung's): one row per trajectory of stage `stage`, and per block
/// of its window, with chain and block scales.
void write_diagnostics(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& all,
                       std::size_t stage, const std::string& group, const EnsembleReport& e) {
  const std::vector<run::ChainReport> t = stage_reports(p, all, stage);
  const auto chains = static_cast<std::int64_t>(t.size());
  f.create_group(group);
  const ensemble::VerdictThresholds thresholds;
  f.attribute(group, layout::kVerdictRule,
              std::string("drifting: window ballistic ratio >= ballistic_threshold and rms_end/rms_window_start >= "
                          "rms_growth_threshold and (no prior or rms_end > prior_bound x prior rms); not mixed: "
                          "otherwise when the ratio >= ballistic_threshold or rhat > rhat_threshold; not "
                          "equilibrated: otherwise when |T_conf/T - 1| > configurational_tolerance over at least "
                          "configurational_min_samples samples of the window and by more than twice its standard "
                          "error; else stationary "
                          "(docs/STATIONARITY.md)"));
  f.attribute(group, layout::kBallisticThreshold, thresholds.ballistic);
  f.attribute(group, layout::kRmsGrowthThreshold, thresholds.rms_growth);
  f.attribute(group, layout::kPriorBound, thresholds.prior_bound);
  f.attribute(group, layout::kRhatThreshold, thresholds.rhat);
  f.attribute(group, layout::kConfigurationalTolerance, thresholds.configurational);
  f.attribute(group, layout::kConfigurationalMinSamples, thresholds.configurational_samples);
  f.attribute(group, layout::kPriorRms, p.prior_rms);
  f.attribute(group, layout::kBlockMetricName, std::string(p.classification ? layout::kAccuracy : layout::kR2));
  f.attribute(group, layout::kStage, p.stage_name(static_cast<std::int64_t>(stage)));
  std::vector<std::pair<std::string, unsigned>> by_chain, by_block, by_chain_block;
  for (const auto& name : layout::diagnostic_fields()) {
    std::vector<double> values;
    for (const auto& r : t) values.push_back(diagnostic(r, stage, name));
    f.put(layout::join(group, name), values, {chains});
    by_chain.emplace_back(layout::join(group, name), 0U);
  }
  std::vector<std::string> verdicts, reasons;
  for (const auto& r : t) {
    verdicts.push_back(ensemble::to_string(r.stages[stage].summary.verdict));
    reasons.push_back(r.stages[stage].summary.reason);
  }
  f.put_strings(layout::join(group, layout::kVerdict), verdicts);
  f.put_strings(layout::join(group, layout::kVerdictReason), reasons);
  const std::int64_t blocks = p.diagnostics.blocks;
  for (int split = 0; split < 2; ++split) {
    const std::string name = layout::join(group, layout::block_metric(kSplits[split]));
    std::vector<double> rows;
    for (const auto& r : t) {
      const auto& summary = r.stages[stage].summary;
      const auto& b = split == 0 ? summary.block_train_metric : summary.block_test_metric;
      std::vector<double> padded(b);
      padded.resize(static_cast<std::size_t>(blocks), kNaN);
      rows.insert(rows.end(), padded.begin(), padded.end());
    }
    f.put(name, rows, {chains, blocks});
    by_chain_block.emplace_back(name, 0U);
    const std::string pooled = layout::join(group, layout::pooled_block_metric(kSplits[split]));
    std::vector<double> pooled_values = e.block_metric[static_cast<std::size_t>(split)];
    pooled_values.resize(static_cast<std::size_t>(blocks), kNaN);
    f.put(pooled, pooled_values, {blocks});
    by_block.emplace_back(pooled, 0U);
  }
  // Block b starts at the window's first step + ceil(b W / B) (DiagnosticsSetup::block_of).
  const std::int64_t window_first =
      p.stage_first_step(static_cast<std::int64_t>(stage)) + p.run.steps - p.sampling.window;
  std::vector<double> first_step;
  for (std::int64_t b = 0; b < blocks; ++b) {
    first_step.push_back(static_cast<double>(window_first + (b * p.sampling.window + blocks - 1) / blocks));
  }
  const std::string first_step_path = layout::join(group, layout::kBlockFirstStep);
  f.put(first_step_path, first_step, {blocks});
  by_block.emplace_back(first_step_path, 0U);
  std::vector<double> ids;  // the trajectories' indices (a parallel ladder's rung has every K-th)
  for (const auto& r : t) ids.push_back(static_cast<double>(r.index));
  const std::string chain_scale = layout::join(group, layout::kChainAxis);
  f.put(chain_scale, ids, {chains});
  std::vector<double> block_ids(static_cast<std::size_t>(blocks));
  std::iota(block_ids.begin(), block_ids.end(), 0.0);
  const std::string block_scale = layout::join(group, layout::kBlockAxis);
  f.put(block_scale, block_ids, {blocks});
  for (const auto& [path, axis] : by_chain_block) by_block.emplace_back(path, 1U);
  by_chain.insert(by_chain.end(), by_chain_block.begin(), by_chain_block.end());
  write_stage_series(f, t, stage, group, by_chain);
  f.attach_scale(chain_scale, layout::kChainAxis, by_chain);
  f.attach_scale(block_scale, layout::kBlockAxis, by_block);
}

}  // namespace

namespace detail {

std::vector<double> column(const std::vector<run::ChainReport>& t, int split, double ensemble::SetScores::*field) {
  std::vector<double> out;
  for (const auto& r : t) out.push_back(r.baseline[static_cast<std::size_t>(split)].*field);
  return out;
}

/// N_f T / 2: equipartition's loss rise in a harmonic minimum at temperature T.
double harmonic_rise(const run::Problem& p, double temperature) {
  return 0.5 * (static_cast<double>(p.parameters) - p.nhc.dof_offset) * temperature;
}

/// Means over trajectories of (observed rise of stage `stage`'s members' mean loss over the
/// stage's start loss, eigenvalues above T at the start).
std::pair<double, double> rise_and_stiff(const run::Problem& p, const std::vector<run::ChainReport>& t,
                                         std::size_t stage) {
  std::vector<double> rise, stiff;
  for (const auto& r : t) {
    if (!p.runs_stage(r.index, static_cast<std::int64_t>(stage))) continue;
    rise.push_back(r.stages.at(stage).summary.mean_member_loss - r.stages[stage].start_loss);
    stiff.push_back(r.curvature_start.probes > 0 ? r.curvature_start.count_above : kNaN);
  }
  return {finite_mean_sd(rise).first, finite_mean_sd(stiff).first};
}

/// The stiff modes' harmonic rise: only at the temperature the eigenvalues were counted above
/// (the ramp's target, or a ladder's first rung).
double stiff_rise(const run::Problem& p, double stiff, double temperature) {
  return temperature == p.ramp.target ? 0.5 * stiff * temperature : kNaN;
}

std::array<std::int64_t, ensemble::kVerdictNames.table.size()> verdict_counts(const run::Problem& p,
                                                                              const std::vector<run::ChainReport>& t,
                                                                              std::size_t stage) {
  std::array<std::int64_t, ensemble::kVerdictNames.table.size()> counts{};
  for (const auto& r : stage_reports(p, t, stage))
    counts[static_cast<std::size_t>(r.stages.at(stage).summary.verdict)] += 1;
  return counts;
}

std::vector<run::ChainReport> stage_reports(const run::Problem& p, const std::vector<run::ChainReport>& t,
                                            std::size_t stage) {
  std::vector<run::ChainReport> out;
  for (const auto& r : t) {
    if (p.runs_stage(r.index, static_cast<std::int64_t>(stage))) out.push_back(r);
  }
  return out;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace detail

void EnsembleReport::save(ByteWriter& w) const { save_fields(w, *this); }

EnsembleReport EnsembleReport::load(ByteReader& r) {
  EnsembleReport e;
  load_fields(r, e, Rest::not_last);
  return e;
}

void RunReport::save(ByteWriter& w) const { save_fields(w, *this); }

RunReport RunReport::load(ByteReader& r) {
  RunReport out;
  load_fields(r, out, Rest::last);
  return out;
}

ensemble::Candidate stage_candidate(const run::Problem& p, std::int64_t stage, const ensemble::PooledEnsemble& pooled,
                                    const ensemble::PooledDiagnostics& diagnostics) {
  ensemble::Candidate c;
  c.name = p.stage_name(stage);
  c.temperature = p.stage_temperature(stage);
  c.classification = p.classification;
  c.members = pooled.members(0);
  for (std::size_t s = 0; s < p.sets.size(); ++s) {
    if (p.classification) {
      c.votes.push_back(pooled.votes(s));
    } else {
      c.means.push_back(pooled.means(s));
      c.components.push_back(pooled.trajectory_means(s));
    }
  }
  for (std::size_t s = 0; s < p.scored_sets(); ++s) {
    if (p.classification) {
      c.probability.push_back(diagnostics.probabilities(static_cast<int>(s)));
      c.member_entropy.push_back(diagnostics.member_entropy(static_cast<int>(s)));
    } else {
      c.coverage.push_back(diagnostics.coverage_counts(static_cast<int>(s)));
    }
  }
  if (!p.classification && c.members > 0) c.noise = ensemble::estimate_noise(c, run::scored_sets(p));
  return c;
}

SelectionPolicy SelectionPolicy::of(const run::Problem& p) {
  SelectionPolicy s;
  s.stages = p.stages();
  s.ladder = !p.ladder.rungs.empty();
  s.parallel_rungs = p.parallel_rungs();
  s.has_validation = p.has_validation();
  s.selection = p.selection;
  return s;
}

namespace {

EnsembleReport scored_report(const ensemble::Candidate& c, std::int64_t stage,
                             const std::vector<ensemble::ScoredSet>& scored) {
  EnsembleReport e;
  e.name = c.name;
  e.temperature = c.temperature;
  e.stage = stage;
  const ensemble::CandidateScores scores = ensemble::score(c, scored);
  e.scores = scores.sets;
  e.coverage = scores.coverage;
  e.mean_coverage = scores.mean_coverage;
  e.noise = scores.noise;
  e.members = c.members;
  return e;
}

}  // namespace

RunReport choose(const SelectionPolicy& policy, std::vector<ensemble::Candidate>& candidates,
                 const std::vector<ensemble::ScoredSet>& scored) {
  RunReport r;
  std::int64_t stage = 0;
  for (const auto& c : candidates) {
    if (c.name == layout::kStackedName) throw Error("internal: the candidates are stacked once");
    r.candidates.push_back(scored_report(c, c.name == layout::kDeepEnsembleName ? kDeepStage : stage++, scored));
  }
  if (r.candidates.empty()) throw Error("internal: a run without an ensemble");
  const auto last = static_cast<std::int64_t>(r.candidates.size()) - 1;
  const bool compare = policy.selection.by != ensemble::SelectBy::none && policy.has_validation;
  if (policy.stages == 0) {  // Adam alone: the deep ensemble
    r.selected = 0;
    r.diagnostics_stage = -1;
  } else if (!policy.ladder) {  // the paper's run: its one simmering stage
    r.selected = last;
    r.diagnostics_stage = 0;
  } else if (!compare && policy.parallel_rungs) {
    // Parallel rungs without a choice: the coldest, the target the hotter rungs help to mix.
    r.diagnostics_stage = 0;
    for (std::size_t c = 0; c < r.candidates.size(); ++c) {
      if (r.candidates[c].stage == 0) r.selected = static_cast<std::int64_t>(c);
    }
  } else if (!compare) {
    r.selected = last;  // the ladder's hottest rung, where a staircase ends
    r.diagnostics_stage = policy.stages - 1;
  } else {
    std::vector<std::vector<double>> losses;
    for (const auto& c : candidates) {
      auto rows = ensemble::row_losses(c, scored, run::Problem::kValidation);
      losses.push_back(policy.selection.by == ensemble::SelectBy::nll ? std::move(rows.nll) : std::move(rows.metric));
    }
    r.selection = ensemble::select(losses, policy.selection.rule);
    r.compared = true;
    r.selected = static_cast<std::int64_t>(r.selection.selected);
    const std::int64_t chosen_stage = r.chosen().stage;
    r.diagnostics_stage = chosen_stage >= 0 ? chosen_stage : 0;
  }
  // The candidates stacked on the validation rows: one more candidate, the last.
  if (policy.ladder && policy.has_validation && candidates.size() > 1) {
    r.stacked = true;
    r.stacking = ensemble::stack(ensemble::row_log_densities(candidates, scored, run::Problem::kValidation));
    candidates.push_back(ensemble::stacked_candidate(candidates, r.stacking.weights, scored, layout::kStackedName));
    r.candidates.push_back(scored_report(candidates.back(), kStackedStage, scored));
    if (compare && policy.selection.rule == ensemble::SelectRule::stacking && candidates.back().members > 0) {
      r.selected = static_cast<std::int64_t>(candidates.size()) - 1;
      // Its verdicts: those of the rung with the largest weight.
      std::int64_t heaviest = -1;
      for (std::size_t c = 0; c < r.stacking.weights.size(); ++c) {
        const auto& e = r.candidates[c];
        if (e.stage >= 0 &&
            (heaviest < 0 || r.stacking.weights[c] > r.stacking.weights[static_cast<std::size_t>(heaviest)]))
          heaviest = static_cast<std::int64_t>(c);
      }
      r.diagnostics_stage = heaviest >= 0 ? r.candidates[static_cast<std::size_t>(heaviest)].stage : 0;
    }
  }
  // The run's ensemble against the deep ensemble on the validation rows, row by row.
  const auto chosen = static_cast<std::size_t>(r.selected);
  if (policy.has_validation && r.deep() != nullptr && chosen != 0) {
    const auto mine = ensemble::row_losses(candidates.at(chosen), scored, run::Problem::kValidation);
    const auto deep = ensemble::row_losses(candidates.front(), scored, run::Problem::kValidation);
    r.against_deep = true;
    r.validation_nll = ensemble::paired_difference(mine.nll, deep.nll);
    r.validation_metric = ensemble::paired_difference(mine.metric, deep.metric);
  }
  return r;
}

RunReport choose(const run::Problem& p, std::vector<ensemble::Candidate>& candidates,
                 const std::vector<const ensemble::PooledDiagnostics*>& diagnostics) {
  RunReport r = choose(SelectionPolicy::of(p), candidates, run::scored_sets(p));
  for (auto& e : r.candidates) {
    if (e.stage < 0) continue;
    const auto* d = diagnostics.at(static_cast<std::size_t>(e.stage));
    for (int s = 0; s < 2; ++s) e.block_metric[static_cast<std::size_t>(s)] = d->block_metric(s);
  }
  return r;
}

void write_selection(io::ParallelFile& f, const SelectionTable& table, const RunReport& report) {
  const std::string g = layout::kSelection;
  f.create_group(g);
  const auto n = static_cast<std::int64_t>(report.candidates.size());
  if (table.drifting.size() != report.candidates.size())
    throw Error("internal: /selection needs a drifting count per candidate");
  std::vector<std::string> names;
  std::vector<double> temperature, over_bayes, members;
  for (const auto& c : report.candidates) {
    names.push_back(c.name);
    temperature.push_back(c.temperature);
    over_bayes.push_back(c.temperature / table.bayes_temperature);
    members.push_back(static_cast<double>(c.members));
  }
  f.put_strings(layout::selection_column(layout::kCandidate), names);
  f.put(layout::selection_column(layout::kTemperature), temperature, {n});
  f.put(layout::selection_column(layout::kTemperatureOverBayes), over_bayes, {n});
  f.put(layout::selection_column(layout::kMembers), members, {n});
  f.put(layout::selection_column(layout::kTrajectoriesDrifting), table.drifting, {n});
  for (std::size_t split = 0; split < table.scored_sets.size(); ++split) {
    for (const auto& [name, field] : score_fields(table.classification)) {
      std::vector<double> values;
      for (const auto& c : report.candidates) values.push_back(c.scores.at(split).*field);
      f.put(layout::selection_column(layout::baseline_column(table.scored_sets[split], name)), values, {n});
    }
  }
  f.attribute(g, layout::kSelectBy, ensemble::to_string(table.policy.selection.by));
  f.attribute(g, layout::kSelectRule, ensemble::to_string(table.policy.selection.rule));
  f.attribute(g, layout::kSelected, report.selected);
  f.attribute(g, layout::kSelectedName, report.chosen().name);
  // Columns of the candidates before the stacked one: its row NaN.
  const auto padded = [&](std::vector<double> v) {
    v.resize(static_cast<std::size_t>(n), std::numeric_limits<double>::quiet_NaN());
    return v;
  };
  if (report.stacked) {
    f.put(layout::selection_column(layout::kStackingWeight), padded(report.stacking.weights), {n});
    f.attribute(g, layout::kStackingSweeps, report.stacking.sweeps);
    f.attribute(g, layout::kStackingGap, report.stacking.gap);
    f.attribute(
        g, layout::kStackingMeaning,
        std::string("stacking_weight [candidate]: the weights of one mixture of the candidates' predictive densities "
                    "(the Gaussian of mean and variance + noise variance per row, or the class probabilities) "
                    "maximising the validation rows' mean log-likelihood (EM from equal weights with SQUAREM's "
                    "steps, stacking_sweeps sweeps, stopped when stacking_gap, the Frank-Wolfe gap that bounds the "
                    "distance from the maximum, is at most 1e-10). The candidate ") +
            layout::kStackedName + " (its arrays in " + layout::kStacked +
            "): every candidate's members weighted so that its share of the ensemble is its weight, scored as "
            "every candidate is (its own noise variance from its mean's validation residuals); its validation "
            "scores flatter it, since the weights were fitted on those rows");
  }
  if (report.compared) {
    const auto& s = report.selection;
    f.put(layout::selection_column(layout::kValidationLoss), padded(s.loss), {n});
    f.put(layout::selection_column(layout::kValidationLossStderr), padded(s.stderr_loss), {n});
    f.put(layout::selection_column(layout::kValidationLossStderrDifference), padded(s.stderr_difference), {n});
    f.attribute(g, layout::kBest, static_cast<std::int64_t>(s.best));
    f.attribute(g, layout::kOneSe, static_cast<std::int64_t>(s.one_se));
    f.attribute(g, layout::kValidationRows, table.validation_rows);
    f.attribute(g, layout::kValidationLossMeaning,
                std::string(table.policy.selection.by == ensemble::SelectBy::nll
                                ? "mean per-row negative log-likelihood on the validation set"
                                : (table.classification ? "validation error rate (1 - accuracy of the vote)"
                                                        : "validation mean squared error of the mean")) +
                    "; stderr = sd / sqrt(rows); stderr_difference = that of the per-row differences to the best "
                    "candidate (one_se: the first candidate within it)");
  }
}

void write_report(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& t,
                  const RunReport& report) {
  // /metrics: the baselines' scores per trajectory and their means, the run's ensemble and the
  // deep ensemble beside it, the stationarity of the stage in /diagnostics, T's reading.
  Metrics m;
  m.classification = p.classification;
  for (std::size_t split = 0; split < p.scored_sets(); ++split) {
    for (const auto& [name, field] : score_fields(p.classification)) {
      m.baseline.push_back({p.sets[split].name, name, column(t, static_cast<int>(split), field)});
    }
  }
  const EnsembleReport& chosen = report.chosen();
  m.ensemble = ensemble_sets(p, chosen);
  m.ensemble_noise = chosen.noise;
  m.members = chosen.members;
  m.ensemble_name = chosen.name;
  if (const EnsembleReport* deep = report.deep()) {
    m.deep_ensemble = ensemble_sets(p, *deep);
    m.deep_ensemble_noise = deep->noise;
    m.deep_ensemble_members = deep->members;
  }
  if (report.diagnostics_stage >= 0) m.stage = stage_metrics(p, t, static_cast<std::size_t>(report.diagnostics_stage));
  m.bayes_temperature = p.bayes_temperature;
  m.temperature_over_bayes = chosen.temperature / p.bayes_temperature;
  if (!p.classification) {
    m.noise_sd = p.noise_sd > 0.0 ? p.noise_sd : kNaN;
    m.noise_sd_source = p.noise_sd_source;
  }
  write_metrics(f, m);
  if (report.diagnostics_stage >= 0) {
    const EnsembleReport* pooled = nullptr;
    for (const auto& c : report.candidates) {
      if (c.stage == report.diagnostics_stage) pooled = &c;
    }
    write_diagnostics(f, p, t, static_cast<std::size_t>(report.diagnostics_stage), layout::kDiagnostics, *pooled);
  }
  if (p.ladder.rungs.empty()) return;
  // A ladder: every rung's scores and diagnostics, and the candidates' table.
  for (const auto& c : report.candidates) {
    if (c.stage == kDeepStage) continue;  // its scores are /metrics' deep_ensemble_*
    // The scores where the candidate's arrays are; a rung's stage metrics and diagnostics too.
    const std::string g = layout::candidate_group(c.name);
    write_set_metrics(f, g, layout::kEnsemblePrefix, p.classification, ensemble_sets(p, c), c.noise);
    f.attribute(g, layout::kMembers, c.members);
    if (c.stage < 0) continue;
    write_stage_metrics(f, g, stage_metrics(p, t, static_cast<std::size_t>(c.stage)));
    write_diagnostics(f, p, t, static_cast<std::size_t>(c.stage), layout::ladder_diagnostics(c.name), c);
  }
  SelectionTable table;
  table.policy = SelectionPolicy::of(p);
  table.classification = p.classification;
  table.bayes_temperature = p.bayes_temperature;
  for (std::size_t split = 0; split < p.scored_sets(); ++split) table.scored_sets.push_back(p.sets[split].name);
  table.validation_rows = p.validation.rows();
  for (const auto& c : report.candidates) {
    table.drifting.push_back(
        c.stage >= 0 ? static_cast<double>(verdict_counts(
                           p, t, static_cast<std::size_t>(c.stage))[static_cast<std::size_t>(Verdict::drifting)])
                     : kNaN);
  }
  write_selection(f, table, report);
}

}  // namespace simmer::parallel
