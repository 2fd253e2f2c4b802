#pragma once
/// \file
/// The end of a run: every trajectory's numbers (baseline scores, drift and stationarity summary
/// per simmering stage, curvature), every candidate ensemble's scores (each simmering stage's
/// pooled members, and the deep ensemble of the Adam end points), the choice among them on the
/// validation set, written to /baseline, /diagnostics, /metrics, /ladder and /selection and
/// printed as the final table. The driver gathers the numbers (in trajectory order, identical on
/// every rank); this file only computes the scores and lays them out.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simmer/core/bytes.hpp"
#include "simmer/core/visit.hpp"
#include "simmer/ensemble/candidate.hpp"
#include "simmer/ensemble/partial.hpp"
#include "simmer/ensemble/selection.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/parallel/metrics_writer.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/train/spectrum.hpp"

namespace simmer::parallel {

/// EnsembleReport::stage of the candidates that pool no simmering stage.
inline constexpr std::int64_t kDeepStage = -1;     ///< the deep ensemble of the Adam end points
inline constexpr std::int64_t kStackedStage = -2;  ///< the stacked candidates (ensemble::stacked_candidate)

/// One candidate ensemble's numbers (computed on rank 0, then known to every rank).
struct EnsembleReport {
  std::string name;                                               ///< ensemble::Candidate::name
  double temperature = std::numeric_limits<double>::quiet_NaN();  ///< loss units; 0 for the deep ensemble
  std::int64_t stage = -1;  ///< the simmering stage it pools (kDeepStage, kStackedStage: none)
  /// Per scored set (train, test[, validation]): metric = vote accuracy (classification) or MSE
  /// of the mean; NLL, Brier, ECE from the members' mean probabilities, or the Gaussian NLL of
  /// mean ± sd (regression).
  std::vector<ensemble::SetScores> scores;
  /// Regression, per scored set: the predictive mixture's coverage and the members' own.
  std::vector<std::array<double, kCoverageLevels.size()>> coverage, mean_coverage;
  ensemble::NoiseEstimate noise;                    ///< regression: the σ² behind the NLL and the coverage
  std::array<std::vector<double>, 2> block_metric;  ///< stages: train, test per block of the window
  std::int64_t members = 0;
  /// Message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(name, temperature, stage, scores, coverage, mean_coverage, noise, block_metric, members);
  }
  void save(ByteWriter& w) const;
  static EnsembleReport load(ByteReader& r);
};

/// Every candidate and the run's choice.
struct RunReport {
  /// The deep ensemble first (retrofit), then the simmering stages in order.
  std::vector<EnsembleReport> candidates;
  /// Whether the candidates were compared on the validation set (a ladder with
  /// ensemble.select_by != none); then `selection` holds the comparison.
  bool compared = false;
  ensemble::Selection selection;
  std::int64_t selected = 0;           ///< the candidate that is the run's ensemble
  std::int64_t diagnostics_stage = 0;  ///< the stage in /diagnostics (-1: no stage, Adam alone)
  /// The run's ensemble against the deep ensemble on the validation rows (when both exist and
  /// differ): the per-row differences (ensemble − deep) of the NLL and of the metric's loss (1 −
  /// [vote correct], or the squared error), with their standard errors: the end of the run says
  /// whether a margin is more than the validation rows' noise.
  bool against_deep = false;
  ensemble::PairedDifference validation_nll, validation_metric;
  /// A ladder with a validation set and more than one candidate: the candidates stacked
  /// (ensemble/selection.hpp's `stack`: weights, one per candidate before it, maximising the
  /// validation rows' likelihood of one mixture of their predictives), and the stacked candidate
  /// (ensemble::stacked_candidate) the last of `candidates`: the run's ensemble with
  /// ensemble.select_rule = stacking, else reported beside the others.
  bool stacked = false;
  ensemble::Stacking stacking;
  [[nodiscard]] const EnsembleReport& chosen() const { return candidates.at(static_cast<std::size_t>(selected)); }
  /// The deep ensemble's report, or nullptr.
  [[nodiscard]] const EnsembleReport* deep() const {
    return !candidates.empty() && candidates.front().stage == kDeepStage ? &candidates.front() : nullptr;
  }
  /// Message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(candidates, compared, selection, selected, diagnostics_stage, against_deep, validation_nll, validation_metric,
       stacked, stacking);
    ar.require(selected >= 0 && selected < static_cast<std::int64_t>(candidates.size()),
               "report: the chosen candidate is out of range");
  }
  void save(ByteWriter& w) const;
  /// What save wrote: all of `r`.
  static RunReport load(ByteReader& r);
};

/// Stage `stage`'s candidate from rank 0's pooled ensemble of it and its pooled diagnostics.
ensemble::Candidate stage_candidate(const run::Problem& p, std::int64_t stage, const ensemble::PooledEnsemble& pooled,
                                    const ensemble::PooledDiagnostics& diagnostics);

/// How a run chooses its ensemble among its candidates: the keys behind the rule, from a
/// run::Problem (the run) or an archive's configuration (simmer_analyze merge).
struct SelectionPolicy {
  std::int64_t stages = 0;  ///< simmering stages (0: Adam alone)
  bool ladder = false;      ///< simmer.ladder set
  bool parallel_rungs = false;
  bool has_validation = false;           ///< a validation set with rows
  ensemble::SelectionOptions selection;  ///< ensemble.select_by, select_rule
  static SelectionPolicy of(const run::Problem& p);
};

/// Scores every candidate (deep ensemble first, then the stages in order) on `scored` and makes
/// the choice `policy` describes (the rule below); the stages' block metrics are left empty. When
/// it stacks them, the stacked candidate is appended to `candidates` (and to the report's).
RunReport choose(const SelectionPolicy& policy, std::vector<ensemble::Candidate>& candidates,
                 const std::vector<ensemble::ScoredSet>& scored);

/// What /selection holds beside the report's candidates: the rule, the scored sets' names, the
/// validation rows and each candidate's count of drifting trajectories (NaN for the deep ensemble).
struct SelectionTable {
  SelectionPolicy policy;
  bool classification = false;
  double bayes_temperature = 1.0;
  std::vector<std::string> scored_sets;
  std::int64_t validation_rows = 0;
  std::vector<double> drifting;
};

/// Collective. /selection: the candidates' table (names, temperatures, members, drifting counts,
/// every score) and the choice, with the validation losses when the candidates were compared.
/// The run's report and simmer_analyze merge of ladder runs write it.
void write_selection(io::ParallelFile& f, const SelectionTable& table, const RunReport& report);

/// Scores every candidate (deep ensemble first, then the stages; `diagnostics[k]` the stages'
/// pooled diagnostics for their block metrics) and makes the run's choice (rank 0).
/// Without a ladder the run's ensemble is its one simmering stage (the deep ensemble is reported
/// beside it); with one, the candidate with the lowest validation loss (ensemble.select_by,
/// ensemble.select_rule; with `stacking`, the stacked candidates, appended to `candidates`), or the
/// last rung with select_by = none; Adam alone: the deep ensemble.
RunReport choose(const run::Problem& p, std::vector<ensemble::Candidate>& candidates,
                 const std::vector<const ensemble::PooledDiagnostics*>& diagnostics);

/// Collective (every rank passes the same numbers): /baseline/<split>_<score> [chain], the
/// /metrics attributes (baseline, ensemble = the chosen candidate, deep_ensemble), /diagnostics
/// of the stage the report names, and with a ladder /ladder/rung_<k> (scores and diagnostics) and
/// /selection (the candidates' table).
void write_report(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& t,
                  const RunReport& report);

/// The final table on stdout (rank 0 calls it): baseline, deep ensemble and the run's ensemble
/// on every scored set, the candidates' table of a ladder, the stationarity verdicts in one line,
/// curvature and loss rise, and T's posterior reading.
void print_report(const run::Problem& p, const std::vector<run::ChainReport>& t, const RunReport& report);

/// Where the time went (CPU seconds summed over ranks: gradient steps, evaluations, gathers and
/// I/O, all), the archive and its collective transfers, and the diverged trajectories (rank 0);
/// `members`: the simmering candidates' (0: the diverged trajectories left them none, and it says so).
void print_footer(const run::Problem& p, const double cpu_parts[4], double wall, int ranks,
                  const std::int64_t io_counts[2], const std::vector<std::int64_t>& diverged, std::int64_t members);

/// "3 of 4 trajectories (2 stopped by the health check, 1 exploded: rms ...); their members
/// before that are in the ensemble": the diverged trajectories of any stage ("" when none), with
/// `members` the simmering candidates'.
std::string diverged_summary(const std::vector<run::ChainReport>& t, std::int64_t members);

/// Rank 0: the run's last lines, for a person: which ensemble is the result, whether it beats the
/// deep ensemble on validation and test NLL and metric (and whether the validation margin is
/// more than the rows' noise), and what to do about drifting, not mixed or diverged trajectories.
void print_conclusion(const run::Problem& p, const std::vector<run::ChainReport>& t, const RunReport& report);

/// The smallest stacking weight the run's lines name (the candidates' shares, the T line).
inline constexpr double kShownStackingWeight = 0.005;

/// The line under a ladder's candidates' table that gives the stacking weights (those of
/// kShownStackingWeight or more) and whether the stacked candidates are the run's ensemble (`chosen`), in the run's
/// final table and in simmer_analyze summary alike.
std::string stacking_line(const std::vector<std::string>& names, const std::vector<double>& weights,
                          std::int64_t sweeps, bool chosen);

/// The temperature line printed at the start: T in units of T_Bayes, or the noise sd it
/// stands for when that is unknown (every rung of a ladder).
std::string temperature_reading(const run::Problem& p);

}  // namespace simmer::parallel
