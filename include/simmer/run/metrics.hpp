#pragma once
/// \file
/// The names of /metrics (ARCHITECTURE.md, "Archive layout"), built here and nowhere else: the
/// run's report and simmer_analyze merge write them (parallel::write_metrics), summary reads them, and
/// tests/analysis/schema_names prints them for the Python tools' check (test_schema_names.py).
///
/// An ensemble's score on a set is `<prefix><set>_<score>` ("ensemble_test_accuracy",
/// "deep_ensemble_validation_nll"); the baseline networks' mean and sd over trajectories are
/// "baseline_<set>_<score>_mean" and "_sd", their per-trajectory values the dataset
/// /baseline/<set>_<score> [chain] (and a ladder's /selection/<set>_<score> [candidate]).

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/run/archive_paths.hpp"

namespace simmer::run::layout {

/// The group whose attributes hold a run's scores (the report's, a merge's), mirrored into its
/// checksummed datasets attribute_names / attribute_values.
inline constexpr const char* kMetrics = "/metrics";

/// Prefixes of an ensemble's scores: the run's ensemble (also a ladder rung's, on /ladder/rung_<k>)
/// and the deep ensemble of the Adam end points.
inline constexpr const char* kEnsemblePrefix = "ensemble_";
inline constexpr const char* kDeepEnsemblePrefix = "deep_ensemble_";

/// Scores, as they appear in the names.
inline constexpr const char* kAccuracy = "accuracy";
inline constexpr const char* kMse = "mse";
inline constexpr const char* kR2 = "r2";
inline constexpr const char* kNll = "nll";
inline constexpr const char* kBrier = "brier";
inline constexpr const char* kEce = "ece";

/// Plain /metrics attributes.
inline constexpr const char* kMembers = "members";        ///< the run's ensemble's members (also per rung)
inline constexpr const char* kEnsembleName = "ensemble";  ///< the candidate that is the run's ensemble
inline constexpr const char* kDeepEnsembleMembers = "deep_ensemble_members";
inline constexpr const char* kObservedLossRise = "observed_loss_rise";
inline constexpr const char* kHarmonicLossRise = "harmonic_loss_rise";
inline constexpr const char* kHarmonicLossRiseStiffModes = "harmonic_loss_rise_stiff_modes";
inline constexpr const char* kBayesTemperature = "bayes_temperature";
/// The run's ensemble's T over T_Bayes (each rung's too); NaN for the stacked candidates, which mix
/// temperatures (their shares: /selection's stacking_weight, beside each rung's own ratio).
inline constexpr const char* kTemperatureOverBayes = "temperature_over_bayes";
/// Regression: the targets' noise sd behind T_Bayes (NaN: unknown) and where it came from
/// (run::Problem::noise_sd_source: simmer.noise_sd, or with auto the deep ensemble's residuals).
inline constexpr const char* kNoiseSd = "noise_sd";
inline constexpr const char* kNoiseSdSource = "noise_sd_source";

/// The score a task is judged by: accuracy (classification, of the vote) or MSE (regression).
inline const char* main_score(bool classification) { return classification ? kAccuracy : kMse; }

/// The scores of a task in the order they are written, with the SetScores member each comes from.
inline std::vector<std::pair<std::string, double ensemble::SetScores::*>> score_fields(bool classification) {
  using S = ensemble::SetScores;
  if (classification) return {{kAccuracy, &S::metric}, {kNll, &S::nll}, {kBrier, &S::brier}, {kEce, &S::ece}};
  return {{kMse, &S::metric}, {kR2, &S::r2}, {kNll, &S::nll}};
}

/// The scores that need the members' probabilities (classification) or a noise estimate
/// (regression), which a merge of old archives may lack: all of score_fields but the first
/// (and, for regression, r2).
inline bool is_uncertainty_score(bool classification, std::string_view score) {
  return score != main_score(classification) && !(!classification && score == kR2);
}

/// `<prefix><set>_<score>`: an ensemble's score on a set ("ensemble_test_nll").
inline std::string score_key(std::string_view prefix, std::string_view set, std::string_view score) {
  return std::string(prefix).append(set).append("_").append(score);
}
/// The row with the largest share of the ensemble's error on a set, and that share.
inline std::string worst_point_key(std::string_view prefix, std::string_view set) {
  return score_key(prefix, set, "worst_point");
}
inline std::string worst_point_share_key(std::string_view prefix, std::string_view set) {
  return score_key(prefix, set, "worst_point_share");
}
/// Regression: the share of values inside the central `level` interval of the predictive mixture
/// (members and noise, ensemble/predictive.hpp): "ensemble_test_coverage_90".
inline std::string coverage_key(std::string_view prefix, std::string_view set, double level) {
  return score_key(prefix, set, "coverage_" + std::to_string(static_cast<int>(std::lround(100 * level))));
}
/// Regression: the same for the members' own predictions, without noise (the spread of the mean
/// function only): "ensemble_test_mean_coverage_90".
inline std::string mean_coverage_key(std::string_view prefix, std::string_view set, double level) {
  return score_key(prefix, set, "mean_coverage_" + std::to_string(static_cast<int>(std::lround(100 * level))));
}
/// Regression: an ensemble's noise variance σ² (real; the mean over outputs, each output's in its
/// group's noise_variance dataset) and where it came from (text: ensemble::kNoiseSourceNames).
inline std::string noise_variance_key(std::string_view prefix) { return std::string(prefix) + "noise_variance"; }
inline std::string noise_source_key(std::string_view prefix) { return std::string(prefix) + "noise_source"; }

/// `<set>_<score>`: the per-trajectory column /baseline/<set>_<score> [chain] (and /selection's).
inline std::string baseline_column(std::string_view set, std::string_view score) {
  return std::string(set).append("_").append(score);
}
/// /baseline/<set>_<score> [chain]: each trajectory's baseline network's score.
inline std::string baseline_score(std::string_view set, std::string_view score) {
  return join(kBaseline, baseline_column(set, score));
}
/// The baseline networks' mean and sd over trajectories: "baseline_test_accuracy_mean".
inline constexpr const char* kBaselinePrefix = "baseline_";
inline constexpr const char* kBaselineName = "baseline";  ///< export --what metrics' candidate name
inline std::string baseline_mean_key(std::string_view set, std::string_view score) {
  return kBaselinePrefix + baseline_column(set, score) + "_mean";
}
inline std::string baseline_sd_key(std::string_view set, std::string_view score) {
  return kBaselinePrefix + baseline_column(set, score) + "_sd";
}

/// The /metrics attribute counting the trajectories whose verdict is `name` (one of
/// ensemble::kVerdictNames): "trajectories_not_mixed" for "not mixed".
inline std::string verdict_count_key(std::string_view name) {
  std::string key = "trajectories_" + std::string(name);
  std::replace(key.begin(), key.end(), ' ', '_');
  return key;
}

/// What a run's /metrics holds, as far as its names go.
struct MetricsShape {
  bool classification = true;
  std::vector<std::string> scored_sets{"train", "test"};  ///< train, test[, validation]
  bool deep_ensemble = false;                             ///< retrofit and Adam alone
  bool stage = true;                                      ///< a simmering stage (not Adam alone)
};

/// Every /metrics attribute name a run of that shape writes (sorted), the mirror datasets aside.
inline std::vector<std::string> metric_keys(const MetricsShape& s) {
  std::vector<std::string> out{kMembers, kEnsembleName, kBayesTemperature, kTemperatureOverBayes};
  if (!s.classification) {
    out.emplace_back(kNoiseSd);
    out.emplace_back(kNoiseSdSource);
  }
  const auto scores = [&](const char* prefix) {
    for (const auto& set : s.scored_sets) {
      for (const auto& field : score_fields(s.classification)) out.push_back(score_key(prefix, set, field.first));
      out.push_back(worst_point_key(prefix, set));
      out.push_back(worst_point_share_key(prefix, set));
      if (!s.classification) {
        for (const double level : ensemble::kCoverageLevels) {
          out.push_back(coverage_key(prefix, set, level));
          out.push_back(mean_coverage_key(prefix, set, level));
        }
      }
    }
    if (!s.classification) {
      out.push_back(noise_variance_key(prefix));
      out.push_back(noise_source_key(prefix));
    }
  };
  for (const auto& set : s.scored_sets) {
    for (const auto& field : score_fields(s.classification)) {
      out.push_back(baseline_mean_key(set, field.first));
      out.push_back(baseline_sd_key(set, field.first));
    }
  }
  scores(kEnsemblePrefix);
  if (s.deep_ensemble) {
    scores(kDeepEnsemblePrefix);
    out.emplace_back(kDeepEnsembleMembers);
  }
  if (s.stage) {
    for (const auto& entry : ensemble::kVerdictNames.table) out.push_back(verdict_count_key(entry.name));
    for (const char* name : {kObservedLossRise, kHarmonicLossRise, kHarmonicLossRiseStiffModes}) out.emplace_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace simmer::run::layout
