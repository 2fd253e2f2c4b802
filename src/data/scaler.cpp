#include "simmer/data/scaler.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "simmer/core/error.hpp"

namespace simmer::data {
namespace {

void check_columns(const char* what, Index expected, Index got) {
  if (expected != got) {
    throw Error(std::string("MinMaxScaler::") + what + ": the scaler was fitted on " + std::to_string(expected) +
                " columns, the matrix has " + std::to_string(got));
  }
}

}  // namespace

MinMaxScaler MinMaxScaler::fit(const Matrix& m) {
  if (m.rows() == 0) throw Error("MinMaxScaler::fit: no rows to fit on");
  if (!m.allFinite()) throw Error("MinMaxScaler::fit: the data contain NaN or infinite values");
  return {m.colwise().minCoeff(), m.colwise().maxCoeff()};
}

MinMaxScaler::MinMaxScaler(Eigen::RowVectorXd min, Eigen::RowVectorXd max)
    : min_(std::move(min)), max_(std::move(max)) {
  if (min_.size() != max_.size()) {
    throw Error("MinMaxScaler: " + std::to_string(min_.size()) + " minima but " + std::to_string(max_.size()) +
                " maxima");
  }
  for (Index c = 0; c < min_.size(); ++c) {
    if (!std::isfinite(min_[c]) || !std::isfinite(max_[c]) || min_[c] > max_[c]) {
      throw Error("MinMaxScaler: column " + std::to_string(c) + " has bounds [" + std::to_string(min_[c]) + ", " +
                  std::to_string(max_[c]) + "]; need finite min <= max");
    }
  }
}

Matrix MinMaxScaler::transform(const Matrix& raw) const {
  check_columns("transform", columns(), raw.cols());
  Matrix scaled(raw.rows(), raw.cols());
  for (Index c = 0; c < raw.cols(); ++c) {
    const double range = max_[c] - min_[c];
    if (range == 0.0) {
      scaled.col(c).setZero();
      continue;
    }
    // Written as in the header, not with a precomputed reciprocal, so the fitted minimum and
    // maximum land on exactly -1 and 1.
    for (Index r = 0; r < raw.rows(); ++r) {
      scaled(r, c) = 2.0 * (raw(r, c) - min_[c]) / range - 1.0;
    }
  }
  return scaled;
}

Matrix MinMaxScaler::inverse(const Matrix& scaled) const {
  check_columns("inverse", columns(), scaled.cols());
  // Through scale() and offset() so un-scaling a network output elsewhere gives the same bits.
  const Eigen::RowVectorXd s = scale();
  const Eigen::RowVectorXd o = offset();
  Matrix raw(scaled.rows(), scaled.cols());
  for (Index r = 0; r < scaled.rows(); ++r) {
    raw.row(r) = scaled.row(r).cwiseProduct(s) + o;
  }
  return raw;
}

bool MinMaxScaler::finite_bounds(Index c) const {
  if (max_[c] == min_[c]) return true;  // scale 0, offset the value itself
  return std::isfinite(max_[c] - min_[c]) && std::isfinite(0.5 * (max_[c] + min_[c]));
}

Eigen::RowVectorXd MinMaxScaler::scale() const { return 0.5 * (max_ - min_); }

Eigen::RowVectorXd MinMaxScaler::offset() const {
  // A constant column has scale 0, so its offset alone must give the value back exactly.
  Eigen::RowVectorXd o = 0.5 * (max_ + min_);
  for (Index c = 0; c < o.size(); ++c) {
    if (max_[c] == min_[c]) o[c] = min_[c];
  }
  return o;
}

}  // namespace simmer::data
