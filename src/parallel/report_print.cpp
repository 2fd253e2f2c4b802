// The end of a run as printed: the final table of metrics, candidates and verdicts, the footer
// with the time spent, and the temperature's posterior reading (report.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "report_parts.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/parallel/progress.hpp"
#include "simmer/parallel/report.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/metrics.hpp"
#include "simmer/train/configurational.hpp"

namespace simmer::parallel {
namespace {

using namespace detail;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Verdict = ensemble::Verdict;

/// The window's thermometers of stage `stage` over its trajectories: the step, T_kin/T and
/// T_conf/T (range over the trajectories, and their mean with its standard error over the
/// trajectories), and a warning naming the trajectories whose T_conf/T is off by more than
/// train::kConfigurationalTolerance plus twice its own standard error (the verdict's rule).
/// A window too short for one T_conf sample says so (simmer.configurational_every > the window).
void print_thermometers(const run::Problem& p, const std::vector<run::ChainReport>& at_stage, std::size_t stage) {
  double h_lo = kNaN, h_hi = kNaN, k_lo = kNaN, k_hi = kNaN, c_lo = kNaN, c_hi = kNaN;
  const auto widen = [](double v, double& lo, double& hi) {
    if (!std::isfinite(v)) return;
    lo = std::isnan(lo) ? v : std::min(lo, v);
    hi = std::isnan(hi) ? v : std::max(hi, v);
  };
  std::int64_t off = 0, lowest = -1, highest = -1;  // trajectories off by more than the tolerance
  double low = kNaN, high = kNaN;
  double sum = 0.0, sum_sq = 0.0;
  std::int64_t count = 0;
  for (const auto& r : at_stage) {
    const auto& s = r.stages[stage].summary;
    widen(s.time_step, h_lo, h_hi);
    widen(s.kinetic_temperature / s.target_temperature, k_lo, k_hi);
    const double c = s.configurational_ratio();
    widen(c, c_lo, c_hi);
    if (std::isfinite(c)) {
      sum += c;
      sum_sq += c * c;
      ++count;
    }
    if (train::configurational_off(c, s.configurational_stderr / s.target_temperature)) {
      ++off;
      if (!(c >= low)) {
        low = c;
        lowest = r.index;
      }
      if (!(c <= high)) {
        high = c;
        highest = r.index;
      }
    }
  }
  // "0.98-1.02", but "-8.7 to 4" where a bound is negative (a dash would read as a minus sign).
  const auto range = [](double lo, double hi) {
    if (lo == hi) return format("%.4g", lo);
    return format("%.4g", lo) + (lo < 0.0 || hi < 0.0 ? " to " : "-") + format("%.4g", hi);
  };
  if (std::isnan(c_lo)) {
    // simmer.configurational_every = 0, or no window reached: nothing to say; at T = 0 a window
    // ran, but no ratio to T exists (the line used to vanish without a word).
    const bool cold =
        !at_stage.empty() && std::all_of(at_stage.begin(), at_stage.end(), [&](const run::ChainReport& r) {
          return r.stages[stage].summary.target_temperature == 0.0 && std::isfinite(r.stages[stage].summary.time_step);
        });
    const std::int64_t every = p.diagnostics.configurational_every, window = p.sampling.window;
    if (cold) {
      std::printf("thermometers over the window: h = %s; T = 0, so T_kin/T and T_conf/T are undefined\n",
                  range(h_lo, h_hi).c_str());
    } else if (every > window && !std::isnan(h_lo)) {
      // The thermometers sample every `every` steps of the window: none fits (it used to pass
      // without a word).
      std::printf(
          "thermometers over the window: h = %s; no sample: simmer.configurational_every = %lld is longer than "
          "the window (ensemble.window = %lld steps); at most %lld gives T_kin/T and T_conf/T\n",
          range(h_lo, h_hi).c_str(), static_cast<long long>(every), static_cast<long long>(window),
          static_cast<long long>(window));
    }
    return;
  }
  std::string mean;
  if (count >= 2) {
    const auto n = static_cast<double>(count);
    const double m = sum / n;
    const double sd = std::sqrt(std::max(0.0, (sum_sq - n * m * m) / (n - 1.0)));
    mean = format(", mean %.3g", m) + format(" +- %.2g over the trajectories", sd / std::sqrt(n));
  }
  std::printf(
      "thermometers over the window: h = %s; T_kin/T %s, T_conf/T %s%s (configurational: <|grad U|^2> / "
      "<tr Hess U>; 1 when the positions follow exp(-U/T))\n",
      range(h_lo, h_hi).c_str(), range(k_lo, k_hi).c_str(), range(c_lo, c_hi).c_str(), mean.c_str());
  if (off > 0) {
    // A count and the extremes (per-trajectory values: the archive and simmer_analyze summary).
    const std::string which = off == 1 ? "trajectory " + std::to_string(lowest) + ": " + format("%.4g", low)
                                       : "lowest " + format("%.4g", low) + " in trajectory " + std::to_string(lowest) +
                                             ", highest " + format("%.4g", high) + " in trajectory " +
                                             std::to_string(highest);
    std::printf(
        "warning: T_conf/T is more than %.0f%% (and twice its standard error) from 1 in %lld of %zu trajectories "
        "(%s): the "
        "positions are not distributed as exp(-U/T): the trajectory has not equilibrated (see the "
        "stationarity line) or the step biases the sampled law (a smaller simmer.time_step or "
        "simmer.step_fraction tells which)\n",
        100.0 * train::kConfigurationalTolerance, static_cast<long long>(off), at_stage.size(), which.c_str());
  }
}

/// The stacking weights, under the candidates' table (the stacked candidate is its last row).
void print_stacking(const RunReport& report) {
  std::vector<std::string> names;
  for (const auto& e : report.candidates) names.push_back(e.name);
  const bool chosen = report.chosen().stage == kStackedStage;
  std::fputs(stacking_line(names, report.stacking.weights, report.stacking.sweeps, chosen).c_str(), stdout);
}

}  // namespace

void print_footer(const run::Problem& p, const double cpu_parts[4], double wall, int ranks,
                  const std::int64_t io_counts[2], const std::vector<std::int64_t>& diverged, std::int64_t members) {
  const double cpu = cpu_parts[3];
  std::printf(
      "\nwall %s on %d rank(s); CPU time %.1f s: gradient steps %.1f%%, member evaluation "
      "and traces %.1f%%, gathers + aggregation + I/O %.1f%%, set-up and other %.1f%%\n",
      format_duration(wall).c_str(), ranks, cpu, 100 * cpu_parts[0] / cpu, 100 * cpu_parts[1] / cpu,
      100 * cpu_parts[2] / cpu, 100 * (cpu - cpu_parts[0] - cpu_parts[1] - cpu_parts[2]) / cpu);
  std::printf("archive: %s (%lld of %lld transfers collective)\n", p.run.output.c_str(),
              static_cast<long long>(io_counts[1]), static_cast<long long>(io_counts[0]));
  // Trajectories the health check stopped, in one line however many (each in /sample_stats/diverged_at_step;
  // the last line counts those judged exploded at the end too, as the stationarity line does).
  std::int64_t count = 0, first = -1;
  for (std::size_t t = 0; t < diverged.size(); ++t) {
    if (diverged[t] < 0) continue;
    ++count;
    if (first < 0) first = static_cast<std::int64_t>(t);
  }
  if (count > 0) {
    std::printf(
        "%lld of %zu trajectories stopped by the health check (first: trajectory %lld at step %lld; all in "
        "/sample_stats/diverged_at_step, h = %s): %s; consider a smaller simmer.time_step%s\n",
        static_cast<long long>(count), diverged.size(), static_cast<long long>(first),
        static_cast<long long>(diverged[static_cast<std::size_t>(first)]),
        p.auto_step.on ? "auto" : format("%g", p.nhc.time_step).c_str(),
        members > 0 ? "their samples before that are in the ensemble" : "the ensemble has no members",
        p.auto_step.on ? " (or simmer.step_fraction)" : "");
  }
}

std::string diverged_summary(const std::vector<run::ChainReport>& t, std::int64_t members) {
  std::int64_t stopped = 0, exploded = 0;
  std::string example;
  for (const auto& r : t) {
    if (r.diverged_at >= 0) {
      ++stopped;
      continue;
    }
    for (const auto& stage : r.stages) {
      if (stage.summary.verdict != Verdict::diverged) continue;
      ++exploded;
      if (example.empty()) example = "trajectory " + std::to_string(r.index) + ": " + stage.summary.reason;
      break;
    }
  }
  if (stopped + exploded == 0) return "";
  std::string out = std::to_string(stopped + exploded) + " of " + std::to_string(t.size()) + " trajectories (";
  if (stopped > 0) out += std::to_string(stopped) + " stopped by the health check";
  if (exploded > 0)
    out += std::string(stopped > 0 ? ", " : "") + std::to_string(exploded) + " exploded, e.g. " + example;
  return out + (members > 0 ? "); their members before that are in the ensemble"
                            : "); none reached the window, so the run's ensemble has no members");
}

/// adam.keep = best_validation: the epochs the networks were kept at, and how many adam.patience
/// ended early ("" otherwise).
std::string kept_epochs(const run::Problem& p, const std::vector<run::ChainReport>& t) {
  if (p.adam.keep != train::AdamKeep::best_validation) return {};
  std::vector<std::int64_t> kept;
  for (const auto& r : t) {
    if (r.adam_kept_epoch >= 0) kept.push_back(r.adam_kept_epoch);
  }
  if (kept.empty()) return {};
  std::sort(kept.begin(), kept.end());
  std::string line = "Adam kept each network at its lowest validation loss (adam.keep = best_validation): epoch" +
                     std::string(kept.size() > 1 ? "s " : " ") + std::to_string(kept.front()) +
                     (kept.back() != kept.front() ? "-" + std::to_string(kept.back()) : std::string()) + " of " +
                     std::to_string(p.adam.epochs);
  if (p.adam.patience > 0) {
    const auto early =
        std::count_if(kept.begin(), kept.end(), [&](std::int64_t e) { return e + p.adam.patience < p.adam.epochs; });
    line += "; adam.patience = " + std::to_string(p.adam.patience) + " ended " + std::to_string(early) + " of " +
            std::to_string(kept.size()) + " early";
  }
  return line;
}

/// The run's result line and, when the deep ensemble is another candidate, the comparison with it.
void print_result(const run::Problem& p, const RunReport& report, const std::string& what) {
  const EnsembleReport& chosen = report.chosen();
  const EnsembleReport* deep = report.deep();
  const char* metric = p.classification ? "accuracy" : "MSE";
  std::printf(
      "\nresult: the run's ensemble is %s%s; its predictions and their uncertainty: simmer_analyze "
      "predict %s --points FILE.csv\n",
      what.c_str(),
      !report.compared ? ""
      : chosen.stage == kStackedStage
          ? ", their weights fitted on the validation rows (so the validation scores below flatter them)"
          : (", chosen by validation " + std::string(p.selection.by == ensemble::SelectBy::nll ? "NLL" : metric))
                .c_str(),
      p.run.output.c_str());
  // Against the deep ensemble: better or worse, and whether the validation rows can tell.
  if (deep != nullptr && deep != &chosen) {
    const auto side = [](double mine, double theirs, bool higher_better) {
      if (!std::isfinite(mine) || !std::isfinite(theirs) || mine == theirs) return std::string("the same");
      return (mine > theirs) == higher_better ? std::string("better") : std::string("worse");
    };
    const auto margin = [&](const ensemble::PairedDifference& d, const char* unit) {
      if (!report.against_deep || !std::isfinite(d.mean)) return std::string();
      const bool noise = std::abs(d.mean) <= 2.0 * d.stderr_;
      return " (" + format("%+.3g", d.mean) + unit + " ± " + format("%.2g", d.stderr_) + " over " +
             std::to_string(p.validation.rows()) +
             " rows: " + (noise ? "within the validation noise" : "more than twice its standard error") + ")";
    };
    const std::size_t v = p.has_validation() ? run::Problem::kValidation : 0;
    const auto &mine = chosen.scores, &theirs = deep->scores;
    std::string line = "against the deep ensemble (" + std::to_string(deep->members) +
                       (deep->members == 1 ? " Adam network" : " Adam networks") + "): ";
    if (p.has_validation()) {
      line += "validation NLL " + format("%.4g", mine[v].nll) + " vs " + format("%.4g", theirs[v].nll) + ", " +
              side(mine[v].nll, theirs[v].nll, false) + margin(report.validation_nll, "") + "; validation " + metric +
              " " + format("%.4g", mine[v].metric) + " vs " + format("%.4g", theirs[v].metric) + ", " +
              side(mine[v].metric, theirs[v].metric, p.classification) +
              margin(report.validation_metric, p.classification ? " error rate" : "") + "; ";
    }
    line += "test NLL " + format("%.4g", mine[1].nll) + " vs " + format("%.4g", theirs[1].nll) + ", " +
            side(mine[1].nll, theirs[1].nll, false) + "; test " + metric + " " + format("%.4g", mine[1].metric) +
            " vs " + format("%.4g", theirs[1].metric) + ", " + side(mine[1].metric, theirs[1].metric, p.classification);
    std::printf("%s\n", line.c_str());
  } else if (deep != nullptr && !p.adam_only) {
    std::printf("the deep ensemble was chosen: on the validation rows no simmering rung beat it\n");
  }
}

void print_conclusion(const run::Problem& p, const std::vector<run::ChainReport>& t, const RunReport& report) {
  const EnsembleReport& chosen = report.chosen();
  const EnsembleReport* deep = report.deep();
  // The result.
  std::string what;
  if (chosen.stage == kDeepStage) {
    what = "the deep ensemble of the " + std::to_string(chosen.members) + " Adam networks (test " +
           (p.classification ? "accuracy " + format("%.4f", chosen.scores[1].metric)
                             : "MSE " + format("%.5g", chosen.scores[1].metric)) +
           ", test NLL " + format("%.4g", chosen.scores[1].nll) + ")";
  } else if (chosen.stage == kStackedStage) {
    what = "the candidates stacked (" + std::to_string(chosen.members) +
           " members, each candidate's share its stacking weight under the candidates' table)";
  } else {
    const double over = chosen.temperature / p.bayes_temperature;
    const auto trajectories = stage_reports(p, t, static_cast<std::size_t>(chosen.stage)).size();
    what = (p.ladder.rungs.empty() ? std::string("the simmering ensemble") : chosen.name) +
           " (T = " + (std::isfinite(over) ? format("%.3g", over) + " T_Bayes" : format("%.4g", chosen.temperature)) +
           ", " + std::to_string(chosen.members) + " members of " + std::to_string(trajectories) +
           (trajectories == 1 ? " trajectory)" : " trajectories)");
  }
  if (chosen.stage >= 0 && chosen.members == 0) {
    // Nothing to predict with: no comparison, no pointer to predict (which refuses).
    const auto trajectories = stage_reports(p, t, static_cast<std::size_t>(chosen.stage));
    const bool all = std::all_of(trajectories.begin(), trajectories.end(),
                                 [](const run::ChainReport& r) { return r.diverged_at >= 0; });
    std::printf("\nresult: no members: %s, so there is no ensemble to predict with%s\n",
                all ? "every trajectory diverged before the window" : "no trajectory reached the window",
                deep != nullptr ? (" (the deep ensemble of the " + std::to_string(deep->members) +
                                   " Adam networks is in /deep_ensemble: simmer_analyze predict " + p.run.output +
                                   " --candidate deep_ensemble --points FILE.csv)")
                                      .c_str()
                                : "");
  } else {
    print_result(p, report, what);
    if (const std::string kept = kept_epochs(p, t); !kept.empty()) std::printf("%s\n", kept.c_str());
    // The stacked candidates, when they are more than the chosen candidate and not chosen: how to
    // predict with them, and the rule that chooses them.
    const auto selected = static_cast<std::size_t>(report.selected);
    const EnsembleReport& stacked = report.candidates.back();
    if (report.stacked && selected < report.stacking.weights.size() && report.stacking.weights[selected] < 0.999 &&
        stacked.scores.size() > 1) {
      std::printf(
          "stacked: the candidates stacked (the weights under the candidates' table, fitted on the validation rows, "
          "so their validation NLL %.4g flatters them) have test NLL %.4g against the run's ensemble's %.4g; reported, "
          "not chosen: simmer_analyze predict %s --candidate stacked --points FILE.csv predicts with them, and "
          "ensemble.select_rule = stacking makes them the run's ensemble\n",
          stacked.scores.size() > 2 ? stacked.scores[2].nll : kNaN, stacked.scores[1].nll, chosen.scores.at(1).nll,
          p.run.output.c_str());
    }
  }
  // What to do about the verdicts of the stage in /diagnostics.
  if (report.diagnostics_stage < 0) return;
  if (chosen.stage == kDeepStage) {
    // The rungs' verdicts do not bear on the deep ensemble's predictions.
    std::printf(
        "the simmering rungs' trajectories (verdicts: the stationarity line, simmer_analyze summary) are not the "
        "run's ensemble; nothing to do for its predictions\n");
    return;
  }
  const auto stage = static_cast<std::size_t>(report.diagnostics_stage);
  const auto counts = verdict_counts(p, t, stage);
  const auto total = stage_reports(p, t, stage).size();
  const auto n = [&](Verdict v) { return counts[static_cast<std::size_t>(v)]; };
  const std::string of = " of " + std::to_string(total) + " trajectories" +
                         (p.ladder.rungs.empty() ? std::string() : " of " + p.stage_name(report.diagnostics_stage));
  if (n(Verdict::stationary) == static_cast<std::int64_t>(total)) {
    std::printf("stationarity: all %zu trajectories stationary\n", total);
  }
  // The step's knob: the automatic step is a share of its measured limit.
  const std::string larger_step = p.auto_step.on ? "a larger simmer.step_fraction (the automatic step's share of its "
                                                   "measured limit)"
                                                 : "a larger simmer.time_step (the stability line gives the limit)";
  const std::string smaller_step = p.auto_step.on ? "a smaller simmer.step_fraction" : "a smaller simmer.time_step";
  if (n(Verdict::drifting) > 0) {
    std::printf(
        "what to do: %lld%s drifting: their parameters still travel away from their start, so the members "
        "are points along a path, not a sample; a prior bounds them (simmer.prior = gaussian), a lower T "
        "slows them (docs/STATIONARITY.md)\n",
        static_cast<long long>(n(Verdict::drifting)), of.c_str());
  }
  if (n(Verdict::not_mixed) > 0) {
    std::printf(
        "what to do: %lld%s not mixed: each stayed near its own start (split-R^ > 1.1, or still moving one "
        "way in the window), so its members are alike and the spread mostly counts trajectories; run "
        "longer (simmer.steps and ensemble.window; with split-R^ above 1.1 the window line says about how long), "
        "take %s or more trajectories\n",
        static_cast<long long>(n(Verdict::not_mixed)), of.c_str(), larger_step.c_str());
  }
  if (n(Verdict::not_equilibrated) > 0) {
    std::printf(
        "what to do: %lld%s not equilibrated: their series look stationary and T_kin = T, but their positions are "
        "not distributed as exp(-U/T) (T_conf/T outside 1 +- %.2g by more than twice its standard error: the "
        "stationarity line's example); below 1 the positions have not settled: one global Nose-Hoover chain may "
        "not heat every direction (simmer.thermostat = massive_nose_hoover_langevin), or the warm-up was too short "
        "(more simmer.steps before the same ensemble.window); above 1 the step biases the law (%s)\n",
        static_cast<long long>(n(Verdict::not_equilibrated)), of.c_str(), train::kConfigurationalTolerance,
        smaller_step.c_str());
  }
  if (n(Verdict::drifting) + n(Verdict::not_mixed) + n(Verdict::not_equilibrated) > 0) {
    // What that means for the predictions, and the measurement that says whether to trust them.
    const std::size_t v = p.has_validation() ? run::Problem::kValidation : 0;
    const char* rows = p.has_validation() ? "validation" : "training";
    std::string evidence;
    if (!p.classification && v < chosen.coverage.size()) {
      evidence = "the 90% predictive interval (members and noise) covers " + format("%.2f", chosen.coverage[v][1]) +
                 " of the " + rows + " rows (0.90 if calibrated)";
    } else if (v < chosen.scores.size()) {
      evidence = "its " + std::string(rows) + " calibration error (ECE) is " + format("%.3g", chosen.scores[v].ece) +
                 " (0 if calibrated)";
    }
    std::printf(
        "what it means: the ensemble's %s is still an average of networks that fit the data, but its spread "
        "is not the tempered posterior's, so read its uncertainty by what was measured: %s%s\n",
        p.classification ? "vote" : "mean", evidence.c_str(),
        p.has_validation() ? "" : " (on training rows: optimistic; data.validation_fraction holds rows out)");
  }
  if (n(Verdict::diverged) > 0) {
    std::printf("what to do: %lld%s diverged: %s\n", static_cast<long long>(n(Verdict::diverged)), of.c_str(),
                smaller_step.c_str());
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
      const auto [m, sd] = finite_mean_sd(column(t, split, field));
      return format(fmt, m) + " ± " + format(fmt, sd);
    };
  };
  const auto ens_cell = [](const EnsembleReport& e, double ensemble::SetScores::*field, const char* fmt) -> Cell {
    return [&e, field, fmt](int split) { return format(fmt, e.scores[static_cast<std::size_t>(split)].*field); };
  };
  using S = ensemble::SetScores;
  // One block of rows per ensemble: the deep ensemble (retrofit), then the run's own.
  const auto ensemble_rows = [&](const std::string& label, const EnsembleReport& e, const std::string& size) {
    if (p.classification) {
      row(label + " accuracy" + size, ens_cell(e, &S::metric, "%.4f"));
      row(label + " NLL", ens_cell(e, &S::nll, "%.3g"));
      row(label + " Brier", ens_cell(e, &S::brier, "%.3g"));
      row(label + " ECE (10 bins)", ens_cell(e, &S::ece, "%.3g"));
    } else {
      row(label + " MSE" + size, ens_cell(e, &S::metric, "%.5g"));
      row(label + " R²", ens_cell(e, &S::r2, "%.4f"));
      row(label + " Gaussian NLL", ens_cell(e, &S::nll, "%.4g"));
      const auto levels = [](const std::vector<std::array<double, kCoverageLevels.size()>>& coverage) -> Cell {
        return [&coverage](int split) {
          const auto& c = coverage[static_cast<std::size_t>(split)];
          return format("%.2f", c[0]) + "/" + format("%.2f", c[1]) + "/" + format("%.2f", c[2]);
        };
      };
      row(label + " 50/90/95% predictive coverage", levels(e.coverage));
      row("  (members alone, no noise)", levels(e.mean_coverage));
      if (e.noise.known()) {
        std::printf("%-42s %s (sigma %s, from the %s residuals of its mean)\n", (label + " noise variance").c_str(),
                    format("%.4g", e.noise.mean()).c_str(), format("%.4g", std::sqrt(e.noise.mean())).c_str(),
                    std::string(ensemble::kNoiseSourceNames.name(e.noise.source)).c_str());
      }
    }
  };
  std::printf("\n");
  row("", [&](int split) { return p.sets[static_cast<std::size_t>(split)].name; });
  const std::string over = " (mean ± sd, " + std::to_string(C) + ")";
  if (p.classification) {
    row(base + " accuracy" + over, base_cell(&S::metric, "%.4f"));
    row(base + " NLL", base_cell(&S::nll, "%.3g"));
    row(base + " Brier", base_cell(&S::brier, "%.3g"));
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
  const std::string label = chosen.stage == kDeepStage
                                ? "deep ensemble"
                                : (p.ladder.rungs.empty() ? "ensemble" : "ensemble = " + chosen.name);
  const std::string size =
      " (" + std::to_string(chosen.members) + (chosen.stage == kDeepStage ? " Adam nets)" : " members)");
  ensemble_rows(label, chosen, size);
  const auto& test = chosen.scores[1];
  if (test.worst_row >= 0) {
    std::printf("largest single test point's share of the ensemble's %s: %.1f%% (row %lld)\n",
                p.classification ? "Brier score" : "squared error", 100.0 * test.worst_share,
                static_cast<long long>(test.worst_row));
  }
  if (!p.ladder.rungs.empty()) {
    // The candidates, as /selection holds them.
    const char* metric = p.classification ? "acc" : "MSE";
    std::printf("\ncandidates (%s; %s)\n",
                report.compared ? ((report.chosen().stage == kStackedStage
                                        ? std::string("stacked by their validation likelihood")
                                        : "chosen by validation " +
                                              std::string(p.selection.by == ensemble::SelectBy::nll ? "NLL" : metric)) +
                                   ", ensemble.select_rule = " + ensemble::to_string(p.selection.rule))
                                      .c_str()
                                : "not compared: ensemble.select_by = none, the last rung is the run's ensemble",
                run::layout::kSelection);
    std::printf("  %-14s %10s %9s %8s %10s %22s %10s %9s %9s\n", "candidate", "T", "T/T_Bayes", "members",
                (std::string("val ") + metric).c_str(), "val loss ± se (diff se)",
                (std::string("test ") + metric).c_str(), "test NLL", "drifting");
    for (std::size_t c = 0; c < report.candidates.size(); ++c) {
      const auto& e = report.candidates[c];
      const double val_metric = sets > 2 ? e.scores[2].metric : kNaN;
      std::string loss = "-";
      if (report.compared && c < report.selection.loss.size()) {
        loss = format("%.4g", report.selection.loss[c]) + " ± " + format("%.2g", report.selection.stderr_loss[c]) +
               " (" + format("%.2g", report.selection.stderr_difference[c]) + ")";
      }
      std::string drift = "-";
      if (e.stage >= 0) {
        const auto k = static_cast<std::size_t>(e.stage);
        drift = std::to_string(verdict_counts(p, t, k)[static_cast<std::size_t>(Verdict::drifting)]) + "/" +
                std::to_string(stage_reports(p, t, k).size());
      }
      std::string mark;
      if (static_cast<std::int64_t>(c) == report.selected) mark += "  <- the run's ensemble";
      if (report.compared && c == report.selection.best && static_cast<std::int64_t>(c) != report.selected)
        mark += "  (lowest validation loss)";
      if (report.compared && c == report.selection.one_se && static_cast<std::int64_t>(c) != report.selected)
        mark += "  (one_se's choice)";
      const std::string in_bayes =
          std::isfinite(e.temperature) ? format("%.3g", e.temperature / p.bayes_temperature) : "-";
      std::printf("  %-14s %10s %9s %8lld %10s %22s %10s %9.4g %9s%s\n", e.name.c_str(),
                  std::isfinite(e.temperature) ? format("%.4g", e.temperature).c_str() : "-", in_bayes.c_str(),
                  static_cast<long long>(e.members), format(p.classification ? "%.4f" : "%.4g", val_metric).c_str(),
                  loss.c_str(), format(p.classification ? "%.4f" : "%.4g", e.scores[1].metric).c_str(), e.scores[1].nll,
                  drift.c_str(), mark.c_str());
    }
    if (report.stacked) print_stacking(report);
  }
  if (report.diagnostics_stage >= 0) {
    // Stationarity, in one line (the stage in /diagnostics).
    const auto stage = static_cast<std::size_t>(report.diagnostics_stage);
    const auto counts = verdict_counts(p, t, stage);
    const std::vector<run::ChainReport> at_stage = stage_reports(p, t, stage);
    std::array<const run::ChainReport*, ensemble::kVerdictNames.table.size()> example{};
    for (const auto& r : at_stage) {
      auto& e = example[static_cast<int>(r.stages[stage].summary.verdict)];
      if (e == nullptr) e = &r;
    }
    std::string line;
    for (const auto v : {Verdict::drifting, Verdict::not_mixed, Verdict::not_equilibrated, Verdict::stationary,
                         Verdict::diverged, Verdict::no_members}) {
      const auto i = static_cast<std::size_t>(v);
      if (counts[i] == 0) continue;
      line += (line.empty() ? "" : "; ") + std::to_string(counts[i]) + " " + ensemble::to_string(v);
    }
    const run::ChainReport* shown = example[static_cast<int>(Verdict::drifting)];
    if (shown == nullptr) shown = example[static_cast<int>(Verdict::not_mixed)];
    if (shown == nullptr) shown = example[static_cast<int>(Verdict::not_equilibrated)];
    if (shown == nullptr && !at_stage.empty()) shown = &at_stage.front();
    std::printf("stationarity%s: %s%s\n",
                p.ladder.rungs.empty() ? "" : (" of " + p.stage_name(report.diagnostics_stage)).c_str(), line.c_str(),
                shown != nullptr ? (" (e.g. trajectory " + std::to_string(shown->index) + ": " +
                                    shown->stages[stage].summary.reason + ")")
                                       .c_str()
                                 : "");
    std::vector<double> rhats;
    std::vector<Verdict> verdicts;
    for (const auto& r : at_stage) {
      rhats.push_back(r.stages[stage].summary.rhat);
      verdicts.push_back(r.stages[stage].summary.verdict);
    }
    const std::string window = ensemble::window_advice(p.sampling, rhats, verdicts);
    if (!window.empty()) std::printf("%s\n", window.c_str());
    std::int64_t slow = 0, first_slow = -1;
    std::string examples;  // at most three
    for (const auto& r : t) {
      if (r.slow_to_heat_at < 0) continue;
      if (++slow <= 3) examples += (slow > 1 ? ", " : "") + std::to_string(r.index);
      if (first_slow < 0 || r.slow_to_heat_at < first_slow) first_slow = r.slow_to_heat_at;
    }
    if (slow > 0) {
      std::printf(
          "slow to heat: %lld of %zu trajectories had a kinetic temperature below T/100 at a health check (e.g. "
          "trajectory %s%s; first at step %lld); they kept sampling (/diagnostics/slow_to_heat_at_step)\n",
          static_cast<long long>(slow), t.size(), examples.c_str(), slow > 3 ? ", ..." : "",
          static_cast<long long>(first_slow));
    }
    print_thermometers(p, at_stage, stage);
    const double temperature = p.stage_temperature(report.diagnostics_stage);
    const auto [rise, stiff] = rise_and_stiff(p, t, stage);
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
  if (!p.classification && !p.adam_only) {
    const auto [mse, sd] = finite_mean_sd(column(t, 0, &S::metric));
    const double s = std::sqrt(mse);
    const double t_bayes = train::bayes_temperature(p.loss, p.train.rows(), p.outputs, s);
    std::string ratio;
    if (std::isfinite(chosen.temperature)) {
      ratio = "T = " + format("%.3g", chosen.temperature / t_bayes) + " x that";
    } else {  // the stacked candidates: one T per candidate with a share
      for (std::size_t c = 0; c < report.stacking.weights.size() && c < report.candidates.size(); ++c) {
        if (!(report.stacking.weights[c] >= kShownStackingWeight)) continue;
        ratio += (ratio.empty() ? "" : ", ") + report.candidates[c].name +
                 " T = " + format("%.3g", report.candidates[c].temperature / t_bayes) + " x that";
      }
      ratio = "the stacked candidates: " + ratio;
    }
    std::printf("%s's training RMSE s = %.4g would make T_Bayes = %.4g (%s)\n", base.c_str(), s, t_bayes,
                ratio.c_str());
  }
}

std::string stacking_line(const std::vector<std::string>& names, const std::vector<double>& weights,
                          std::int64_t sweeps, bool chosen) {
  std::string shown;
  for (std::size_t c = 0; c < names.size() && c < weights.size(); ++c) {
    if (!(weights[c] >= kShownStackingWeight)) continue;
    shown += (shown.empty() ? "" : ", ") + names[c] + " " + format("%.2f", weights[c]);
  }
  return "  stacked: the candidates' shares, from the validation rows (" +
         (shown.empty() ? std::string("none: no candidate has a finite validation likelihood") : shown) +
         "; weights below " + format("%g", kShownStackingWeight) + " not shown; " + std::to_string(sweeps) +
         " EM sweeps)" +
         (chosen ? std::string(": the run's ensemble (ensemble.select_rule = stacking)\n")
                 : std::string("; reported beside them, not the run's ensemble\n"));
}

std::string temperature_reading(const run::Problem& p) {
  const auto loss = model::to_string(p.loss);
  std::string ts;  // "T = 0.1" or "ladder T = 0.01, 0.03, ..."
  std::string ratio;
  if (p.adam_only) return "Adam alone (simmer.mode = adam): no simmering, the run's ensemble is the deep ensemble";
  if (p.noise_pending) {
    // simmer.noise_sd = auto, before Adam has ended: the values as given.
    std::string given;
    const std::vector<double> temperatures =
        p.ladder.rungs.empty() ? std::vector<double>{p.ramp.target} : p.ladder.rungs;
    for (std::size_t k = 0; k < temperatures.size(); ++k)
      given += (k > 0 ? ", " : "") + format("%.4g", temperatures[k]);
    return "temperature: " + std::string(p.ladder.rungs.empty() ? "T = " : "ladder T = ") + given +
           (p.posterior_pending ? " x T_Bayes" : " (loss units)") +
           "; T_Bayes = " + (p.loss == model::LossKind::sse ? "2 s^2" : "2 s^2/n") +
           " with the noise sd s measured after Adam from the deep ensemble's " +
           (p.has_validation() ? "validation" : "training") + " residuals (simmer.noise_sd = auto)";
  }
  if (p.ladder.rungs.empty()) {
    ts = "T = " + format("%.4g", p.ramp.target);
    ratio = format("%.3g", p.ramp.target / p.bayes_temperature);
  } else {
    ts = "ladder T = ";
    for (std::size_t k = 0; k < p.ladder.rungs.size(); ++k) {
      ts += (k > 0 ? ", " : "") + format("%.4g", p.ladder.rungs[k]);
      ratio += (k > 0 ? ", " : "") + format("%.3g", p.ladder.rungs[k] / p.bayes_temperature);
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
                  ts.c_str(), p.ladder.rungs.empty() ? "is" : "are", ratio.c_str(), formula, p.bayes_temperature,
                  loss.c_str(), static_cast<long long>(p.train.rows()),
                  p.noise_sd > 0.0 ? (", noise sd s = " + format("%.4g", p.noise_sd)).c_str() : "");
  } else {
    std::string sd;
    const std::vector<double> temperatures =
        p.ladder.rungs.empty() ? std::vector<double>{p.ramp.target} : p.ladder.rungs;
    for (std::size_t k = 0; k < temperatures.size(); ++k) {
      sd +=
          (k > 0 ? ", " : "") + format("%.4g", train::noise_sd_at(p.loss, p.train.rows(), p.outputs, temperatures[k]));
    }
    std::snprintf(buf, sizeof buf,
                  "temperature: %s (%s) %s the posterior for Gaussian noise of sd s = %s in target units "
                  "(T_Bayes = %s); simmer.noise_sd gives s and T in those units",
                  ts.c_str(), loss.c_str(), p.ladder.rungs.empty() ? "is" : "are", sd.c_str(),
                  p.loss == model::LossKind::sse ? "2 s^2" : "2 s^2/n");
  }
  return buf;
}

}  // namespace simmer::parallel
