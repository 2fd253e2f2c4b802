// simmer_analyze summary: what a run was, how it did, and whether its trajectories were healthy.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/convergence.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/io/checkpoint_state.hpp"
#include "simmer/io/output_lock.hpp"
#include "simmer/parallel/report.hpp"
#include "simmer/posthoc/commands.hpp"
#include "simmer/posthoc/run_archive.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/budget.hpp"
#include "simmer/run/metrics.hpp"
#include "summary_parts.hpp"

namespace simmer::posthoc {
namespace {

namespace layout = run::layout;
using detail::health;
using detail::printf_string;
using detail::real_attr;
using detail::thermometers;

/// `text` padded with spaces to `width` characters (UTF-8 code points, so "±" and "²" count
/// once), on the left (right-aligned) or the right.
std::string pad(const std::string& text, std::size_t width, bool right_align) {
  std::size_t chars = 0;
  for (const char ch : text) chars += (static_cast<unsigned char>(ch) & 0xC0U) != 0x80U ? 1 : 0;
  const std::string fill(width > chars ? width - chars : 0, ' ');
  return right_align ? fill + text : text + fill;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string text_attr(const io::ArchiveReader& r, const std::string& obj, const std::string& name) {
  return r.has_attribute(obj, name) ? r.attribute_text(obj, name) : std::string("?");
}

std::int64_t rows_of(const io::ArchiveReader& r, const std::string& dataset) {
  return r.exists(dataset) ? r.dims(dataset).front() : 0;
}

/// `damaged`: the /metrics attributes that differ from their checksummed copy, each shown as
/// DAMAGED, never its value.
void metrics_table(const io::ArchiveReader& r, const RunArchive& run, const std::set<std::string>& damaged,
                   std::ostream& out) {
  const auto shown = [&damaged](const std::string& key, const std::string& text) {
    return damaged.count(key) != 0 ? std::string("DAMAGED") : text;
  };
  const bool retrofit = run.config.simmer.mode != cli::SimmerMode::abinitio;  // retrofit, or Adam alone
  const std::string base = retrofit ? "Adam" : "first sample";
  const char* const metrics = layout::kMetrics;
  const std::int64_t members =
      r.has_attribute(metrics, layout::kMembers) ? r.attribute_integer(metrics, layout::kMembers) : 0;
  // The scored sets this archive has (a validation set since data.validation_fraction).
  std::vector<std::string> splits{layout::kTrain, layout::kTest};
  if (r.exists(layout::data_y(layout::kValidation))) splits.emplace_back(layout::kValidation);
  using Cell = std::function<std::string(const std::string&)>;
  const auto row = [&](const std::string& label, const Cell& cell) {
    out << "  " << pad(label, 44, false);
    for (const auto& split : splits) out << " " << pad(cell(split), 20, true);
    out << "\n";
  };
  const auto mean_sd = [&](const std::string& metric, const char* fmt) -> Cell {
    return [&r, metric, fmt, shown](const std::string& split) {
      const double m = real_attr(r, layout::kMetrics, layout::baseline_mean_key(split, metric));
      const double sd = real_attr(r, layout::kMetrics, layout::baseline_sd_key(split, metric));
      return shown(layout::baseline_mean_key(split, metric), printf_string(fmt, m)) + " ± " +
             shown(layout::baseline_sd_key(split, metric), printf_string(fmt, sd));
    };
  };
  const auto ens = [&](const std::string& prefix, const std::string& metric, const char* fmt) -> Cell {
    return [&r, prefix, metric, fmt, shown](const std::string& split) {
      const double v = real_attr(r, layout::kMetrics, layout::score_key(prefix, split, metric));
      return shown(layout::score_key(prefix, split, metric),
                   std::isnan(v) ? std::string("n/a") : printf_string(fmt, v));
    };
  };
  out << "\nmetrics (/metrics; baseline = "
      << (retrofit ? "each trajectory's Adam end point" : "each trajectory's first member") << ", mean ± sd over "
      << run.chains << ")\n";
  row("", [](const std::string& split) { return split; });
  // The run's ensemble (a ladder names the candidate it chose) and, for a retrofit, the deep
  // ensemble of its Adam end points (issue 17; archives before it have none).
  const std::string chosen =
      r.has_attribute(metrics, layout::kEnsembleName) ? r.attribute_text(metrics, layout::kEnsembleName) : "";
  const std::string E = layout::kEnsemblePrefix, D = layout::kDeepEnsemblePrefix;
  const bool deep = r.has_attribute(metrics, layout::score_key(D, layout::kTest, layout::kNll)) &&
                    chosen != layout::kDeepEnsembleName;
  const std::string label = chosen == layout::kDeepEnsembleName                  ? "deep ensemble"
                            : chosen.empty() || chosen == layout::kSimmeringName ? "ensemble"
                                                                                 : "ensemble (" + chosen + ")";
  const std::string ensemble_members =
      " (" + std::to_string(members) + (chosen == layout::kDeepEnsembleName ? " Adam nets)" : " members)");
  const std::string deep_members =
      r.has_attribute(metrics, layout::kDeepEnsembleMembers)
          ? " (" + std::to_string(r.attribute_integer(metrics, layout::kDeepEnsembleMembers)) + " Adam nets)"
          : "";
  if (run.classification) {
    row(base + " accuracy", mean_sd(layout::kAccuracy, "%.4f"));
    if (deep) row("deep ensemble accuracy" + deep_members, ens(D, layout::kAccuracy, "%.4f"));
    row(label + " accuracy" + ensemble_members, ens(E, layout::kAccuracy, "%.4f"));
  } else {
    row(base + " MSE", mean_sd(layout::kMse, "%.4g"));
    row(base + " R²", mean_sd(layout::kR2, "%.4f"));
    if (deep) {
      row("deep ensemble MSE" + deep_members, ens(D, layout::kMse, "%.4g"));
      row("deep ensemble R²", ens(D, layout::kR2, "%.4f"));
    }
    row(label + " MSE" + ensemble_members, ens(E, layout::kMse, "%.4g"));
    row(label + " R²", ens(E, layout::kR2, "%.4f"));
  }
  // Uncertainty quality (issue 10): archives written before it have none of these.
  if (!r.has_attribute(metrics, layout::score_key(E, layout::kTest, layout::kNll))) return;
  using KeyOf = std::string (*)(std::string_view, std::string_view, double);
  const auto coverage = [&](const std::string& prefix, KeyOf key) {
    return [&, prefix, key](const std::string& split) {
      std::string cells;
      for (const double level : ensemble::kCoverageLevels) {
        if (!cells.empty()) cells += '/';
        const double v = real_attr(r, metrics, key(prefix, split, level));
        cells += shown(key(prefix, split, level), std::isnan(v) ? std::string("n/a") : printf_string("%.2f", v));
      }
      return cells;
    };
  };
  if (run.classification) {
    row(base + " NLL", mean_sd(layout::kNll, "%.4g"));
    if (deep) row("deep ensemble NLL", ens(D, layout::kNll, "%.4g"));
    row(label + " NLL (mean probabilities)", ens(E, layout::kNll, "%.4g"));
    row(base + " Brier", mean_sd(layout::kBrier, "%.4g"));
    if (deep) row("deep ensemble Brier", ens(D, layout::kBrier, "%.4g"));
    row(label + " Brier", ens(E, layout::kBrier, "%.4g"));
    row(base + " ECE (10 bins)", mean_sd(layout::kEce, "%.4g"));
    if (deep) row("deep ensemble ECE", ens(D, layout::kEce, "%.4g"));
    row(label + " ECE (10 bins)", ens(E, layout::kEce, "%.4g"));
  } else {
    row(base + " Gaussian NLL", mean_sd(layout::kNll, "%.4g"));
    if (deep) row("deep ensemble Gaussian NLL", ens(D, layout::kNll, "%.4g"));
    row(label + " Gaussian NLL", ens(E, layout::kNll, "%.4g"));
    // Archives before issue 26 hold the members' coverage under coverage_<level> and no noise.
    const bool predictive = r.has_attribute(metrics, layout::noise_variance_key(E));
    if (!predictive) {
      if (deep) row("deep ensemble members' 50/90/95% coverage", coverage(D, layout::coverage_key));
      row("members' 50/90/95% coverage (no noise)", coverage(E, layout::coverage_key));
    } else {
      const auto noise = [&](const std::string& prefix) {
        return printf_string("%.4g", std::sqrt(real_attr(r, metrics, layout::noise_variance_key(prefix)))) + " (" +
               r.attribute_text(metrics, layout::noise_source_key(prefix)) + " residuals)";
      };
      if (deep) row("deep ensemble 50/90/95% predictive coverage", coverage(D, layout::coverage_key));
      row(label + " 50/90/95% predictive coverage", coverage(E, layout::coverage_key));
      row("  members alone (no noise)", coverage(E, layout::mean_coverage_key));
      if (deep && r.has_attribute(metrics, layout::noise_variance_key(D))) {
        out << "  noise sd: deep ensemble " << noise(D) << ", " << label << " " << noise(E) << "\n";
      } else {
        out << "  noise sd: " << noise(E) << "\n";
      }
    }
  }
  const double share = real_attr(r, metrics, layout::worst_point_share_key(E, layout::kTest));
  if (!std::isnan(share)) {
    out << "  largest single test point's share of the ensemble's "
        << (run.classification ? "Brier score" : "squared error") << ": " << printf_string("%.1f", 100 * share)
        << "% (row " << r.attribute_integer(metrics, layout::worst_point_key(E, layout::kTest)) << ")\n";
  }
}

/// /selection: a ladder's candidates (the deep ensemble and every rung) and the run's choice.
void candidates(const io::ArchiveReader& r, const RunArchive& run, std::ostream& out) {
  const std::string candidate = layout::selection_column(layout::kCandidate);
  if (!r.exists(candidate)) return;
  const auto names = r.read_strings(candidate);
  const auto read = [&](const std::string& name) {
    const std::string path = layout::selection_column(name);
    return r.exists(path) ? r.read_doubles(path) : std::vector<double>(names.size(), std::nan(""));
  };
  const char* const metric = layout::main_score(run.classification);
  const auto t = read(layout::kTemperature), over = read(layout::kTemperatureOverBayes),
             members = read(layout::kMembers), val = read(layout::baseline_column(layout::kValidation, metric)),
             val_nll = read(layout::baseline_column(layout::kValidation, layout::kNll)),
             loss = read(layout::kValidationLoss), se = read(layout::kValidationLossStderr),
             diff_se = read(layout::kValidationLossStderrDifference),
             test = read(layout::baseline_column(layout::kTest, metric)),
             test_nll = read(layout::baseline_column(layout::kTest, layout::kNll)),
             drifting = read(layout::kTrajectoriesDrifting);
  const char* const selection = layout::kSelection;
  const auto index = [&](const char* name) {
    return r.has_attribute(selection, name) ? r.attribute_integer(selection, name) : std::int64_t{-1};
  };
  const std::int64_t selected = index(layout::kSelected), best = index(layout::kBest), one_se = index(layout::kOneSe);
  out << "\ncandidates (/selection; chosen by " << text_attr(r, selection, layout::kSelectBy) << ", rule "
      << text_attr(r, selection, layout::kSelectRule);
  if (r.has_attribute(selection, layout::kValidationRows)) {
    out << ", " << r.attribute_integer(selection, layout::kValidationRows) << " validation rows";
  }
  out << ")\n";
  char buf[300];
  const std::string m = run.classification ? "acc" : "MSE";
  std::snprintf(buf, sizeof buf, "  %-14s %10s %9s %8s %9s %9s %24s %9s %9s %8s\n", "candidate", "T", "T/T_Bayes",
                "members", ("val " + m).c_str(), "val NLL", "val loss ± se (diff se)", ("test " + m).c_str(),
                "test NLL", "drifting");
  out << buf;
  for (std::size_t c = 0; c < names.size(); ++c) {
    const std::string loss_text = std::isfinite(loss[c])
                                      ? printf_string("%.4g", loss[c]) + " ± " + printf_string("%.2g", se[c]) + " (" +
                                            printf_string("%.2g", diff_se[c]) + ")"
                                      : "-";
    std::string mark;
    const auto i = static_cast<std::int64_t>(c);
    if (i == selected) mark += "  <- the run's ensemble";
    if (i == best && i != selected) mark += "  (lowest validation loss)";
    if (i == one_se && i != selected) mark += "  (one_se's choice)";
    const auto number = [](const char* format, double v) { return std::isfinite(v) ? printf_string(format, v) : "-"; };
    std::snprintf(buf, sizeof buf, "  %-14s %10s %9s %8.0f %9.4g %9.4g %24s %9.4g %9.4g %8s%s\n", names[c].c_str(),
                  number("%.4g", t[c]).c_str(), number("%.3g", over[c]).c_str(), members[c], val[c], val_nll[c],
                  loss_text.c_str(), test[c], test_nll[c],
                  std::isfinite(drifting[c]) ? printf_string("%.0f", drifting[c]).c_str() : "-", mark.c_str());
    out << buf;
  }
  // The stacking weights (a ladder with a validation set; the stacked candidate is the last row).
  const std::string weight_path = layout::selection_column(layout::kStackingWeight);
  if (!r.exists(weight_path)) return;
  const bool chosen = selected >= 0 && static_cast<std::size_t>(selected) < names.size() &&
                      names[static_cast<std::size_t>(selected)] == layout::kStackedName;
  out << parallel::stacking_line(names, r.read_doubles(weight_path),
                                 r.has_attribute(selection, layout::kStackingSweeps)
                                     ? r.attribute_integer(selection, layout::kStackingSweeps)
                                     : std::int64_t{0},
                                 chosen);
}

/// Whether the run's ensemble (/metrics) is the stacked candidates.
bool stacked_ensemble(const io::ArchiveReader& r) {
  return r.has_attribute(layout::kMetrics, layout::kEnsembleName) &&
         r.attribute_text(layout::kMetrics, layout::kEnsembleName) == layout::kStackedName;
}

/// /diagnostics: each trajectory's drift numbers and verdict, as the run judged them.
void stationarity(const io::ArchiveReader& r, const RunArchive& run, std::ostream& out) {
  // A ladder's /diagnostics are one rung's (the chosen one, or the stacked candidates' heaviest).
  const std::string stage = !run.config.simmer.ladder.rungs.empty() && r.exists(layout::kDiagnostics) &&
                                    r.has_attribute(layout::kDiagnostics, layout::kStage)
                                ? " of " + r.attribute_text(layout::kDiagnostics, layout::kStage)
                                : "";
  out << "\nstationarity" << stage << " (/diagnostics; verdicts and thresholds: docs/STATIONARITY.md)\n";
  const auto path = [](const std::string& name) { return layout::join(layout::kDiagnostics, name); };
  if (!r.exists(path(layout::kVerdict))) {
    out << "  n/a: this archive predates the drift diagnostics (or the run did not finish)\n";
    return;
  }
  const auto read = [&](const std::string& name) {
    return r.exists(path(name)) ? r.read_doubles(path(name))
                                : std::vector<double>(static_cast<std::size_t>(run.chains), std::nan(""));
  };
  const auto verdict = r.read_strings(path(layout::kVerdict));
  const auto ratio = read(layout::kWindowBallisticRatio), whole = read(layout::kBallisticRatio),
             rms0 = read(layout::kRmsWindowStart), rms1 = read(layout::kRmsEnd), top = read(layout::kMaxAbsEnd),
             rhat = read(layout::kRhat), median = read(layout::kMemberTestMetricMedian),
             q25 = read(layout::kMemberTestMetricQ25), q75 = read(layout::kMemberTestMetricQ75),
             distance = read(layout::kDistance);
  const std::string block_test = path(layout::block_metric(layout::kTest));
  const auto blocks = r.exists(block_test) ? r.dims(block_test).back() : 0;
  const auto block = r.exists(block_test) ? r.read_doubles(block_test) : std::vector<double>();
  const std::string metric = run.classification ? "accuracy" : "R²";
  char buf[400];
  std::snprintf(buf, sizeof buf, "  %5s %-11s %8s %8s %17s %9s %7s %24s  %s\n", "chain", "verdict", "ratio", "(run)",
                "rms window->end", "max|x|", "R̂", ("member test " + metric + " [q25, q75]").c_str(),
                ("ensemble test " + metric + " per block").c_str());
  out << buf;
  // The rows' trajectories (a parallel ladder's rung has every K-th; older archives: the row).
  const std::string chain_path = layout::join(layout::kDiagnostics, layout::kChainAxis);
  const auto chain = r.exists(chain_path) ? r.read_doubles(chain_path) : std::vector<double>();
  std::map<std::string, int> counts;
  for (std::size_t c = 0; c < verdict.size(); ++c) {
    counts[verdict[c]] += 1;
    std::string blocks_text;
    for (std::int64_t b = 0; b < blocks; ++b) {
      if (b > 0) blocks_text += ' ';
      blocks_text += printf_string("%.3g", block[c * static_cast<std::size_t>(blocks) + static_cast<std::size_t>(b)]);
    }
    std::snprintf(buf, sizeof buf, "  %5zu %-11s %8.3f %8.3f %8.3g -> %-6.3g %9.3g %7.3f %8.4f [%.4f, %.4f]  %s\n",
                  c < chain.size() ? static_cast<std::size_t>(chain[c]) : c, verdict[c].c_str(), ratio[c], whole[c],
                  rms0[c], rms1[c], top[c], rhat[c], median[c], q25[c], q75[c], blocks_text.c_str());
    out << buf;
  }
  const std::string pooled_block_test = path(layout::pooled_block_metric(layout::kTest));
  if (r.exists(pooled_block_test)) {
    std::string pooled;
    for (const double v : r.read_doubles(pooled_block_test)) {
      if (!pooled.empty()) pooled += ' ';
      pooled += printf_string("%.4g", v);
    }
    out << "  pooled ensemble, test " << metric << " per block of the window: " << pooled << "\n";
  }
  std::string line;
  for (const auto& [name, n] : counts) {
    if (!line.empty()) line += ", ";
    line += std::to_string(n) + " " + name;
  }
  out << "  verdicts: " << line << "\n";
  std::vector<ensemble::Verdict> verdicts;
  for (const auto& v : verdict) {  // a name this build does not know counts as no verdict
    verdicts.push_back(ensemble::kVerdictNames.contains(v) ? ensemble::kVerdictNames.parse(v)
                                                           : ensemble::Verdict::no_members);
  }
  const std::string window = ensemble::window_advice(run.config.ensemble, rhat, verdicts);
  if (!window.empty()) out << "  " << window << "\n";
  thermometers(read(layout::kTimeStep), read(layout::kTemperature), read(layout::kKineticTemperature),
               read(layout::kConfigurationalTemperature), read(layout::kConfigurationalTemperatureStderr), chain, out);
  if (r.has_attribute(layout::kDiagnostics, layout::series_bulk_ess("train_loss"))) {
    // Every member's series (not only the stored draws), pooled over the trajectories.
    const double wall = real_attr(r, layout::kRoot, layout::kWallSeconds);
    out << "  member series (every member; rank-normalised R̂, bulk ESS, per second of the run's "
        << printf_string("%.1f", wall) << " s):";
    std::string sep = " ";
    for (const std::string& name : layout::member_series_names()) {
      if (!r.has_attribute(layout::kDiagnostics, layout::series_bulk_ess(name))) continue;
      const double bulk = real_attr(r, layout::kDiagnostics, layout::series_bulk_ess(name));
      out << sep << name << " "
          << ensemble::format_diagnostic(real_attr(r, layout::kDiagnostics, layout::series_rank_rhat(name)), 3) << ", "
          << ensemble::format_diagnostic(bulk, 0) << ", " << printf_string("%.3g", bulk / wall) << "/s";
      sep = "; ";
    }
    out << " (point_<j>: " << (run.classification ? "log-probability of the true class" : "the prediction")
        << " at fixed test rows)\n";
  }
  const double rise = real_attr(r, layout::kMetrics, layout::kObservedLossRise);
  if (!std::isnan(rise)) {
    out << "  loss rise of the members over the start: " << printf_string("%.4g", rise)
        << "; harmonic estimate N_f T/2 = "
        << printf_string("%.4g", real_attr(r, layout::kMetrics, layout::kHarmonicLossRise));
    const auto stiff = read(layout::kEigenvaluesAboveTStart);
    double mean = 0.0;
    std::size_t n = 0;
    for (const double v : stiff) {
      if (std::isfinite(v)) {
        mean += v;
        ++n;
      }
    }
    // As the run prints it: only where the eigenvalues were counted above this stage's T (the
    // ramp's target, or a ladder's first rung), which is where their harmonic rise is finite.
    const double stiff_rise = real_attr(r, layout::kMetrics, layout::kHarmonicLossRiseStiffModes);
    if (n > 0 && std::isfinite(stiff_rise)) {
      out << ", " << printf_string("%.1f", mean / static_cast<double>(n)) << " of " << run.parameters
          << " Hessian eigenvalues above T at the start give " << printf_string("%.4g", stiff_rise);
    }
    out << "\n";
  }
  const double over = real_attr(r, layout::kMetrics, layout::kTemperatureOverBayes);
  const double bayes = real_attr(r, layout::kMetrics, layout::kBayesTemperature);
  if (std::isfinite(over)) {
    out << "  T = " << printf_string("%.3g", over)
        << " x the Bayesian temperature T_Bayes = " << printf_string("%.4g", bayes) << "\n";
  } else if (std::isfinite(bayes) && stacked_ensemble(r)) {
    out << "  T: the stacked candidates mix the rungs' temperatures (each rung's T/T_Bayes and share: the "
           "candidates above); the Bayesian temperature T_Bayes = "
        << printf_string("%.4g", bayes) << "\n";
  }
}

/// After "N Adam epochs": what adam.keep = best_validation kept ("" with keep = last).
std::string adam_kept(const cli::Config& c) {
  if (c.adam.keep != train::AdamKeep::best_validation) return {};
  return c.adam.patience > 0 ? " at most (adam.patience = " + std::to_string(c.adam.patience) +
                                   " ends a network that many epochs after its lowest validation loss, the epoch it "
                                   "keeps)"
                             : " (each network kept at its lowest validation loss)";
}

/// The largest finite value of a dataset (the last step a run wrote), or -1.
std::int64_t last_finite(const io::ArchiveReader& r, const std::string& dataset) {
  if (!r.exists(dataset)) return -1;
  double last = -1.0;
  for (const double v : r.read_doubles(dataset)) {
    if (std::isfinite(v)) last = std::max(last, v);
  }
  return static_cast<std::int64_t>(last);
}

/// The rungs a sequential ladder runs one after the other (1 without a ladder, or with parallel
/// rungs): its steps are counted through them.
std::int64_t sequential_rungs(const cli::Config& c) {
  if (c.simmer.ladder.rungs.empty() || c.simmer.ladder.mode == run::LadderMode::parallel) return 1;
  return static_cast<std::int64_t>(c.simmer.ladder.rungs.size());
}

/// Why an archive whose run has not ended is incomplete, and what can be done: whether the run
/// still holds its lock, how far the archive got, and where its checkpoint would resume.
std::string incomplete_reason(const io::ArchiveReader& r, const std::string& archive, const std::string& status,
                              std::int64_t steps, std::int64_t rungs) {
  std::string why;
  const io::LockHolder lock = io::OutputLock::holder(archive);
  if (layout::is_stopped(status)) {
    why = "the run was stopped by a signal";
  } else if (lock.state == io::LockHolder::State::running) {
    why = "the run is still going (" + lock.text() + " holds its lock)";
  } else if (lock.state == io::LockHolder::State::gone) {
    why = "the run was killed (its lock names " + lock.text() + ", which is gone)";
  } else if (lock.state == io::LockHolder::State::elsewhere) {
    why = "the run was killed, or is still going" + (lock.host.empty() ? std::string() : " on " + lock.text());
  } else {
    why = "the run was killed, or is still going: it never recorded an end";
  }
  const std::int64_t written = last_finite(r, layout::kSampleStep);
  // A sequential ladder counts its steps through the rungs: say which rung, and the step in it.
  const auto step_text = [&](std::int64_t step) {
    if (rungs <= 1) return "step " + std::to_string(step) + " of " + std::to_string(steps);
    const std::int64_t rung = std::min(step / steps, rungs - 1);
    return "step " + std::to_string(step - rung * steps) + " of " + std::to_string(steps) + " of rung " +
           std::to_string(rung + 1) + " of " + std::to_string(rungs);
  };
  why += written < 0 ? "; it holds no stored draw yet" : "; its last stored draw is from " + step_text(written);
  const std::string checkpoint = archive + ".ckpt";
  std::error_code ec;
  if (!std::filesystem::exists(checkpoint, ec)) {
    return why + "; there is no checkpoint '" + checkpoint + "' to resume from (run it again)";
  }
  try {
    const io::RunCheckpoint c = io::load_checkpoint(checkpoint);
    const std::string id = r.has_attribute(layout::kRoot, layout::kRunId)
                               ? r.attribute_text(layout::kRoot, layout::kRunId)
                               : std::string();
    if (!id.empty() && c.run_id != id) {
      return why + "; the checkpoint '" + checkpoint + "' belongs to another run (" + c.run_id + ", this one is " + id +
             ")";
    }
    const std::string at = c.in_adam() ? "Adam epoch " + std::to_string(c.adam_epoch) : step_text(c.step);
    if (lock.state == io::LockHolder::State::running) return why + "; its last checkpoint is at " + at;
    return why + "; the run stopped at " + at + " (its last checkpoint): resume with mpirun ... simmer_mpi --resume " +
           archive;
  } catch (const std::exception& e) {
    return why + "; its checkpoint cannot be resumed: " + e.what();
  }
}

int summary_here(const std::string& archive, std::ostream& out) {
  const io::ArchiveReader r(archive);
  // A run sets "running" at creation and its final status at the end; none at all is an archive
  // written before the run set one, by a run that never ended.
  const std::string status = r.has_attribute(layout::kRoot, layout::kStatus)
                                 ? r.attribute_text(layout::kRoot, layout::kStatus)
                                 : std::string();
  // Damage first, before anything is explained from it (an archive a run may still be writing is
  // not read back: its chunks can be half written). The stored draws, which summary does not read,
  // are left to verify.
  ArchiveDamage damage;
  if (status != layout::kStatusRunning)
    damage = find_damage(r, [](const std::string& path) { return path.rfind("/posterior/", 0) != 0; });
  if (!damage.lines.empty()) {
    out << "DAMAGED   " << damage.lines.size()
        << " problem(s) in what summary reads: what follows may be wrong wherever it reads them (simmer_analyze "
           "verify "
        << archive << " checks the stored draws too)\n";
    for (const auto& line : damage.lines) out << "DAMAGED   " << line << "\n";
    out.flush();
  }
  const int code = damage.lines.empty() ? 0 : kVerifyDamaged;
  const RunArchive run = load_run(r);
  const cli::Config& c = run.config;
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(archive, ec);

  const bool incomplete = status.empty() || status == layout::kStatusRunning || layout::is_stopped(status);
  out << "archive   " << archive << " (" << (ec ? std::string("?") : run::human_bytes(static_cast<std::int64_t>(bytes)))
      << "): simmer " << text_attr(r, layout::kRoot, layout::kSimmerVersion) << ", created "
      << text_attr(r, layout::kRoot, layout::kCreatedAt)
      << (incomplete ? ", status: INCOMPLETE" : ", status '" + status + "'") << "\n";
  if (incomplete)
    out << "status    incomplete: " << incomplete_reason(r, archive, status, c.run.steps, sequential_rungs(c)) << "\n";
  if (r.has_attribute(layout::kRoot, layout::kMergedFrom)) {
    out << "merged    " << r.attribute_text(layout::kRoot, layout::kMergedFrom) << "\n";
  }

  std::string source(cli::kDataSourceNames.name(c.data.source));
  if (!c.data.path.empty()) source += " '" + c.data.path + "'";
  out << "data      " << source << ": " << (run.classification ? "classification" : "regression") << ", "
      << run.feature_names.size() << " feature(s) ";
  if (run.feature_names.size() <= 8)
    out << join(run.feature_names, ",");
  else
    out << run.feature_names.front() << ".." << run.feature_names.back();
  out << " -> " << join(run.target_names, ",");
  if (run.classification) out << " (" << run.class_names.size() << " classes: " << join(run.class_names, ", ") << ")";
  out << "; " << rows_of(r, layout::data_x(layout::kTrain)) << " train / " << rows_of(r, layout::data_x(layout::kTest))
      << " test rows";
  if (r.exists(layout::data_x(layout::kValidation))) {
    out << " / " << rows_of(r, layout::data_x(layout::kValidation)) << " validation rows";
  }
  if (r.exists(layout::data_x(layout::kPoints)))
    out << ", " << rows_of(r, layout::data_x(layout::kPoints)) << " extra points";
  out << "\n";
  // What loading dropped (/data attributes; archives before the reasons have only the counts).
  if (r.has_attribute(layout::kData, layout::kRowsDroppedReasons)) {
    out << "          " << r.attribute_text(layout::kData, layout::kRowsDroppedReasons) << "\n";
  } else if (r.has_attribute(layout::kData, layout::kRowsDropped) &&
             r.attribute_integer(layout::kData, layout::kRowsDropped) > 0) {
    out << "          " << r.attribute_integer(layout::kData, layout::kRowsDropped) << " of "
        << (r.has_attribute(layout::kData, layout::kRowsRead)
                ? std::to_string(r.attribute_integer(layout::kData, layout::kRowsRead))
                : std::string("?"))
        << " rows dropped (missing values)\n";
  }
  out << "model     " << c.model.architecture << ", " << model::to_string(c.model.activation) << " -> "
      << model::to_string(c.model.output) << ", loss " << model::to_string(cli::loss_of(c)) << ", init "
      << model::to_string(c.model.init) << ", " << run.parameters << " parameters\n";
  if (c.simmer.mode == cli::SimmerMode::adam) {
    out << "sampling  Adam alone (simmer.mode = adam: the deep ensemble), " << run.chains << " trajectories × "
        << c.adam.epochs << " Adam epochs" << adam_kept(c);
  } else {
    out << "sampling  " << cli::kSimmerModeNames.name(c.simmer.mode) << ", " << run.chains << " trajectories × ";
    if (!c.simmer.ladder.rungs.empty()) {
      out << c.simmer.ladder.rungs.size() << " rungs"
          << (c.simmer.ladder.mode == run::LadderMode::parallel ? " side by side" : "") << " × ";
    }
    out << c.run.steps << " steps, h = ";
    if (c.simmer.time_step) {
      out << *c.simmer.time_step;
    } else {
      out << "auto (" << c.simmer.auto_step.fraction
          << " of the measured limit; each trajectory's in /diagnostics/time_step)";
    }
    const double limit = real_attr(r, layout::kRoot, layout::kTimeStepLimit);
    // The margin: h sqrt(lambda_max) / 2 = h / limit (1 at the leapfrog limit; the step's slack).
    if (!std::isnan(limit) && c.simmer.time_step) {
      out << " (stability limit " << printf_string("%.4g", limit) << ", h at "
          << printf_string("%.3g", 100.0 * *c.simmer.time_step / limit) << "% of it)";
    }
    if (c.simmer.mode == cli::SimmerMode::retrofit)
      out << ", after " << c.adam.epochs << " Adam epochs" << adam_kept(c);
  }
  out << ", seed " << c.run.seed;
  if (r.exists(layout::kConfig) && r.has_attribute(layout::kConfig, layout::kRunSeeds))
    out << " (merged: " << r.attribute_text(layout::kConfig, layout::kRunSeeds) << ")";
  out << "\n";
  const std::string unit = c.simmer.temperature_unit == cli::TemperatureUnit::posterior ? " x T_Bayes" : "";
  if (c.simmer.mode == cli::SimmerMode::adam) {
    // no temperature
  } else if (!c.simmer.ladder.rungs.empty()) {
    std::string rungs;
    for (const double t : c.simmer.ladder.rungs) rungs += (rungs.empty() ? "" : ", ") + printf_string("%g", t);
    out << "T         ladder " << rungs << unit
        << (c.simmer.ladder.mode == run::LadderMode::parallel
                ? " (side by side: trajectory i at rung i mod " + std::to_string(c.simmer.ladder.rungs.size()) +
                      (c.simmer.ladder.exchange_every > 0
                           ? ", replica exchange every " + std::to_string(c.simmer.ladder.exchange_every) + " steps)"
                           : ")")
                : " (one stage of " + std::to_string(c.run.steps) + " steps each, coldest first)")
        << "\n";
  } else if (c.simmer.dT == 0.0 || c.simmer.T_initial == c.simmer.T_target) {
    out << "T         constant " << c.simmer.T_target << unit << "\n";
  } else {
    out << "T         " << c.simmer.T_initial << " -> " << c.simmer.T_target << " by " << c.simmer.dT << unit
        << " every " << c.simmer.every << " steps\n";
  }
  // /metrics is written at the end of a run; /ensemble/<set> at every gather.
  std::int64_t members =
      r.has_attribute(layout::kMetrics, layout::kMembers) ? r.attribute_integer(layout::kMetrics, layout::kMembers) : 0;
  const std::string gathered = run.sets.empty() ? std::string() : layout::ensemble_group(run.sets.front());
  if (incomplete && !gathered.empty() && r.has_attribute(gathered, layout::kMembers)) {
    members = r.attribute_integer(gathered, layout::kMembers);
  }
  if (incomplete && !c.simmer.ladder.rungs.empty() && !run.sets.empty()) {
    // A ladder run writes /ensemble at its end; during the run each rung's members are in
    // /ladder/rung_<k>.
    members = 0;
    for (std::size_t k = 0; k < c.simmer.ladder.rungs.size(); ++k) {
      const std::string g =
          layout::join(layout::ladder_group(layout::rung_name(static_cast<std::int64_t>(k))), run.sets.front());
      if (r.exists(g) && r.has_attribute(g, layout::kMembers)) members += r.attribute_integer(g, layout::kMembers);
    }
  }
  out << "ensemble  window " << c.ensemble.window << ", stride " << c.ensemble.stride;
  if (c.ensemble.count > 0) out << ", count " << c.ensemble.count;
  if (c.ensemble.fraction > 0) out << ", fraction " << c.ensemble.fraction;
  out << ": " << members << " members" << (incomplete ? " gathered so far" : "");
  if (stacked_ensemble(r) && !incomplete) {
    out << " (the stacked candidates': every member of each candidate with a share)";
  } else if (run.chains > 0) {
    out << " (" << members / run.chains << " per trajectory)";
  }
  out << "\n";
  const auto written = written_draws(r, run);
  const double value_bytes = run.store_type == io::Type::f32 ? 4.0 : 8.0;
  out << "stored    " << run.chains << " × " << run.draws << " draws ("
      << (c.ensemble.store.every == 1 ? std::string("every member")
                                      : "every " + std::to_string(c.ensemble.store.every) + "th member")
      << ", " << (run.store_type == io::Type::f32 ? "float32" : "float64") << ", "
      << run::human_bytes(
             static_cast<std::int64_t>(value_bytes * static_cast<double>(run.chains * run.draws * run.parameters)))
      << "), " << written.size() << " written";
  if (r.exists(layout::kTraceStep)) out << "; trace " << r.dims(layout::kTraceStep).back() << " records per trajectory";
  out << "\n";
  const double wall = real_attr(r, layout::kRoot, layout::kWallSeconds);
  if (!std::isnan(wall)) {
    out << "run       " << printf_string("%.1f", wall) << " s wall on "
        << (r.has_attribute(layout::kRoot, layout::kMpiRanks) ? r.attribute_integer(layout::kRoot, layout::kMpiRanks)
                                                              : 0)
        << " rank(s)\n";
  }

  if (incomplete) {
    // /metrics and /diagnostics are written when a run ends: what is there is the draws so far.
    out << "\nmetrics and stationarity: n/a until the run ends (its /metrics and /diagnostics are written "
           "then)\n";
    health(r, run, out);
    return code;
  }
  std::set<std::string> damaged;
  for (const auto& a : r.attribute_mismatches(layout::kMetrics)) {
    if (a.name.empty()) continue;
    damaged.insert(a.name);
    out << "WARNING   " << layout::kMetrics << "@" << a.name << " differs from its checksummed copy: damaged on disk, "
        << "shown as DAMAGED below (simmer_analyze verify lists the damage)\n";
  }
  metrics_table(r, run, damaged, out);
  candidates(r, run, out);
  if (c.simmer.mode == cli::SimmerMode::adam) return code;  // no simmering: no draws, no drift
  health(r, run, out);
  stationarity(r, run, out);
  return code;
}

}  // namespace

int summary(const std::string& archive, std::ostream& out) {
  return in_child(archive, out, [&](std::ostream& o) { return summary_here(archive, o); });
}

}  // namespace simmer::posthoc
