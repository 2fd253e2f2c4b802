#pragma once
/// \file
/// Online ensemble aggregation: nothing here needs the stored networks. Members are added one
/// at a time in a fixed order (the caller's), so results are bit-reproducible.

#include <cstdint>
#include <vector>

#include "simmer/core/types.hpp"
#include "simmer/core/visit.hpp"

namespace simmer::ensemble {

/// Regression: running mean and variance (Welford) of member predictions per point and output.
class MeanAccumulator {
 public:
  MeanAccumulator() = default;
  MeanAccumulator(Index points, Index outputs);
  /// Add one member's predictions [points][outputs] in target units.
  void add(ConstBatchView prediction);
  [[nodiscard]] std::int64_t members() const { return members_; }
  [[nodiscard]] const Matrix& mean() const { return mean_; }
  /// Unbiased sample variance (0 with fewer than two members).
  [[nodiscard]] Matrix variance() const;
  /// Raw state, for checkpoints and archives: mean and Σ (p - mean)².
  [[nodiscard]] const Matrix& m2() const { return m2_; }
  /// Combine with another accumulator's state (Chan et al.); merging per-trajectory partials in
  /// a fixed order gives the same bits however trajectories were spread over ranks.
  void merge(std::int64_t members, const Matrix& mean, const Matrix& m2);
  /// Forget all members (keeps the shape).
  void clear();
  /// Checkpoint and message fields (core/visit.hpp): loading keeps a constructed shape.
  template <class Ar>
  void fields(Ar& ar) {
    ar(members_, shaped(mean_), shaped(m2_));
    ar.require(m2_.rows() == mean_.rows() && m2_.cols() == mean_.cols(), "running means have the wrong shape");
    if constexpr (Ar::loading) delta_.resize(mean_.rows(), mean_.cols());
  }

 private:
  std::int64_t members_ = 0;
  Matrix mean_;
  Matrix m2_;
  Matrix delta_;  ///< scratch
};

/// Classification: each member votes its arg-max class (ties: lowest index, docs/METHOD.md §5).
class VoteAccumulator {
 public:
  VoteAccumulator() = default;
  VoteAccumulator(Index points, Index classes);
  /// Add one member's logits [points][classes] (or [points][1] for a binary logit).
  void add(ConstBatchView scores);
  /// Add votes already counted elsewhere (same shape).
  void add_votes(const Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& votes,
                 std::int64_t members);
  [[nodiscard]] std::int64_t members() const { return members_; }
  using Votes = Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  [[nodiscard]] const Votes& votes() const { return votes_; }
  /// Majority class per point (ties: lowest class index).
  [[nodiscard]] std::vector<std::int64_t> majority() const;
  /// Vote fractions [points][classes].
  [[nodiscard]] Matrix fractions() const;
  /// Checkpoint and message fields (core/visit.hpp): loading keeps a constructed shape.
  template <class Ar>
  void fields(Ar& ar) {
    ar(members_, shaped(votes_));
  }

 private:
  std::int64_t members_ = 0;
  Votes votes_;
};

/// Arg-max per row, lowest index on ties.
std::vector<std::int64_t> argmax_rows(ConstBatchView scores);

/// The class each row votes for: arg-max of the logits, or, for a single logit (binary
/// cross-entropy), class 1 when the logit is > 0.
std::vector<std::int64_t> predicted_classes(ConstBatchView scores);

/// Metrics of docs/METHOD.md §5 (NaN for an empty set).
double accuracy(const std::vector<std::int64_t>& predicted, const std::vector<std::int64_t>& truth);
double mean_squared_error(ConstBatchView prediction, ConstBatchView truth);
double sum_squared_error(ConstBatchView prediction, ConstBatchView truth);
/// Coefficient of determination 1 - SSE / Σ (t - mean t)², over all outputs.
double r_squared(ConstBatchView prediction, ConstBatchView truth);

}  // namespace simmer::ensemble
