#pragma once
/// \file
/// Min–max scaling to [-1, 1], fitted on the training split (docs/METHOD.md §6).

#include "simmer/core/types.hpp"

namespace simmer::data {

/// Per-column affine map raw -> [-1, 1]: s = 2 (v - min) / (max - min) - 1. A constant column
/// (max == min) maps to 0 and back to its value.
class MinMaxScaler {
 public:
  MinMaxScaler() = default;
  /// Fit on the rows of `m` (columns are variables).
  static MinMaxScaler fit(const Matrix& m);
  /// From stored bounds (e.g. read back from an archive).
  MinMaxScaler(Eigen::RowVectorXd min, Eigen::RowVectorXd max);

  [[nodiscard]] Matrix transform(const Matrix& raw) const;
  [[nodiscard]] Matrix inverse(const Matrix& scaled) const;

  /// raw = scale ⊙ s + offset, per column: what a network output is un-scaled by.
  [[nodiscard]] Eigen::RowVectorXd scale() const;
  [[nodiscard]] Eigen::RowVectorXd offset() const;

  /// Whether column `c`'s scale and offset are finite: false when max - min or max + min of
  /// the fitted values overflow a double (values near ±1.8e308), and then nothing scales.
  [[nodiscard]] bool finite_bounds(Index c) const;

  [[nodiscard]] const Eigen::RowVectorXd& min() const { return min_; }
  [[nodiscard]] const Eigen::RowVectorXd& max() const { return max_; }
  [[nodiscard]] Index columns() const { return min_.size(); }

 private:
  Eigen::RowVectorXd min_;
  Eigen::RowVectorXd max_;
};

}  // namespace simmer::data
