#include "simmer/ensemble/accumulator.hpp"

#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::ensemble {

MeanAccumulator::MeanAccumulator(Index points, Index outputs)
    : mean_(Matrix::Zero(points, outputs)), m2_(Matrix::Zero(points, outputs)), delta_(points, outputs) {}

void MeanAccumulator::add(ConstBatchView prediction) {
  if (prediction.rows() != mean_.rows() || prediction.cols() != mean_.cols()) {
    throw Error("ensemble: member prediction shape differs from the accumulator's");
  }
  members_ += 1;
  delta_ = prediction - mean_;
  mean_ += delta_ / static_cast<double>(members_);
  m2_.array() += delta_.array() * (prediction - mean_).array();
}

Matrix MeanAccumulator::variance() const {
  if (members_ < 2) return Matrix::Zero(mean_.rows(), mean_.cols());
  return m2_ / static_cast<double>(members_ - 1);
}

void MeanAccumulator::merge(std::int64_t members, const Matrix& mean, const Matrix& m2) {
  if (members == 0) return;
  if (members_ == 0) {
    members_ = members;
    mean_ = mean;
    m2_ = m2;
    return;
  }
  const auto na = static_cast<double>(members_);
  const auto nb = static_cast<double>(members);
  const double n = na + nb;
  delta_ = mean - mean_;
  m2_ += m2 + delta_.cwiseAbs2() * (na * nb / n);
  mean_ += delta_ * (nb / n);
  members_ += members;
}

void MeanAccumulator::clear() {
  members_ = 0;
  mean_.setZero();
  m2_.setZero();
}

VoteAccumulator::VoteAccumulator(Index points, Index classes) : votes_(Votes::Zero(points, classes)) {}

std::vector<std::int64_t> argmax_rows(ConstBatchView scores) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(scores.rows()));
  for (Index i = 0; i < scores.rows(); ++i) {
    Index best = 0;
    for (Index k = 1; k < scores.cols(); ++k) {
      if (scores(i, k) > scores(i, best)) best = k;
    }
    out[static_cast<std::size_t>(i)] = best;
  }
  return out;
}

std::vector<std::int64_t> predicted_classes(ConstBatchView scores) {
  if (scores.cols() != 1) return argmax_rows(scores);
  std::vector<std::int64_t> out(static_cast<std::size_t>(scores.rows()));
  for (Index i = 0; i < scores.rows(); ++i) out[static_cast<std::size_t>(i)] = scores(i, 0) > 0.0 ? 1 : 0;
  return out;
}

void VoteAccumulator::add(ConstBatchView scores) {
  const Index classes = scores.cols() == 1 ? 2 : scores.cols();
  if (scores.rows() != votes_.rows() || classes != votes_.cols()) {
    throw Error("ensemble: member scores shape differs from the vote table's");
  }
  const auto winners = predicted_classes(scores);
  for (Index i = 0; i < scores.rows(); ++i) votes_(i, winners[static_cast<std::size_t>(i)]) += 1;
  members_ += 1;
}

void VoteAccumulator::add_votes(const Votes& votes, std::int64_t members) {
  votes_ += votes;
  members_ += members;
}

std::vector<std::int64_t> VoteAccumulator::majority() const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(votes_.rows()));
  for (Index i = 0; i < votes_.rows(); ++i) {
    Index best = 0;
    for (Index k = 1; k < votes_.cols(); ++k) {
      if (votes_(i, k) > votes_(i, best)) best = k;
    }
    out[static_cast<std::size_t>(i)] = best;
  }
  return out;
}

Matrix VoteAccumulator::fractions() const {
  if (members_ == 0) return Matrix::Zero(votes_.rows(), votes_.cols());
  return votes_.cast<double>() / static_cast<double>(members_);
}

double accuracy(const std::vector<std::int64_t>& predicted, const std::vector<std::int64_t>& truth) {
  if (predicted.size() != truth.size()) throw Error("accuracy: prediction and truth sizes differ");
  if (truth.empty()) return std::nan("");
  std::size_t right = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) right += predicted[i] == truth[i] ? 1 : 0;
  return static_cast<double>(right) / static_cast<double>(truth.size());
}

double sum_squared_error(ConstBatchView prediction, ConstBatchView truth) { return (prediction - truth).squaredNorm(); }

double mean_squared_error(ConstBatchView prediction, ConstBatchView truth) {
  if (truth.size() == 0) return std::nan("");
  return sum_squared_error(prediction, truth) / static_cast<double>(truth.size());
}

double r_squared(ConstBatchView prediction, ConstBatchView truth) {
  if (truth.rows() < 2) return std::nan("");
  const Eigen::RowVectorXd mean = truth.colwise().mean();
  const double total = (truth.rowwise() - mean).squaredNorm();
  return 1.0 - sum_squared_error(prediction, truth) / total;
}

}  // namespace simmer::ensemble
