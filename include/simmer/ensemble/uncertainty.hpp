#pragma once
/// \file
/// How good an ensemble's uncertainty is (docs/STATIONARITY.md, "Uncertainty quality"): scores
/// of predicted probabilities (classification) and of a Gaussian predictive or the members'
/// intervals (regression), for the ensemble and the single baseline network alike.
///
/// - classification: probabilities p [rows][classes] are the members' mean softmax (the
///   baseline's own softmax); NLL = mean −log p_y; Brier = mean Σ_k (p_k − [y = k])²; ECE =
///   Σ_bins (n_b/n) |accuracy_b − confidence_b| over 10 equal-width bins of the confidence
///   max_k p_k, a row counting as correct when arg max_k p_k = y.
/// - regression: Gaussian NLL of y under N(mean, sd²) per value, averaged over values; for the
///   ensemble sd² = the members' variance + the noise variance (the ensemble mean's MSE on the
///   validation rows, or the training rows without them: candidate.hpp's estimate_noise), for
///   the baseline sd² = its own MSE on the same rows. Coverage of the central q interval of the members: the
///   fraction of values whose truth has a rank u = (#below + #equal/2)/M among the M member
///   predictions with (1 − q)/2 ≤ u ≤ (1 + q)/2 (counts are integers, so they merge exactly).

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "simmer/core/bytes.hpp"
#include "simmer/core/types.hpp"

namespace simmer::ensemble {

/// Levels of the members' central intervals whose coverage is reported.
inline constexpr std::array<double, 3> kCoverageLevels{0.5, 0.9, 0.95};

/// Softmax of each row of logits into `out` [rows][classes]; a single logit z (binary
/// cross-entropy) gives the two columns [1 − σ(z), σ(z)]. `out` is resized only when its shape
/// differs (no allocation when called again with the same shape).
void class_probabilities(ConstBatchView logits, Matrix& out);

/// The entropy −Σ_k p_k log p_k (nats; 0 log 0 = 0) of each row of probabilities [rows][classes],
/// into `out` [rows][1] (resized only when its shape differs).
void row_entropy(ConstBatchView probabilities, Matrix& out);

/// Scores of one set. NaN where a score does not apply (r2 for classification, the
/// classification scores for regression and the reverse).
struct SetScores {
  double metric = 0;       ///< accuracy (classification) or MSE (regression)
  double r2 = 0;           ///< regression R²
  double nll = 0;          ///< negative log-likelihood per row (classification) or value
  double brier = 0;        ///< classification
  double ece = 0;          ///< classification, 10 bins
  Index worst_row = -1;    ///< the row with the largest share of the error (Brier or squared error)
  double worst_share = 0;  ///< that row's share of the set's total error, in [0, 1]
  static constexpr int kFields = 7;
  [[nodiscard]] std::vector<double> to_vector() const;
  static SetScores from(const double* values);
  /// Checkpoint and message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(metric, r2, nll, brier, ece, worst_row, worst_share);
  }
};

/// Classification scores of probabilities [rows][classes] against labels; `metric` is the
/// accuracy of arg max p (the ensemble's own vote accuracy is kept by the caller).
SetScores score_probabilities(ConstBatchView probabilities, const std::vector<std::int64_t>& labels, int bins = 10);

/// Regression scores of a prediction with a per-value predictive variance (see the file comment).
SetScores score_gaussian(ConstBatchView mean, ConstBatchView variance, ConstBatchView truth);

/// Regression noise variance per output [1][outputs]: the mean squared residual of a prediction
/// on the training set.
Matrix residual_variance(ConstBatchView prediction, ConstBatchView truth);

/// score_gaussian with the variance of every row = `member_variance` (empty: 0, a single
/// network) + `noise` [1][outputs].
SetScores score_with_noise(ConstBatchView mean, const Matrix& member_variance, const Matrix& noise,
                           ConstBatchView truth);

/// Where each truth falls among the members' predictions, counted per value (rows × outputs).
class CoverageCounter {
 public:
  CoverageCounter() = default;
  CoverageCounter(Index rows, Index outputs);
  /// One member's predictions against the truth (same shape).
  void add(ConstBatchView prediction, ConstBatchView truth);
  void merge(const CoverageCounter& other);
  [[nodiscard]] std::int64_t members() const { return members_; }
  /// Fraction of values inside the members' central `level` interval (NaN with no members).
  [[nodiscard]] double coverage(double level) const;
  /// Checkpoint and message fields (core/visit.hpp); loading keeps the counts' length (when
  /// constructed with a shape).
  template <class Ar>
  void fields(Ar& ar) {
    const std::size_t values = below_.size();
    ar(members_, below_, equal_);
    ar.require(below_.size() == equal_.size() && (values == 0 || below_.size() == values),
               "coverage counts have the wrong shape");
  }
  /// Per value (row-major rows × outputs): members below the truth, and equal to it.
  [[nodiscard]] const std::vector<std::int64_t>& below() const { return below_; }
  [[nodiscard]] const std::vector<std::int64_t>& equal() const { return equal_; }
  /// Counts read back from an archive (simmer_analyze merge).
  void restore(std::int64_t members, std::vector<std::int64_t> below, std::vector<std::int64_t> equal);

 private:
  std::int64_t members_ = 0;
  std::vector<std::int64_t> below_;  ///< members with prediction < truth, per value
  std::vector<std::int64_t> equal_;
};

}  // namespace simmer::ensemble
