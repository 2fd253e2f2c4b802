#pragma once
/// \file
/// The one writer of /metrics (run/metrics.hpp names its attributes): a run's report
/// (parallel/report.cpp) and simmer_analyze merge (posthoc/merge_scores.cpp) fill a Metrics with the
/// numbers each has and call write_metrics; a ladder's rungs use write_set_metrics and
/// write_stage_metrics on /ladder/rung_<k>.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simmer/ensemble/candidate.hpp"
#include "simmer/ensemble/convergence.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/io/h5.hpp"

namespace simmer::parallel {

using ensemble::kCoverageLevels;

/// One ensemble's scores on one scored set, as /metrics holds them.
struct SetMetrics {
  std::string set;  ///< train, test or validation
  ensemble::SetScores scores;
  /// Whether the scores beyond the metric (nll, and brier and ece; the worst point) are known: a
  /// merge of archives without the members' probabilities or a noise estimate leaves them out.
  bool uncertainty = true;
  /// Regression, when known: the coverage of the predictive mixture's (members and noise) 50, 90
  /// and 95 % central intervals, and of the members' own (mean_coverage).
  std::optional<std::array<double, kCoverageLevels.size()>> coverage, mean_coverage;
};

/// A simmering stage's verdict counts and loss rises (each written when known).
struct StageMetrics {
  std::optional<std::array<std::int64_t, ensemble::kVerdictNames.table.size()>> verdicts;  ///< by ensemble::Verdict
  std::optional<double> observed_rise, harmonic_rise, stiff_rise;
};

/// Everything /metrics holds (run/metrics.hpp names it): what a run's report and simmer_analyze
/// merge both write through write_metrics.
struct Metrics {
  bool classification = true;
  /// The baseline networks' score per trajectory: the dataset /baseline/<set>_<score> [chain],
  /// and its mean and sd over the trajectories with a finite value (baseline_<set>_<score>_{mean,sd}).
  struct BaselineColumn {
    std::string set, score;
    std::vector<double> values;
  };
  std::vector<BaselineColumn> baseline;
  std::vector<SetMetrics> ensemble;        ///< the run's ensemble: ensemble_<set>_<score>
  ensemble::NoiseEstimate ensemble_noise;  ///< regression: its σ² (ensemble_noise_variance, _source)
  std::int64_t members = 0;
  std::optional<std::string> ensemble_name;              ///< the candidate chosen (a merge has none)
  std::optional<std::vector<SetMetrics>> deep_ensemble;  ///< deep_ensemble_<set>_<score>
  ensemble::NoiseEstimate deep_ensemble_noise;
  std::int64_t deep_ensemble_members = 0;
  std::optional<StageMetrics> stage;  ///< of the stage in /diagnostics
  std::optional<double> bayes_temperature, temperature_over_bayes;
  std::optional<double> noise_sd;  ///< regression (NaN: unknown)
  std::string noise_sd_source;     ///< regression: where noise_sd came from
};

/// Mean and sample sd of the finite values (NaN, NaN when there are none): the baselines' and
/// the loss rise's over trajectories, in a run and in a merge.
std::pair<double, double> finite_mean_sd(const std::vector<double>& values);

/// Collective. The /baseline columns and every /metrics attribute of `m`.
void write_metrics(io::ParallelFile& f, const Metrics& m);

/// Collective. `<prefix><set>_<score>` attributes on `object` for each set of `sets`: the metric
/// (accuracy, or mse and r2); where known nll, for classification brier and ece, and the worst
/// point and its share; for regression the predictive and the members' coverage where known, and
/// `noise`'s σ² and source (<prefix>noise_variance, <prefix>noise_source) when it is known.
void write_set_metrics(io::ParallelFile& f, const std::string& object, const std::string& prefix, bool classification,
                       const std::vector<SetMetrics>& sets, const ensemble::NoiseEstimate& noise);

/// Collective. The verdict counts and loss rises of `s` (those known) as attributes of `object`.
void write_stage_metrics(io::ParallelFile& f, const std::string& object, const StageMetrics& s);

/// Axes of datasets to attach a dimension scale to: (dataset path, axis).
using ScaleAxes = std::vector<std::pair<std::string, unsigned>>;

/// Collective. One member series of a diagnostics group (run/archive_paths.hpp,
/// member_series_names), for a run's report and a merge alike: <group>/series_<name> [chain,
/// member] from `chains` (one per trajectory, each padded with NaN to the longest), its axes added
/// to `by_chain` and `by_member`, and the attributes rank_rhat_<name> and bulk_ess_<name> pooled
/// over the chains (NaN with fewer than two of at least 4 values). Returns the member axis' length.
std::int64_t write_member_series(io::ParallelFile& f, const std::string& group, const std::string& name,
                                 const ensemble::Chains& chains, ScaleAxes& by_chain, ScaleAxes& by_member);
/// Collective. <group>/member [members] (0, 1, ...) as the member scale of `by_member`.
void write_member_scale(io::ParallelFile& f, const std::string& group, std::int64_t members,
                        const ScaleAxes& by_member);

/// The sets of an ensemble's scores (`names` the scored sets, train first), all known.
std::vector<SetMetrics> set_metrics(const std::vector<std::string>& names, const ensemble::CandidateScores& scores,
                                    bool classification);

}  // namespace simmer::parallel
