#include "simmer/mpi/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <string>

#include "simmer/mpi/progress.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::mpi {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kSplits[2] = {"train", "test"};  ///< the sets with block metrics
using Verdict = ensemble::Verdict;

/// Mean and sample sd of the finite values (NaN, NaN when there are none).
std::pair<double, double> mean_sd(const std::vector<double>& values) {
  double m = 0.0, q = 0.0;
  std::size_t n = 0;
  for (const double v : values) {
    if (!std::isfinite(v)) continue;
    m += v;
    ++n;
  }
  if (n == 0) return {kNaN, kNaN};
  m /= static_cast<double>(n);
  for (const double v : values) {
    if (std::isfinite(v)) q += (v - m) * (v - m);
  }
  return {m, n > 1 ? std::sqrt(q / static_cast<double>(n - 1)) : 0.0};
}

/// The scores that apply to the task, as (archive name, member of SetScores).
std::vector<std::pair<std::string, double ensemble::SetScores::*>> score_fields(bool classification) {
  using S = ensemble::SetScores;
  if (classification) {
    return {{"accuracy", &S::metric}, {"nll", &S::nll}, {"brier", &S::brier}, {"ece", &S::ece}};
  }
  return {{"mse", &S::metric}, {"r2", &S::r2}, {"nll", &S::nll}};
}

std::vector<double> column(const std::vector<run::ChainReport>& t, int split, double ensemble::SetScores::*field) {
  std::vector<double> out;
  for (const auto& r : t) out.push_back(r.baseline[static_cast<std::size_t>(split)].*field);
  return out;
}

/// One value per trajectory of the diagnostics named in run::layout::diagnostic_fields(), of
/// simmering stage `stage`.
double diagnostic(const run::ChainReport& r, std::size_t stage, const std::string& name) {
  const auto& s = r.stages.at(stage).summary;
  if (name == "members") return static_cast<double>(s.members);
  if (name == "distance") return s.distance;
  if (name == "path_length") return s.path_length;
  if (name == "ballistic_ratio") return s.ballistic_ratio();
  if (name == "window_distance") return s.window_distance;
  if (name == "window_path_length") return s.window_path_length;
  if (name == "window_ballistic_ratio") return s.window_ballistic_ratio();
  if (name == "rms_start") return s.rms_start;
  if (name == "rms_window_start") return s.rms_window_start;
  if (name == "rms_end") return s.rms_end;
  if (name == "max_abs_end") return s.max_abs_end;
  if (name == "member_train_metric_median") return s.member_train_median;
  if (name == "member_test_metric_median") return s.member_test_median;
  if (name == "member_test_metric_q25") return s.member_test_q25;
  if (name == "member_test_metric_q75") return s.member_test_q75;
  if (name == "mean_member_loss") return s.mean_member_loss;
  if (name == "start_loss") return r.stages[stage].start_loss;
  if (name == "rhat") return s.rhat;
  if (name == "slow_to_heat_at_step") return static_cast<double>(r.slow_to_heat_at);
  const auto curvature = [](const train::SpectrumEstimate& c, double v) { return c.probes > 0 ? v : kNaN; };
  if (name == "eigenvalues_above_T_start") return curvature(r.curvature_start, r.curvature_start.count_above);
  if (name == "eigenvalues_above_T_start_stderr") return curvature(r.curvature_start, r.curvature_start.count_stderr);
  if (name == "lambda_max_start") return curvature(r.curvature_start, r.curvature_start.lambda_max);
  if (name == "eigenvalues_above_T_end") return curvature(r.curvature_end, r.curvature_end.count_above);
  if (name == "eigenvalues_above_T_end_stderr") return curvature(r.curvature_end, r.curvature_end.count_stderr);
  if (name == "lambda_max_end") return curvature(r.curvature_end, r.curvature_end.lambda_max);
  throw Error("internal: unknown diagnostic '" + name + "'");
}

/// N_f T / 2: equipartition's loss rise in a harmonic minimum at temperature T.
double harmonic_rise(const run::Problem& p, double temperature) {
  return 0.5 * (static_cast<double>(p.parameters) - p.nhc.dof_offset) * temperature;
}

/// Means over trajectories of (observed rise of stage `stage`'s members' mean loss over the
/// stage's start loss, eigenvalues above T at the start).
std::pair<double, double> rise_and_stiff(const std::vector<run::ChainReport>& t, std::size_t stage) {
  std::vector<double> rise, stiff;
  for (const auto& r : t) {
    rise.push_back(r.stages.at(stage).summary.mean_member_loss - r.stages[stage].start_loss);
    stiff.push_back(r.curvature_start.probes > 0 ? r.curvature_start.count_above : kNaN);
  }
  return {mean_sd(rise).first, mean_sd(stiff).first};
}

/// The stiff modes' harmonic rise: only at the temperature the eigenvalues were counted above
/// (the ramp's target, or a ladder's first rung).
double stiff_rise(const run::Problem& p, double stiff, double temperature) {
  return temperature == p.ramp.target ? 0.5 * stiff * temperature : kNaN;
}

std::array<std::int64_t, 5> verdict_counts(const std::vector<run::ChainReport>& t, std::size_t stage) {
  std::array<std::int64_t, 5> counts{};
  for (const auto& r : t) counts[static_cast<std::size_t>(r.stages.at(stage).summary.verdict)] += 1;
  return counts;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

/// write_scores of a candidate's report, its sets named as the problem names them.
void write_scores(io::ParallelFile& f, const run::Problem& p, const std::string& object, const std::string& prefix,
                  const EnsembleReport& e) {
  std::vector<std::string> sets;
  for (std::size_t s = 0; s < e.scores.size(); ++s) sets.push_back(p.sets[s].name);
  ::simmer::mpi::write_scores(f, object, prefix, p.classification, sets, e.scores, e.coverage);
}

/// Stage `stage`'s verdict counts and loss rises as attributes of `object`.
void write_stage_summary(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& t,
                         std::size_t stage, const std::string& object) {
  const auto counts = verdict_counts(t, stage);
  for (const auto& [v, name] : ensemble::kVerdictNames.table) {
    f.attribute(object, run::layout::verdict_count_key(name), counts[static_cast<std::size_t>(v)]);
  }
  const double temperature = p.stage_temperature(static_cast<std::int64_t>(stage));
  const auto [rise, stiff] = rise_and_stiff(t, stage);
  f.attribute(object, "observed_loss_rise", rise);
  f.attribute(object, "harmonic_loss_rise", harmonic_rise(p, temperature));
  f.attribute(object, "harmonic_loss_rise_stiff_modes", stiff_rise(p, stiff, temperature));
}

/// <group> = /diagnostics (or a rung's): one row per trajectory of stage `stage`, and per block
/// of its window, with chain and block scales.
void write_diagnostics(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& t,
                       std::size_t stage, const std::string& group, const EnsembleReport& e) {
  const auto chains = static_cast<std::int64_t>(t.size());
  f.create_group(group);
  const ensemble::VerdictThresholds thresholds;
  f.attribute(group, "verdict_rule",
              std::string("drifting: window ballistic ratio >= ballistic_threshold and rms_end/rms_window_start >= "
                          "rms_growth_threshold and (no prior or rms_end > prior_bound x prior rms); not mixed: "
                          "otherwise when the ratio >= ballistic_threshold or rhat > rhat_threshold; else "
                          "stationary (docs/STATIONARITY.md)"));
  f.attribute(group, "ballistic_threshold", thresholds.ballistic);
  f.attribute(group, "rms_growth_threshold", thresholds.rms_growth);
  f.attribute(group, "prior_bound", thresholds.prior_bound);
  f.attribute(group, "rhat_threshold", thresholds.rhat);
  f.attribute(group, "prior_rms", p.prior_rms);
  f.attribute(group, "metric", std::string(p.classification ? "accuracy" : "r2"));
  f.attribute(group, "stage", p.stage_name(static_cast<std::int64_t>(stage)));
  std::vector<std::pair<std::string, unsigned>> by_chain, by_block, by_chain_block;
  for (const auto& name : run::layout::diagnostic_fields()) {
    std::vector<double> values;
    for (const auto& r : t) values.push_back(diagnostic(r, stage, name));
    f.put(group + "/" + name, values, {chains});
    by_chain.emplace_back(group + "/" + name, 0U);
  }
  std::vector<std::string> verdicts, reasons;
  for (const auto& r : t) {
    verdicts.push_back(ensemble::to_string(r.stages[stage].summary.verdict));
    reasons.push_back(r.stages[stage].summary.reason);
  }
  f.put_strings(group + "/verdict", verdicts);
  f.put_strings(group + "/verdict_reason", reasons);
  const std::int64_t blocks = p.diagnostics.blocks;
  for (int split = 0; split < 2; ++split) {
    const std::string name = group + "/block_" + kSplits[split] + "_metric";
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
    const std::string pooled = group + "/pooled_block_" + kSplits[split] + "_metric";
    std::vector<double> pooled_values = e.block_metric[static_cast<std::size_t>(split)];
    pooled_values.resize(static_cast<std::size_t>(blocks), kNaN);
    f.put(pooled, pooled_values, {blocks});
    by_block.emplace_back(pooled, 0U);
  }
  // Block b starts at the window's first step + ceil(b W / B) (DiagnosticsSetup::block_of).
  const std::int64_t window_first = (static_cast<std::int64_t>(stage) + 1) * p.run.steps - p.sampling.window;
  std::vector<double> first_step;
  for (std::int64_t b = 0; b < blocks; ++b) {
    first_step.push_back(static_cast<double>(window_first + (b * p.sampling.window + blocks - 1) / blocks));
  }
  f.put(group + "/block_first_step", first_step, {blocks});
  by_block.emplace_back(group + "/block_first_step", 0U);
  std::vector<double> ids(static_cast<std::size_t>(chains));
  std::iota(ids.begin(), ids.end(), 0.0);
  f.put(group + "/chain", ids, {chains});
  std::vector<double> block_ids(static_cast<std::size_t>(blocks));
  std::iota(block_ids.begin(), block_ids.end(), 0.0);
  f.put(group + "/block", block_ids, {blocks});
  for (const auto& [path, axis] : by_chain_block) by_block.emplace_back(path, 1U);
  by_chain.insert(by_chain.end(), by_chain_block.begin(), by_chain_block.end());
  f.attach_scale(group + "/chain", "chain", by_chain);
  f.attach_scale(group + "/block", "block", by_block);
}

/// /selection: the candidates' table (a ladder's rungs and the deep ensemble) and the choice.
void write_selection(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& t,
                     const RunReport& report) {
  const std::string g = "/selection";
  f.create_group(g);
  const auto n = static_cast<std::int64_t>(report.candidates.size());
  std::vector<std::string> names;
  std::vector<double> temperature, over_bayes, members, drifting;
  for (const auto& c : report.candidates) {
    names.push_back(c.name);
    temperature.push_back(c.temperature);
    over_bayes.push_back(c.temperature / p.bayes_temperature);
    members.push_back(static_cast<double>(c.members));
    drifting.push_back(c.stage >= 0
                           ? static_cast<double>(verdict_counts(
                                 t, static_cast<std::size_t>(c.stage))[static_cast<std::size_t>(Verdict::drifting)])
                           : kNaN);
  }
  f.put_strings(g + "/candidate", names);
  f.put(g + "/temperature", temperature, {n});
  f.put(g + "/temperature_over_bayes", over_bayes, {n});
  f.put(g + "/members", members, {n});
  f.put(g + "/trajectories_drifting", drifting, {n});
  for (std::size_t split = 0; split < p.scored_sets(); ++split) {
    for (const auto& [name, field] : score_fields(p.classification)) {
      std::vector<double> values;
      for (const auto& c : report.candidates) values.push_back(c.scores.at(split).*field);
      f.put(g + "/" + p.sets[split].name + "_" + name, values, {n});
    }
  }
  f.attribute(g, "select_by", ensemble::to_string(p.select_by));
  f.attribute(g, "select_rule", ensemble::to_string(p.select_rule));
  f.attribute(g, "selected", report.selected);
  f.attribute(g, "selected_name", report.chosen().name);
  if (report.compared) {
    const auto& s = report.selection;
    f.put(g + "/validation_loss", s.loss, {n});
    f.put(g + "/validation_loss_stderr", s.stderr_loss, {n});
    f.put(g + "/validation_loss_stderr_difference", s.stderr_difference, {n});
    f.attribute(g, "best", static_cast<std::int64_t>(s.best));
    f.attribute(g, "one_se", static_cast<std::int64_t>(s.one_se));
    f.attribute(g, "validation_rows", static_cast<std::int64_t>(p.validation.rows()));
    f.attribute(g, "validation_loss_meaning",
                std::string(p.select_by == ensemble::SelectBy::nll
                                ? "mean per-row negative log-likelihood on the validation set"
                                : (p.classification ? "validation error rate (1 - accuracy of the vote)"
                                                    : "validation mean squared error of the mean")) +
                    "; stderr = sd / sqrt(rows); stderr_difference = that of the per-row differences to the best "
                    "candidate (one_se: the first candidate within it)");
  }
}

}  // namespace

void write_scores(io::ParallelFile& f, const std::string& object, const std::string& prefix, bool classification,
                  const std::vector<std::string>& sets, const std::vector<ensemble::SetScores>& scores,
                  const std::vector<std::array<double, kCoverageLevels.size()>>& coverage) {
  const auto fields = score_fields(classification);
  for (std::size_t split = 0; split < scores.size(); ++split) {
    const std::string sn = prefix + sets.at(split);
    const auto& es = scores[split];
    for (const auto& [name, field] : fields) f.attribute(object, sn + "_" + name, es.*field);
    f.attribute(object, sn + "_worst_point", static_cast<std::int64_t>(es.worst_row));
    f.attribute(object, sn + "_worst_point_share", es.worst_share);
    if (!classification) {
      for (std::size_t l = 0; l < kCoverageLevels.size(); ++l) {
        const auto pct = static_cast<int>(std::lround(100 * kCoverageLevels[l]));
        f.attribute(object, sn + "_coverage_" + std::to_string(pct), coverage.at(split)[l]);
      }
    }
  }
}

void EnsembleReport::save(ByteWriter& w) const {
  Saver ar(w);
  ar(*this);
}

EnsembleReport EnsembleReport::load(ByteReader& r) {
  EnsembleReport e;
  Loader ar(r);
  ar(e);
  return e;
}

void RunReport::save(ByteWriter& w) const {
  Saver ar(w);
  ar(*this);
}

RunReport RunReport::load(ByteReader& r) {
  RunReport out;
  Loader ar(r);
  ar(out);
  ar.finish();
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
    }
  }
  for (std::size_t s = 0; s < p.scored_sets(); ++s) {
    if (p.classification) {
      c.probability.push_back(diagnostics.probabilities(static_cast<int>(s)));
    } else {
      c.coverage.push_back(diagnostics.coverage_counts(static_cast<int>(s)));
    }
  }
  return c;
}

RunReport choose(const run::Problem& p, const std::vector<ensemble::Candidate>& candidates,
                 const std::vector<const ensemble::PooledDiagnostics*>& diagnostics) {
  RunReport r;
  const auto scored = run::scored_sets(p);
  std::int64_t stage = 0;
  for (const auto& c : candidates) {
    EnsembleReport e;
    e.name = c.name;
    e.temperature = c.temperature;
    e.stage = c.name == "deep_ensemble" ? -1 : stage++;
    const ensemble::CandidateScores scores = ensemble::score(c, scored);
    e.scores = scores.sets;
    e.coverage = scores.coverage;
    e.members = c.members;
    if (e.stage >= 0) {
      const auto* d = diagnostics.at(static_cast<std::size_t>(e.stage));
      for (int s = 0; s < 2; ++s) e.block_metric[static_cast<std::size_t>(s)] = d->block_metric(s);
    }
    r.candidates.push_back(std::move(e));
  }
  if (r.candidates.empty()) throw Error("internal: a run without an ensemble");
  const std::int64_t stages = p.stages();
  const auto last = static_cast<std::int64_t>(r.candidates.size()) - 1;
  if (stages == 0) {  // Adam alone: the deep ensemble
    r.selected = 0;
    r.diagnostics_stage = -1;
  } else if (p.ladder.empty()) {  // the paper's run: its one simmering stage
    r.selected = last;
    r.diagnostics_stage = 0;
  } else if (p.select_by == ensemble::SelectBy::none || !p.has_validation()) {
    r.selected = last;  // the ladder's hottest rung, where a staircase ends
    r.diagnostics_stage = stages - 1;
  } else {
    std::vector<std::vector<double>> losses;
    for (const auto& c : candidates) {
      auto rows = ensemble::row_losses(c, scored, run::Problem::kValidation);
      losses.push_back(p.select_by == ensemble::SelectBy::nll ? std::move(rows.nll) : std::move(rows.metric));
    }
    r.selection = ensemble::select(losses, p.select_rule);
    r.compared = true;
    r.selected = static_cast<std::int64_t>(r.selection.selected);
    const std::int64_t chosen_stage = r.chosen().stage;
    r.diagnostics_stage = chosen_stage >= 0 ? chosen_stage : 0;
  }
  return r;
}

void write_report(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& t,
                  const RunReport& report) {
  const auto chains = static_cast<std::int64_t>(t.size());
  const auto fields = score_fields(p.classification);
  // /baseline/<split>_<score> [chain] and their means over trajectories in /metrics.
  for (std::size_t split = 0; split < p.scored_sets(); ++split) {
    const std::string sn = p.sets[split].name;
    for (const auto& [name, field] : fields) {
      const auto values = column(t, static_cast<int>(split), field);
      f.put("/baseline/" + sn + "_" + name, values, {chains});
      const auto [m, sd] = mean_sd(values);
      f.attribute(run::layout::kMetrics, "baseline_" + sn + "_" + name + "_mean", m);
      f.attribute(run::layout::kMetrics, "baseline_" + sn + "_" + name + "_sd", sd);
    }
  }
  // The run's ensemble, and the deep ensemble beside it.
  const EnsembleReport& chosen = report.chosen();
  write_scores(f, p, run::layout::kMetrics, "ensemble_", chosen);
  f.attribute(run::layout::kMetrics, "members", chosen.members);
  f.attribute(run::layout::kMetrics, "ensemble", chosen.name);
  if (const EnsembleReport* deep = report.deep()) {
    write_scores(f, p, run::layout::kMetrics, "deep_ensemble_", *deep);
    f.attribute(run::layout::kMetrics, "deep_ensemble_members", deep->members);
  }
  // Stationarity of the stage in /diagnostics: verdict counts, loss rise, T's reading.
  if (report.diagnostics_stage >= 0) {
    const auto stage = static_cast<std::size_t>(report.diagnostics_stage);
    const EnsembleReport* pooled = nullptr;
    for (const auto& c : report.candidates) {
      if (c.stage == report.diagnostics_stage) pooled = &c;
    }
    write_stage_summary(f, p, t, stage, run::layout::kMetrics);
    write_diagnostics(f, p, t, stage, "/diagnostics", *pooled);
  }
  f.attribute(run::layout::kMetrics, "bayes_temperature", p.bayes_temperature);
  f.attribute(run::layout::kMetrics, "temperature_over_bayes", chosen.temperature / p.bayes_temperature);
  if (p.ladder.empty()) return;
  // A ladder: every rung's scores and diagnostics, and the candidates' table.
  for (const auto& c : report.candidates) {
    if (c.stage < 0) continue;
    const std::string g = "/ladder/" + c.name;
    write_scores(f, p, g, "ensemble_", c);
    f.attribute(g, "members", c.members);
    write_stage_summary(f, p, t, static_cast<std::size_t>(c.stage), g);
    write_diagnostics(f, p, t, static_cast<std::size_t>(c.stage), g + "/diagnostics", c);
  }
  write_selection(f, p, t, report);
}

void print_footer(const run::Problem& p, const double cpu_parts[4], double wall, int ranks,
                  const std::int64_t io_counts[2], const std::vector<std::int64_t>& diverged) {
  const double cpu = cpu_parts[3];
  std::printf(
      "\nwall %s on %d rank(s); CPU time %.1f s: gradient steps %.1f%%, member evaluation "
      "and traces %.1f%%, gathers + aggregation + I/O %.1f%%, set-up and other %.1f%%\n",
      format_duration(wall).c_str(), ranks, cpu, 100 * cpu_parts[0] / cpu, 100 * cpu_parts[1] / cpu,
      100 * cpu_parts[2] / cpu, 100 * (cpu - cpu_parts[0] - cpu_parts[1] - cpu_parts[2]) / cpu);
  std::printf("archive: %s (%lld of %lld transfers collective)\n", p.run.output.c_str(),
              static_cast<long long>(io_counts[1]), static_cast<long long>(io_counts[0]));
  for (std::size_t t = 0; t < diverged.size(); ++t) {
    if (diverged[t] >= 0) {
      std::printf(
          "trajectory %zu diverged at step %lld (h = %g): its samples before that are in the "
          "ensemble; consider a smaller simmer.time_step\n",
          t, static_cast<long long>(diverged[t]), p.nhc.time_step);
    }
  }
}

void print_report(const run::Problem& p, const std::vector<run::ChainReport>& t, const RunReport& report) {
  const auto C = t.size();
  const std::string base = p.mode == train::StartMode::retrofit ? "Adam" : "first sample";
  const std::size_t sets = p.scored_sets();
  using Cell = std::function<std::string(int)>;
  const auto row = [&](const std::string& label, const Cell& cell) {
    std::printf("%-42s", label.c_str());
    for (std::size_t s = 0; s < sets; ++s) std::printf(" %20s", cell(static_cast<int>(s)).c_str());
    std::printf("\n");
  };
  const auto base_cell = [&](double ensemble::SetScores::*field, const char* fmt) -> Cell {
    return [&t, field, fmt](int split) {
      const auto [m, sd] = mean_sd(column(t, split, field));
      return format(fmt, m) + " ± " + format(fmt, sd);
    };
  };
  const auto ens_cell = [](const EnsembleReport& e, double ensemble::SetScores::*field, const char* fmt) -> Cell {
    return [&e, field, fmt](int split) { return format(fmt, e.scores[static_cast<std::size_t>(split)].*field); };
  };
  const auto pair = [](const Cell& a, const Cell& b) -> Cell {
    return [a, b](int split) { return a(split) + " / " + b(split); };
  };
  using S = ensemble::SetScores;
  // One block of rows per ensemble: the deep ensemble (retrofit), then the run's own.
  const auto ensemble_rows = [&](const std::string& label, const EnsembleReport& e, const std::string& size) {
    if (p.classification) {
      row(label + " accuracy" + size, ens_cell(e, &S::metric, "%.4f"));
      row(label + " NLL / Brier / ECE", pair(ens_cell(e, &S::nll, "%.3g"), ens_cell(e, &S::brier, "%.3g")));
      row("", ens_cell(e, &S::ece, "%.3g"));
    } else {
      row(label + " MSE" + size, ens_cell(e, &S::metric, "%.5g"));
      row(label + " R²", ens_cell(e, &S::r2, "%.4f"));
      row(label + " Gaussian NLL", ens_cell(e, &S::nll, "%.4g"));
      row(label + " 50/90/95% interval coverage", [&e](int split) {
        const auto& c = e.coverage[static_cast<std::size_t>(split)];
        return format("%.2f", c[0]) + "/" + format("%.2f", c[1]) + "/" + format("%.2f", c[2]);
      });
    }
  };
  std::printf("\n");
  row("", [&](int split) { return p.sets[static_cast<std::size_t>(split)].name; });
  const std::string over = " (mean ± sd, " + std::to_string(C) + ")";
  if (p.classification) {
    row(base + " accuracy" + over, base_cell(&S::metric, "%.4f"));
    row(base + " NLL / Brier", base_cell(&S::nll, "%.3g"));
    row("", base_cell(&S::brier, "%.3g"));
  } else {
    row(base + " MSE" + over, base_cell(&S::metric, "%.5g"));
    row(base + " R²", base_cell(&S::r2, "%.4f"));
    row(base + " Gaussian NLL", base_cell(&S::nll, "%.4g"));
  }
  const EnsembleReport& chosen = report.chosen();
  const EnsembleReport* deep = report.deep();
  if (deep != nullptr && deep != &chosen) {
    ensemble_rows("deep ensemble", *deep, " (" + std::to_string(deep->members) + " Adam nets)");
  }
  const std::string label =
      chosen.stage < 0 ? "deep ensemble" : (p.ladder.empty() ? "ensemble" : "ensemble = " + chosen.name);
  const std::string size = " (" + std::to_string(chosen.members) + (chosen.stage < 0 ? " Adam nets)" : " members)");
  ensemble_rows(label, chosen, size);
  const auto& test = chosen.scores[1];
  if (test.worst_row >= 0) {
    std::printf("largest single test point's share of the ensemble's %s: %.1f%% (row %lld)\n",
                p.classification ? "Brier score" : "squared error", 100.0 * test.worst_share,
                static_cast<long long>(test.worst_row));
  }
  if (!p.ladder.empty()) {
    // The candidates, as /selection holds them.
    const char* metric = p.classification ? "acc" : "MSE";
    std::printf("\ncandidates (%s; %s)\n",
                report.compared
                    ? ("chosen by validation " + std::string(p.select_by == ensemble::SelectBy::nll ? "NLL" : metric) +
                       ", ensemble.select_rule = " + ensemble::to_string(p.select_rule))
                          .c_str()
                    : "not compared: ensemble.select_by = none, the last rung is the run's ensemble",
                "/selection");
    std::printf("  %-14s %10s %9s %8s %10s %22s %10s %9s %9s\n", "candidate", "T", "T/T_Bayes", "members",
                (std::string("val ") + metric).c_str(), "val loss ± se (diff se)",
                (std::string("test ") + metric).c_str(), "test NLL", "drifting");
    for (std::size_t c = 0; c < report.candidates.size(); ++c) {
      const auto& e = report.candidates[c];
      const double val_metric = sets > 2 ? e.scores[2].metric : kNaN;
      std::string loss = "-";
      if (report.compared) {
        loss = format("%.4g", report.selection.loss[c]) + " ± " + format("%.2g", report.selection.stderr_loss[c]) +
               " (" + format("%.2g", report.selection.stderr_difference[c]) + ")";
      }
      std::string drift = "-";
      if (e.stage >= 0) {
        drift = std::to_string(
                    verdict_counts(t, static_cast<std::size_t>(e.stage))[static_cast<std::size_t>(Verdict::drifting)]) +
                "/" + std::to_string(C);
      }
      std::string mark;
      if (static_cast<std::int64_t>(c) == report.selected) mark += "  <- the run's ensemble";
      if (report.compared && c == report.selection.best && static_cast<std::int64_t>(c) != report.selected)
        mark += "  (lowest validation loss)";
      if (report.compared && c == report.selection.one_se && static_cast<std::int64_t>(c) != report.selected)
        mark += "  (one_se's choice)";
      std::printf("  %-14s %10.4g %9.3g %8lld %10s %22s %10s %9.4g %9s%s\n", e.name.c_str(), e.temperature,
                  e.temperature / p.bayes_temperature, static_cast<long long>(e.members),
                  format(p.classification ? "%.4f" : "%.4g", val_metric).c_str(), loss.c_str(),
                  format(p.classification ? "%.4f" : "%.4g", e.scores[1].metric).c_str(), e.scores[1].nll,
                  drift.c_str(), mark.c_str());
    }
  }
  if (report.diagnostics_stage >= 0) {
    // Stationarity, in one line (the stage in /diagnostics).
    const auto stage = static_cast<std::size_t>(report.diagnostics_stage);
    const auto counts = verdict_counts(t, stage);
    const run::ChainReport* example[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
    for (const auto& r : t) {
      auto& e = example[static_cast<int>(r.stages[stage].summary.verdict)];
      if (e == nullptr) e = &r;
    }
    std::string line;
    for (const auto v :
         {Verdict::drifting, Verdict::not_mixed, Verdict::stationary, Verdict::diverged, Verdict::no_members}) {
      const auto i = static_cast<std::size_t>(v);
      if (counts[i] == 0) continue;
      line += (line.empty() ? "" : "; ") + std::to_string(counts[i]) + " " + ensemble::to_string(v);
    }
    const run::ChainReport* shown = example[static_cast<int>(Verdict::drifting)];
    if (shown == nullptr) shown = example[static_cast<int>(Verdict::not_mixed)];
    if (shown == nullptr && !t.empty()) shown = &t.front();
    std::printf("stationarity%s: %s%s\n",
                p.ladder.empty() ? "" : (" of " + p.stage_name(report.diagnostics_stage)).c_str(), line.c_str(),
                shown != nullptr ? (" (e.g. trajectory " + std::to_string(shown->index) + ": " +
                                    shown->stages[stage].summary.reason + ")")
                                       .c_str()
                                 : "");
    std::int64_t slow = 0, first_slow = -1;
    for (const auto& r : t) {
      if (r.slow_to_heat_at < 0) continue;
      ++slow;
      if (first_slow < 0 || r.slow_to_heat_at < first_slow) first_slow = r.slow_to_heat_at;
    }
    if (slow > 0) {
      std::printf(
          "slow to heat: %lld of %zu trajectories had a kinetic temperature below T/100 at a health check (first "
          "at step %lld); they kept sampling (/diagnostics/slow_to_heat_at_step)\n",
          static_cast<long long>(slow), t.size(), static_cast<long long>(first_slow));
    }
    const double temperature = p.stage_temperature(report.diagnostics_stage);
    const auto [rise, stiff] = rise_and_stiff(t, stage);
    std::printf(
        "loss rise of the members over the start point: %.4g (mean over trajectories); harmonic "
        "estimate N_f T/2 = %.4g",
        rise, harmonic_rise(p, temperature));
    if (std::isfinite(stiff) && std::isfinite(stiff_rise(p, stiff, temperature))) {
      std::printf(", %.1f eigenvalues above T at the start give %.4g", stiff, stiff_rise(p, stiff, temperature));
    }
    std::printf("\n");
  }
  std::printf("%s\n", temperature_reading(p).c_str());
  if (!p.classification) {
    const auto [mse, sd] = mean_sd(column(t, 0, &S::metric));
    const double s = std::sqrt(mse);
    const double t_bayes = train::bayes_temperature(p.loss, p.train.rows(), p.outputs, s);
    std::printf("%s's training RMSE s = %.4g would make T_Bayes = %.4g (T = %.3g x that)\n", base.c_str(), s, t_bayes,
                chosen.temperature / t_bayes);
  }
}

std::string temperature_reading(const run::Problem& p) {
  const auto loss = model::to_string(p.loss);
  std::string ts;  // "T = 0.1" or "ladder T = 0.01, 0.03, ..."
  std::string ratio;
  if (p.adam_only) return "Adam alone (simmer.mode = adam): no simmering, the run's ensemble is the deep ensemble";
  if (p.ladder.empty()) {
    ts = "T = " + format("%.4g", p.ramp.target);
    ratio = format("%.3g", p.ramp.target / p.bayes_temperature);
  } else {
    ts = "ladder T = ";
    for (std::size_t k = 0; k < p.ladder.size(); ++k) {
      ts += (k > 0 ? ", " : "") + format("%.4g", p.ladder[k]);
      ratio += (k > 0 ? ", " : "") + format("%.3g", p.ladder[k] / p.bayes_temperature);
    }
  }
  char buf[1024];
  if (std::isfinite(p.bayes_temperature)) {
    const char* formula = p.loss == model::LossKind::cce || p.loss == model::LossKind::bce
                              ? "1/n"
                              : (p.loss == model::LossKind::sse ? "2 s^2" : "2 s^2/n");
    std::snprintf(buf, sizeof buf,
                  "temperature: %s %s %s x the Bayesian temperature T_Bayes = %s = %.4g (%s over n = %lld "
                  "training rows%s); T = T_Bayes samples the posterior",
                  ts.c_str(), p.ladder.empty() ? "is" : "are", ratio.c_str(), formula, p.bayes_temperature,
                  loss.c_str(), static_cast<long long>(p.train.rows()),
                  p.noise_sd > 0.0 ? (", noise sd s = " + format("%.4g", p.noise_sd)).c_str() : "");
  } else {
    std::string sd;
    const std::vector<double> temperatures = p.ladder.empty() ? std::vector<double>{p.ramp.target} : p.ladder;
    for (std::size_t k = 0; k < temperatures.size(); ++k) {
      sd +=
          (k > 0 ? ", " : "") + format("%.4g", train::noise_sd_at(p.loss, p.train.rows(), p.outputs, temperatures[k]));
    }
    std::snprintf(buf, sizeof buf,
                  "temperature: %s (%s) %s the posterior for Gaussian noise of sd s = %s in target units "
                  "(T_Bayes = %s); simmer.noise_sd gives s and T in those units",
                  ts.c_str(), loss.c_str(), p.ladder.empty() ? "is" : "are", sd.c_str(),
                  p.loss == model::LossKind::sse ? "2 s^2" : "2 s^2/n");
  }
  return buf;
}

}  // namespace simmer::mpi
