#include "simmer/ensemble/candidate.hpp"

#include <algorithm>
#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::ensemble {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kLog2Pi = 1.8378770664093453;  // log(2π)

/// Regression: the noise variance [1][outputs], the candidate mean's training MSE (set 0).
Matrix noise_of(const Candidate& c, const std::vector<ScoredSet>& scored) {
  return residual_variance(view(c.means.at(0).mean()), view(*scored.at(0).truth));
}

}  // namespace

CandidateScores score(const Candidate& c, const std::vector<ScoredSet>& scored) {
  CandidateScores out;
  const std::vector<double> nan(SetScores::kFields, kNaN);
  Matrix noise;
  for (std::size_t s = 0; s < scored.size(); ++s) {
    SetScores scores = SetScores::from(nan.data());
    std::array<double, kCoverageLevels.size()> coverage{};
    coverage.fill(kNaN);
    if (c.members > 0) {
      if (c.classification) {
        scores = score_probabilities(view(c.probability.at(s)), *scored[s].labels);
        scores.metric = accuracy(c.votes.at(s).majority(), *scored[s].labels);
      } else {
        if (s == 0) noise = noise_of(c, scored);
        scores = score_with_noise(view(c.means.at(s).mean()), c.means[s].variance(), noise, view(*scored[s].truth));
        for (std::size_t l = 0; l < kCoverageLevels.size(); ++l)
          coverage[l] = c.coverage.at(s).coverage(kCoverageLevels[l]);
      }
    }
    out.sets.push_back(scores);
    if (!c.classification) out.coverage.push_back(coverage);
  }
  return out;
}

RowLosses row_losses(const Candidate& c, const std::vector<ScoredSet>& scored, std::size_t set) {
  RowLosses out;
  const ScoredSet& truth = scored.at(set);
  const Index rows = truth.rows();
  out.nll.resize(static_cast<std::size_t>(rows), kNaN);
  out.metric.resize(static_cast<std::size_t>(rows), kNaN);
  if (c.members == 0) return out;
  if (c.classification) {
    const Matrix& p = c.probability.at(set);
    const std::vector<std::int64_t> vote = c.votes.at(set).majority();
    for (Index i = 0; i < rows; ++i) {
      const auto r = static_cast<std::size_t>(i);
      const auto y = static_cast<Index>((*truth.labels)[r]);
      out.nll[r] = -std::log(std::max(p(i, y), std::numeric_limits<double>::min()));
      out.metric[r] = vote[r] == (*truth.labels)[r] ? 0.0 : 1.0;
    }
    return out;
  }
  const Matrix noise = noise_of(c, scored);
  const Matrix& mean = c.means.at(set).mean();
  const Matrix variance = c.means[set].variance();
  const Matrix& y = *truth.truth;
  for (Index i = 0; i < rows; ++i) {
    double nll = 0.0, squared = 0.0;
    for (Index o = 0; o < mean.cols(); ++o) {
      const double r = y(i, o) - mean(i, o);
      const double var = variance(i, o) + noise(0, o);
      nll += 0.5 * (kLog2Pi + std::log(var) + r * r / var);
      squared += r * r;
    }
    const auto outputs = static_cast<double>(mean.cols());
    out.nll[static_cast<std::size_t>(i)] = nll / outputs;
    out.metric[static_cast<std::size_t>(i)] = squared / outputs;
  }
  return out;
}

DeepEnsembleBuilder::DeepEnsembleBuilder(bool classification, Index classes, Index outputs,
                                         const std::vector<Index>& rows, std::vector<ScoredSet> scored)
    : scored_(std::move(scored)) {
  candidate_.name = "deep_ensemble";
  candidate_.temperature = 0.0;
  candidate_.classification = classification;
  if (scored_.size() > rows.size()) throw Error("internal: more scored sets than evaluation sets");
  for (std::size_t s = 0; s < rows.size(); ++s) {
    if (classification) {
      candidate_.votes.emplace_back(rows[s], classes);
      if (s < scored_.size()) probability_sums_.emplace_back(rows[s], classes);
    } else {
      candidate_.means.emplace_back(rows[s], outputs);
      if (s < scored_.size()) candidate_.coverage.emplace_back(rows[s], outputs);
    }
  }
}

void DeepEnsembleBuilder::add(std::size_t set, ConstBatchView prediction) {
  if (candidate_.classification) {
    candidate_.votes.at(set).add(prediction);
    if (set < scored_.size()) {
      class_probabilities(prediction, scratch_);
      probability_sums_[set].add(view(scratch_));
      candidate_.probability.resize(scored_.size());
      candidate_.probability[set] = probability_sums_[set].mean();
    }
  } else {
    candidate_.means.at(set).add(prediction);
    if (set < scored_.size()) candidate_.coverage[set].add(prediction, view(*scored_[set].truth));
  }
}

}  // namespace simmer::ensemble
