#pragma once
/// \file
/// The ensembles a run reports and chooses among (issue 17): a simmering stage's pooled members
/// (one stage without a ladder, one per rung of simmer.ladder) and the deep ensemble of the
/// trajectories' Adam end points (Lakshminarayanan, Pritzel & Blundell 2017): what a
/// practitioner does anyway, and what a retrofit job has already trained. A `Candidate` holds
/// everything /ensemble/<set> keeps and every score needs, whatever it came from; the scores and
/// the per-row losses behind a validation score's standard error are computed from it alike.
/// No MPI: rank 0 builds the candidates from what the driver gathered, in trajectory order.

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "simmer/core/types.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/predictive.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"

namespace simmer::ensemble {

struct Candidate {
  std::string name;  ///< "deep_ensemble", or the simmering stage's "rung_<k>" ("simmering" without a ladder)
  /// The stage's (final) temperature in loss units; 0 for the deep ensemble (no heat at all).
  double temperature = std::numeric_limits<double>::quiet_NaN();
  bool classification = false;
  std::int64_t members = 0;               ///< networks that voted or entered the means (on the training set)
  std::vector<VoteAccumulator> votes;     ///< classification, per evaluation set
  std::vector<Matrix> probability;        ///< classification, per scored set: the members' mean softmax
  std::vector<Matrix> member_entropy;     ///< classification, per scored set: the members' mean entropy [rows][1]
  std::vector<MeanAccumulator> means;     ///< regression, per evaluation set
  std::vector<CoverageCounter> coverage;  ///< regression, per scored set: members-only coverage counts
  /// Regression, per evaluation set: the predictive mixture's components (ensemble/predictive.hpp),
  /// one per trajectory (its members of this stage; none: zero weight) or, for the deep ensemble,
  /// one per Adam end point.
  std::vector<std::vector<MeanAccumulator>> components;
  /// Regression: σ² per output (estimate_noise), unknown until the candidate is complete.
  NoiseEstimate noise;
};

/// The noise rule (ensemble/predictive.hpp): the mean squared residual of the candidate's mean on
/// the validation set (scored set 2) where there is one with rows, else on the training set.
NoiseEstimate estimate_noise(const Candidate& c, const std::vector<ScoredSet>& scored);

/// One candidate's scores on each scored set: classification: the vote's accuracy and the
/// NLL, Brier score and ECE of the mean probabilities; regression: MSE and R² of the mean, the
/// Gaussian NLL of mean ± sd with sd² = the members' variance + σ² (the candidate's `noise`, or
/// estimate_noise's when unknown), the predictive coverage of the mixture's central intervals
/// and the coverage of the members' own central intervals (no noise).
struct CandidateScores {
  std::vector<SetScores> sets;                                            ///< per scored set
  std::vector<std::array<double, kCoverageLevels.size()>> coverage;       ///< regression, per scored set: predictive
  std::vector<std::array<double, kCoverageLevels.size()>> mean_coverage;  ///< regression, per scored set: members only
  NoiseEstimate noise;                                                    ///< regression: the σ² used
};
CandidateScores score(const Candidate& c, const std::vector<ScoredSet>& scored);

/// Per-row losses of a candidate on scored set `set`, whose means are its scores: `nll` is
/// −log p_y (classification, floored as in score_probabilities) or the row's Gaussian NLL
/// averaged over its outputs; `metric` is 1 − [vote = y] (classification: the mean is the error
/// rate) or the row's squared error averaged over its outputs (the mean is the MSE). Lower is
/// better for both.
struct RowLosses {
  std::vector<double> nll, metric;
};
RowLosses row_losses(const Candidate& c, const std::vector<ScoredSet>& scored, std::size_t set);

/// Stacking the candidates (selection.hpp's `stack`) on scored set `set`: per candidate, per row
/// the log of its predictive density of the truth, log p_c(y_i): the probability of the label
/// (classification) or the Gaussian of the row's NLL, summed over the outputs (regression), so
/// that −RowLosses::nll is its mean over the outputs.
std::vector<std::vector<double>> row_log_densities(const std::vector<Candidate>& candidates,
                                                   const std::vector<ScoredSet>& scored, std::size_t set);

/// The stacked mixture as a candidate like the others (selection.hpp's `stack` gives `w`, one weight
/// per candidate): every member of candidate c counted k_c = round(w_c 2^32 / n_c) times (n_c its
/// members), so that candidate c's share of the ensemble is w_c, to within n_c / (w_c 2^33)
/// relative (a weight below n_c / 2^33 drops out). Every rule for a candidate then applies
/// unchanged: the vote of the weighted members, their mean probabilities and entropy, the weighted
/// mean and spread, the mixture's components (per trajectory, its components of every candidate
/// merged), the members' coverage, and its own σ² (estimate_noise of its mean). `members` counts the
/// networks with a positive weight; the accumulators count the multiplied members. Temperature
/// NaN. No members (every weight 0 or NaN): scores NaN.
Candidate stacked_candidate(const std::vector<Candidate>& candidates, const std::vector<double>& w,
                            const std::vector<ScoredSet>& scored, std::string name);

/// The deep ensemble built one network at a time, in trajectory order: each network's outputs
/// (logits, or target units) on every evaluation set.
class DeepEnsembleBuilder {
 public:
  /// `rows`: rows of every evaluation set (scored sets first); `scored`: their truth.
  DeepEnsembleBuilder(bool classification, Index classes, Index outputs, const std::vector<Index>& rows,
                      std::vector<ScoredSet> scored);
  /// One network's outputs on evaluation set `set`; call for every set, then `done`.
  void add(std::size_t set, ConstBatchView prediction);
  /// The network is complete (its noise estimate updated: the deep ensemble so far).
  void done();
  [[nodiscard]] const Candidate& candidate() const { return candidate_; }

 private:
  Candidate candidate_;
  std::vector<ScoredSet> scored_;
  std::vector<MeanAccumulator> probability_sums_, entropy_sums_;
  Matrix scratch_, entropy_scratch_;
};

}  // namespace simmer::ensemble
