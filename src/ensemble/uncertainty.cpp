#include "simmer/ensemble/uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/accumulator.hpp"

namespace simmer::ensemble {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kLog2Pi = 1.8378770664093453;  // log(2π)

}  // namespace

void class_probabilities(ConstBatchView logits, Matrix& out) {
  const Index rows = logits.rows();
  const Index classes = logits.cols() == 1 ? 2 : logits.cols();
  if (out.rows() != rows || out.cols() != classes) out.resize(rows, classes);
  if (logits.cols() == 1) {
    for (Index i = 0; i < rows; ++i) {
      const double z = logits(i, 0);
      // σ(z) without overflow for large |z|.
      const double p = z >= 0 ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z) / (1.0 + std::exp(z));
      out(i, 0) = 1.0 - p;
      out(i, 1) = p;
    }
    return;
  }
  for (Index i = 0; i < rows; ++i) {
    const double top = logits.row(i).maxCoeff();
    double sum = 0.0;
    for (Index k = 0; k < classes; ++k) {
      out(i, k) = std::exp(logits(i, k) - top);
      sum += out(i, k);
    }
    out.row(i) /= sum;
  }
}

void row_entropy(ConstBatchView p, Matrix& out) {
  if (out.rows() != p.rows() || out.cols() != 1) out.resize(p.rows(), 1);
  for (Index i = 0; i < p.rows(); ++i) {
    double h = 0.0;
    for (Index k = 0; k < p.cols(); ++k) {
      const double q = p(i, k);
      if (q > 0.0) h -= q * std::log(q);
    }
    out(i, 0) = h;
  }
}

std::vector<double> SetScores::to_vector() const {
  return {metric, r2, nll, brier, ece, static_cast<double>(worst_row), worst_share};
}

SetScores SetScores::from(const double* v) {
  SetScores s;
  s.metric = v[0];
  s.r2 = v[1];
  s.nll = v[2];
  s.brier = v[3];
  s.ece = v[4];
  s.worst_row = std::isfinite(v[5]) ? static_cast<Index>(v[5]) : -1;
  s.worst_share = v[6];
  return s;
}

SetScores score_probabilities(ConstBatchView p, const std::vector<std::int64_t>& labels, int bins) {
  SetScores s;
  s.r2 = kNaN;
  const Index rows = p.rows();
  if (rows == 0 || static_cast<Index>(labels.size()) != rows) {
    s.metric = s.nll = s.brier = s.ece = s.worst_share = kNaN;
    return s;
  }
  std::vector<double> bin_count(static_cast<std::size_t>(bins), 0.0), bin_correct(bin_count), bin_confidence(bin_count);
  double nll = 0.0, brier = 0.0, correct = 0.0, worst = -1.0;
  for (Index i = 0; i < rows; ++i) {
    const auto y = static_cast<Index>(labels[static_cast<std::size_t>(i)]);
    // −log p_y with p floored at the smallest normal double: a member set that gives the truth
    // probability 0 costs 708, not infinity.
    nll -= std::log(std::max(p(i, y), std::numeric_limits<double>::min()));
    double row_brier = 0.0;
    Index best = 0;
    for (Index k = 0; k < p.cols(); ++k) {
      const double d = p(i, k) - (k == y ? 1.0 : 0.0);
      row_brier += d * d;
      if (p(i, k) > p(i, best)) best = k;
    }
    brier += row_brier;
    if (row_brier > worst) {
      worst = row_brier;
      s.worst_row = i;
    }
    const double confidence = p(i, best);
    const bool hit = best == y;
    correct += hit ? 1.0 : 0.0;
    auto b = static_cast<int>(confidence * bins);
    b = std::clamp(b, 0, bins - 1);
    bin_count[static_cast<std::size_t>(b)] += 1.0;
    bin_correct[static_cast<std::size_t>(b)] += hit ? 1.0 : 0.0;
    bin_confidence[static_cast<std::size_t>(b)] += confidence;
  }
  const auto n = static_cast<double>(rows);
  s.metric = correct / n;
  s.nll = nll / n;
  s.brier = brier / n;
  s.worst_share = brier > 0.0 ? worst / brier : 0.0;
  double ece = 0.0;
  for (std::size_t b = 0; b < bin_count.size(); ++b) {
    if (bin_count[b] > 0) ece += std::abs(bin_correct[b] - bin_confidence[b]) / n;
  }
  s.ece = ece;
  return s;
}

SetScores score_gaussian(ConstBatchView mean, ConstBatchView variance, ConstBatchView truth) {
  SetScores s;
  s.brier = s.ece = kNaN;
  if (mean.size() == 0) {
    s.metric = s.r2 = s.nll = s.worst_share = kNaN;
    return s;
  }
  s.metric = mean_squared_error(mean, truth);
  s.r2 = r_squared(mean, truth);
  double nll = 0.0, total = 0.0, worst = -1.0;
  for (Index i = 0; i < mean.rows(); ++i) {
    double row = 0.0;
    for (Index o = 0; o < mean.cols(); ++o) {
      const double r = truth(i, o) - mean(i, o);
      const double var = variance(i, o);
      nll += 0.5 * (kLog2Pi + std::log(var) + r * r / var);
      row += r * r;
    }
    total += row;
    if (row > worst) {
      worst = row;
      s.worst_row = i;
    }
  }
  s.nll = nll / static_cast<double>(mean.size());
  s.worst_share = total > 0.0 ? worst / total : 0.0;
  return s;
}

Matrix residual_variance(ConstBatchView prediction, ConstBatchView truth) {
  return (prediction - truth).cwiseAbs2().colwise().mean();
}

SetScores score_with_noise(ConstBatchView mean, const Matrix& member_variance, const Matrix& noise,
                           ConstBatchView truth) {
  Matrix variance = noise.replicate(mean.rows(), 1);
  if (member_variance.size() > 0) variance += member_variance;
  return score_gaussian(mean, view(variance), truth);
}

CoverageCounter::CoverageCounter(Index rows, Index outputs)
    : below_(static_cast<std::size_t>(rows * outputs), 0), equal_(below_) {}

void CoverageCounter::add(ConstBatchView prediction, ConstBatchView truth) {
  if (static_cast<std::size_t>(prediction.size()) != below_.size()) {
    throw Error("internal: coverage counter shape differs from the prediction");
  }
  for (Index i = 0; i < prediction.size(); ++i) {
    const double p = prediction.data()[i];
    const double t = truth.data()[i];
    below_[static_cast<std::size_t>(i)] += p < t ? 1 : 0;
    equal_[static_cast<std::size_t>(i)] += p == t ? 1 : 0;
  }
  members_ += 1;
}

void CoverageCounter::merge(const CoverageCounter& other) {
  if (other.members_ == 0) return;
  if (below_.size() != other.below_.size()) throw Error("internal: coverage counters differ in shape");
  for (std::size_t i = 0; i < below_.size(); ++i) {
    below_[i] += other.below_[i];
    equal_[i] += other.equal_[i];
  }
  members_ += other.members_;
}

double CoverageCounter::coverage(double level) const {
  if (members_ == 0 || below_.empty()) return kNaN;
  const double low = 0.5 * (1.0 - level), high = 0.5 * (1.0 + level);
  const auto m = static_cast<double>(members_);
  std::size_t inside = 0;
  for (std::size_t i = 0; i < below_.size(); ++i) {
    const double u = (static_cast<double>(below_[i]) + 0.5 * static_cast<double>(equal_[i])) / m;
    inside += (u >= low && u <= high) ? 1 : 0;
  }
  return static_cast<double>(inside) / static_cast<double>(below_.size());
}

void CoverageCounter::restore(std::int64_t members, std::vector<std::int64_t> below, std::vector<std::int64_t> equal) {
  if (below.size() != equal.size()) throw Error("coverage counts differ in length");
  members_ = members;
  below_ = std::move(below);
  equal_ = std::move(equal);
}

}  // namespace simmer::ensemble
