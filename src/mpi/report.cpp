#include "simmer/mpi/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "simmer/mpi/progress.hpp"
#include "simmer/run/archive_layout.hpp"

namespace simmer::mpi {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kSplits[2] = {"train", "test"};

void save_scores(ByteWriter& w, const ensemble::SetScores& s) { w.vec(s.to_vector()); }

ensemble::SetScores load_scores(ByteReader& r) {
  const auto v = r.doubles();
  if (v.size() != static_cast<std::size_t>(ensemble::SetScores::kFields)) throw Error("report: bad scores record");
  return ensemble::SetScores::from(v.data());
}

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

/// One value per trajectory of the diagnostics named in run::layout::diagnostic_fields().
double diagnostic(const run::ChainReport& r, const std::string& name) {
  const auto& s = r.summary;
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
  if (name == "start_loss") return r.start_loss;
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

double target_temperature(const run::Problem& p) { return p.ramp.target; }

/// N_f T / 2: equipartition's loss rise in a harmonic minimum.
double harmonic_rise(const run::Problem& p) {
  return 0.5 * (static_cast<double>(p.parameters) - p.nhc.dof_offset) * target_temperature(p);
}

/// Means over trajectories of (observed rise of the members' mean loss over the start loss,
/// eigenvalues above T at the start).
std::pair<double, double> rise_and_stiff(const std::vector<run::ChainReport>& t) {
  std::vector<double> rise, stiff;
  for (const auto& r : t) {
    rise.push_back(r.summary.mean_member_loss - r.start_loss);
    stiff.push_back(r.curvature_start.probes > 0 ? r.curvature_start.count_above : kNaN);
  }
  return {mean_sd(rise).first, mean_sd(stiff).first};
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

void EnsembleReport::save(ByteWriter& w) const {
  for (const auto& s : scores) save_scores(w, s);
  for (const auto& c : coverage) w.doubles(c.data(), static_cast<std::int64_t>(c.size()));
  for (const auto& b : block_metric) w.vec(b);
  w.i64(members);
}

EnsembleReport EnsembleReport::load(ByteReader& r) {
  EnsembleReport e;
  for (auto& s : e.scores) s = load_scores(r);
  for (auto& c : e.coverage) {
    const auto v = r.doubles();
    if (v.size() != c.size()) throw Error("report: bad coverage record");
    std::copy(v.begin(), v.end(), c.begin());
  }
  for (auto& b : e.block_metric) b = r.doubles();
  e.members = r.i64();
  return e;
}

void write_report(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& t,
                  const EnsembleReport& e) {
  const auto chains = static_cast<std::int64_t>(t.size());
  const auto fields = score_fields(p.classification);
  // /baseline/<split>_<score> [chain] and their means over trajectories in /metrics.
  for (int split = 0; split < 2; ++split) {
    const std::string sn = kSplits[split];
    for (const auto& [name, field] : fields) {
      const auto values = column(t, split, field);
      f.put("/baseline/" + sn + "_" + name, values, {chains});
      const auto [m, sd] = mean_sd(values);
      f.attribute("/metrics", "baseline_" + sn + "_" + name + "_mean", m);
      f.attribute("/metrics", "baseline_" + sn + "_" + name + "_sd", sd);
      f.attribute("/metrics", "ensemble_" + sn + "_" + name, e.scores[static_cast<std::size_t>(split)].*field);
    }
    const auto& es = e.scores[static_cast<std::size_t>(split)];
    f.attribute("/metrics", "ensemble_" + sn + "_worst_point", static_cast<std::int64_t>(es.worst_row));
    f.attribute("/metrics", "ensemble_" + sn + "_worst_point_share", es.worst_share);
    if (!p.classification) {
      for (std::size_t l = 0; l < kCoverageLevels.size(); ++l) {
        const auto pct = static_cast<int>(std::lround(100 * kCoverageLevels[l]));
        f.attribute("/metrics", "ensemble_" + sn + "_coverage_" + std::to_string(pct),
                    e.coverage[static_cast<std::size_t>(split)][l]);
      }
    }
  }
  // Stationarity in one place: verdict counts, the loss rise against equipartition, T's reading.
  std::int64_t counts[5] = {0, 0, 0, 0, 0};
  for (const auto& r : t) counts[static_cast<int>(r.summary.verdict)] += 1;
  for (const auto v : {ensemble::Verdict::stationary, ensemble::Verdict::not_mixed, ensemble::Verdict::drifting,
                       ensemble::Verdict::diverged, ensemble::Verdict::no_members}) {
    std::string key = "trajectories_" + ensemble::to_string(v);
    std::replace(key.begin(), key.end(), ' ', '_');
    f.attribute("/metrics", key, counts[static_cast<int>(v)]);
  }
  const auto [rise, stiff] = rise_and_stiff(t);
  f.attribute("/metrics", "observed_loss_rise", rise);
  f.attribute("/metrics", "harmonic_loss_rise", harmonic_rise(p));
  f.attribute("/metrics", "harmonic_loss_rise_stiff_modes", 0.5 * stiff * target_temperature(p));
  f.attribute("/metrics", "bayes_temperature", p.bayes_temperature);
  f.attribute("/metrics", "temperature_over_bayes", target_temperature(p) / p.bayes_temperature);

  // /diagnostics: one row per trajectory, and per block of the window.
  f.create_group("/diagnostics");
  const ensemble::VerdictThresholds thresholds;
  f.attribute("/diagnostics", "verdict_rule",
              std::string("drifting: window ballistic ratio >= ballistic_threshold and rms_end/rms_window_start >= "
                          "rms_growth_threshold and (no prior or rms_end > prior_bound x prior rms); not mixed: "
                          "otherwise when the ratio >= ballistic_threshold or rhat > rhat_threshold; else "
                          "stationary (docs/STATIONARITY.md)"));
  f.attribute("/diagnostics", "ballistic_threshold", thresholds.ballistic);
  f.attribute("/diagnostics", "rms_growth_threshold", thresholds.rms_growth);
  f.attribute("/diagnostics", "prior_bound", thresholds.prior_bound);
  f.attribute("/diagnostics", "rhat_threshold", thresholds.rhat);
  f.attribute("/diagnostics", "prior_rms", p.prior_rms);
  f.attribute("/diagnostics", "metric", std::string(p.classification ? "accuracy" : "r2"));
  std::vector<std::pair<std::string, unsigned>> by_chain, by_block, by_chain_block;
  for (const auto& name : run::layout::diagnostic_fields()) {
    std::vector<double> values;
    for (const auto& r : t) values.push_back(diagnostic(r, name));
    f.put("/diagnostics/" + name, values, {chains});
    by_chain.emplace_back("/diagnostics/" + name, 0U);
  }
  std::vector<std::string> verdicts, reasons;
  for (const auto& r : t) {
    verdicts.push_back(ensemble::to_string(r.summary.verdict));
    reasons.push_back(r.summary.reason);
  }
  f.put_strings("/diagnostics/verdict", verdicts);
  f.put_strings("/diagnostics/verdict_reason", reasons);
  const std::int64_t blocks = p.diagnostics.blocks;
  for (int split = 0; split < 2; ++split) {
    const std::string name = std::string("/diagnostics/block_") + kSplits[split] + "_metric";
    std::vector<double> rows;
    for (const auto& r : t) {
      const auto& b = split == 0 ? r.summary.block_train_metric : r.summary.block_test_metric;
      std::vector<double> padded(b);
      padded.resize(static_cast<std::size_t>(blocks), kNaN);
      rows.insert(rows.end(), padded.begin(), padded.end());
    }
    f.put(name, rows, {chains, blocks});
    by_chain_block.emplace_back(name, 0U);
    const std::string pooled = std::string("/diagnostics/pooled_block_") + kSplits[split] + "_metric";
    std::vector<double> pooled_values = e.block_metric[static_cast<std::size_t>(split)];
    pooled_values.resize(static_cast<std::size_t>(blocks), kNaN);
    f.put(pooled, pooled_values, {blocks});
    by_block.emplace_back(pooled, 0U);
  }
  // Block b starts at the window's first step + ceil(b W / B) (DiagnosticsSetup::block_of).
  const std::int64_t window_first = p.run.steps - p.sampling.window;
  std::vector<double> first_step;
  for (std::int64_t b = 0; b < blocks; ++b) {
    first_step.push_back(static_cast<double>(window_first + (b * p.sampling.window + blocks - 1) / blocks));
  }
  f.put("/diagnostics/block_first_step", first_step, {blocks});
  by_block.emplace_back("/diagnostics/block_first_step", 0U);
  std::vector<double> ids(static_cast<std::size_t>(chains));
  std::iota(ids.begin(), ids.end(), 0.0);
  f.put("/diagnostics/chain", ids, {chains});
  std::vector<double> block_ids(static_cast<std::size_t>(blocks));
  std::iota(block_ids.begin(), block_ids.end(), 0.0);
  f.put("/diagnostics/block", block_ids, {blocks});
  for (const auto& [path, axis] : by_chain_block) by_block.emplace_back(path, 1U);
  by_chain.insert(by_chain.end(), by_chain_block.begin(), by_chain_block.end());
  f.attach_scale("/diagnostics/chain", "chain", by_chain);
  f.attach_scale("/diagnostics/block", "block", by_block);
}

PooledScores pooled_scores(const run::Problem& p, const ensemble::PooledEnsemble& pooled,
                           const std::vector<std::vector<unsigned char>>& partials, int rank) {
  PooledScores out;
  if (rank != 0) return out;
  ensemble::PooledDiagnostics diagnostics(run::diagnostics_setup(p));
  for (const auto& bytes : partials) {
    ByteReader one(bytes.data(), bytes.size(), "ensemble partial");
    diagnostics.merge(one);
  }
  EnsembleReport& e = out.report;
  Matrix noise;
  for (int s = 0; s < 2; ++s) {
    const auto& set = p.sets[static_cast<std::size_t>(s)];
    const auto i = static_cast<std::size_t>(s);
    if (p.classification) {
      e.scores[i] = ensemble::score_probabilities(view(diagnostics.probabilities(s)), set.labels);
      e.scores[i].metric = pooled.members(i) > 0 ? ensemble::accuracy(pooled.votes(i).majority(), set.labels) : kNaN;
      out.probability.push_back(diagnostics.probabilities(s));
    } else {
      // mean ± sd with sd² = the members' variance + the ensemble mean's training MSE (noise).
      const Matrix& mean = pooled.means(i).mean();
      if (s == 0) noise = ensemble::residual_variance(view(mean), view(set.y));
      e.scores[i] = ensemble::score_with_noise(view(mean), pooled.means(i).variance(), noise, view(set.y));
      for (std::size_t l = 0; l < kCoverageLevels.size(); ++l)
        e.coverage[i][l] = diagnostics.coverage(s, kCoverageLevels[l]);
      out.coverage.push_back(diagnostics.coverage_counts(s));
    }
    if (pooled.members(i) == 0) {
      const std::vector<double> nan(ensemble::SetScores::kFields, kNaN);
      e.scores[i] = ensemble::SetScores::from(nan.data());  // no members: no ensemble
    }
    e.block_metric[i] = diagnostics.block_metric(s);
  }
  e.members = pooled.members(0);
  return out;
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

std::string temperature_reading(const run::Problem& p) {
  const double t = target_temperature(p);
  const auto loss = model::to_string(p.loss);
  char buf[400];
  if (std::isfinite(p.bayes_temperature)) {
    const char* formula = p.loss == model::LossKind::cce || p.loss == model::LossKind::bce
                              ? "1/n"
                              : (p.loss == model::LossKind::sse ? "2 s^2" : "2 s^2/n");
    std::snprintf(buf, sizeof buf,
                  "temperature: T = %.4g is %.3g x the Bayesian temperature T_Bayes = %s = %.4g (%s over n = %lld "
                  "training rows%s); T = T_Bayes samples the posterior",
                  t, t / p.bayes_temperature, formula, p.bayes_temperature, loss.c_str(),
                  static_cast<long long>(p.train.rows()),
                  p.noise_sd > 0.0 ? (", noise sd s = " + format("%.4g", p.noise_sd)).c_str() : "");
  } else {
    std::snprintf(buf, sizeof buf,
                  "temperature: T = %.4g (%s) is the posterior for Gaussian noise of sd s = %.4g in target units "
                  "(T_Bayes = %s); simmer.noise_sd gives s and T in those units",
                  t, loss.c_str(), train::noise_sd_at(p.loss, p.train.rows(), p.outputs, t),
                  p.loss == model::LossKind::sse ? "2 s^2" : "2 s^2/n");
  }
  return buf;
}

void print_report(const run::Problem& p, const std::vector<run::ChainReport>& t, const EnsembleReport& e) {
  const auto C = t.size();
  const std::string base = p.mode == train::StartMode::retrofit ? "Adam" : "first sample";
  const auto row = [](const std::string& label, const std::string& train, const std::string& test) {
    std::printf("%-38s %20s %20s\n", label.c_str(), train.c_str(), test.c_str());
  };
  const auto base_cell = [&](int split, double ensemble::SetScores::*field, const char* fmt) {
    const auto [m, sd] = mean_sd(column(t, split, field));
    return format(fmt, m) + " ± " + format(fmt, sd);
  };
  const auto ens_cell = [&](int split, double ensemble::SetScores::*field, const char* fmt) {
    return format(fmt, e.scores[static_cast<std::size_t>(split)].*field);
  };
  using S = ensemble::SetScores;
  std::printf("\n");
  row("", "train", "test");
  const std::string over = " (mean ± sd, " + std::to_string(C) + ")";
  const std::string members = " (" + std::to_string(e.members) + " members)";
  if (p.classification) {
    row(base + " accuracy" + over, base_cell(0, &S::metric, "%.4f"), base_cell(1, &S::metric, "%.4f"));
    row("ensemble accuracy" + members, ens_cell(0, &S::metric, "%.4f"), ens_cell(1, &S::metric, "%.4f"));
    row(base + " NLL / Brier", base_cell(0, &S::nll, "%.3g"), base_cell(1, &S::nll, "%.3g"));
    row("", base_cell(0, &S::brier, "%.3g"), base_cell(1, &S::brier, "%.3g"));
    row("ensemble NLL / Brier / ECE", ens_cell(0, &S::nll, "%.3g") + " / " + ens_cell(0, &S::brier, "%.3g"),
        ens_cell(1, &S::nll, "%.3g") + " / " + ens_cell(1, &S::brier, "%.3g"));
    row("", ens_cell(0, &S::ece, "%.3g"), ens_cell(1, &S::ece, "%.3g"));
  } else {
    row(base + " MSE" + over, base_cell(0, &S::metric, "%.5g"), base_cell(1, &S::metric, "%.5g"));
    row(base + " R²", base_cell(0, &S::r2, "%.4f"), base_cell(1, &S::r2, "%.4f"));
    row("ensemble MSE" + members, ens_cell(0, &S::metric, "%.5g"), ens_cell(1, &S::metric, "%.5g"));
    row("ensemble R²", ens_cell(0, &S::r2, "%.4f"), ens_cell(1, &S::r2, "%.4f"));
    row(base + " Gaussian NLL", base_cell(0, &S::nll, "%.4g"), base_cell(1, &S::nll, "%.4g"));
    row("ensemble Gaussian NLL", ens_cell(0, &S::nll, "%.4g"), ens_cell(1, &S::nll, "%.4g"));
    const auto cov = [&](int split) {
      const auto& c = e.coverage[static_cast<std::size_t>(split)];
      return format("%.2f", c[0]) + "/" + format("%.2f", c[1]) + "/" + format("%.2f", c[2]);
    };
    row("coverage of member 50/90/95% intervals", cov(0), cov(1));
  }
  const auto& test = e.scores[1];
  if (test.worst_row >= 0) {
    std::printf("largest single test point's share of the ensemble's %s: %.1f%% (row %lld)\n",
                p.classification ? "Brier score" : "squared error", 100.0 * test.worst_share,
                static_cast<long long>(test.worst_row));
  }
  // Stationarity, in one line.
  std::int64_t counts[5] = {0, 0, 0, 0, 0};
  const run::ChainReport* example[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  for (const auto& r : t) {
    const auto v = static_cast<int>(r.summary.verdict);
    counts[v] += 1;
    if (example[v] == nullptr) example[v] = &r;
  }
  std::string line;
  for (const auto v : {ensemble::Verdict::drifting, ensemble::Verdict::not_mixed, ensemble::Verdict::stationary,
                       ensemble::Verdict::diverged, ensemble::Verdict::no_members}) {
    const int i = static_cast<int>(v);
    if (counts[i] == 0) continue;
    line += (line.empty() ? "" : "; ") + std::to_string(counts[i]) + " " + ensemble::to_string(v);
  }
  const run::ChainReport* shown = example[static_cast<int>(ensemble::Verdict::drifting)];
  if (shown == nullptr) shown = example[static_cast<int>(ensemble::Verdict::not_mixed)];
  if (shown == nullptr && !t.empty()) shown = &t.front();
  std::printf("stationarity: %s%s\n", line.c_str(),
              shown != nullptr
                  ? (" (e.g. trajectory " + std::to_string(shown->index) + ": " + shown->summary.reason + ")").c_str()
                  : "");
  std::int64_t slow = 0, first_slow = -1;
  for (const auto& r : t) {
    if (r.slow_to_heat_at < 0) continue;
    ++slow;
    if (first_slow < 0 || r.slow_to_heat_at < first_slow) first_slow = r.slow_to_heat_at;
  }
  if (slow > 0) {
    std::printf(
        "slow to heat: %lld of %zu trajectories had a kinetic temperature below T/100 at a health check (first at "
        "step %lld); they kept sampling (/diagnostics/slow_to_heat_at_step)\n",
        static_cast<long long>(slow), t.size(), static_cast<long long>(first_slow));
  }
  const auto [rise, stiff] = rise_and_stiff(t);
  std::printf(
      "loss rise of the members over the start point: %.4g (mean over trajectories); harmonic "
      "estimate N_f T/2 = %.4g",
      rise, harmonic_rise(p));
  if (std::isfinite(stiff)) {
    std::printf(", %.1f eigenvalues above T at the start give %.4g", stiff, 0.5 * stiff * target_temperature(p));
  }
  std::printf("\n%s\n", temperature_reading(p).c_str());
  if (!p.classification) {
    const auto [mse, sd] = mean_sd(column(t, 0, &S::metric));
    const double s = std::sqrt(mse);
    const double t_bayes = train::bayes_temperature(p.loss, p.train.rows(), p.outputs, s);
    std::printf("%s's training RMSE s = %.4g would make T_Bayes = %.4g (T = %.3g x that)\n", base.c_str(), s, t_bayes,
                target_temperature(p) / t_bayes);
  }
}

}  // namespace simmer::mpi
