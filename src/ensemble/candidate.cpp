#include "simmer/ensemble/candidate.hpp"

#include <algorithm>
#include <cmath>

#include "simmer/core/error.hpp"
#include "simmer/ensemble/predictive.hpp"
#include "simmer/ensemble/selection.hpp"

namespace simmer::ensemble {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kLog2Pi = 1.8378770664093453;  // log(2π)

constexpr std::size_t kValidationSet = 2;  ///< scored sets: 0 train, 1 test, 2 validation

/// Regression: the candidate's σ², or the rule's when it has none yet.
NoiseEstimate noise_of(const Candidate& c, const std::vector<ScoredSet>& scored) {
  return c.noise.known() ? c.noise : estimate_noise(c, scored);
}

}  // namespace

NoiseEstimate estimate_noise(const Candidate& c, const std::vector<ScoredSet>& scored) {
  if (c.classification) return {};
  const bool held_out = scored.size() > kValidationSet && scored[kValidationSet].rows() > 0;
  const std::size_t set = held_out ? kValidationSet : 0;
  return noise_from_residuals(view(c.means.at(set).mean()), view(*scored.at(set).truth),
                              held_out ? NoiseSource::validation : NoiseSource::training);
}

CandidateScores score(const Candidate& c, const std::vector<ScoredSet>& scored) {
  CandidateScores out;
  const std::vector<double> nan(SetScores::kFields, kNaN);
  if (!c.classification && c.members > 0) out.noise = noise_of(c, scored);
  for (std::size_t s = 0; s < scored.size(); ++s) {
    SetScores scores = SetScores::from(nan.data());
    std::array<double, kCoverageLevels.size()> coverage{}, mean_coverage{};
    coverage.fill(kNaN);
    mean_coverage.fill(kNaN);
    if (c.members > 0) {
      if (c.classification) {
        scores = score_probabilities(view(c.probability.at(s)), *scored[s].labels);
        scores.metric = accuracy(c.votes.at(s).majority(), *scored[s].labels);
      } else {
        const ConstBatchView truth = view(*scored[s].truth);
        scores = score_with_noise(view(c.means.at(s).mean()), c.means[s].variance(), out.noise.variance, truth);
        if (s < c.components.size()) coverage = predictive_coverage(c.components[s], out.noise, truth);
        for (std::size_t l = 0; l < kCoverageLevels.size(); ++l)
          mean_coverage[l] = c.coverage.at(s).coverage(kCoverageLevels[l]);
      }
    }
    out.sets.push_back(scores);
    if (!c.classification) {
      out.coverage.push_back(coverage);
      out.mean_coverage.push_back(mean_coverage);
    }
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
  const Matrix noise = noise_of(c, scored).variance;
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

std::vector<std::vector<double>> row_log_densities(const std::vector<Candidate>& candidates,
                                                   const std::vector<ScoredSet>& scored, std::size_t set) {
  std::vector<std::vector<double>> out;
  for (const auto& c : candidates) {
    std::vector<double> rows = row_losses(c, scored, set).nll;
    const double outputs =
        c.classification || c.means.empty() ? 1.0 : static_cast<double>(c.means.at(set).mean().cols());
    for (double& v : rows) v *= -outputs;
    out.push_back(std::move(rows));
  }
  return out;
}

StackedScores score_stacked(const std::vector<Candidate>& candidates, const std::vector<ScoredSet>& scored,
                            const std::vector<double>& w) {
  if (w.size() != candidates.size()) throw Error("internal: a stacking weight per candidate");
  StackedScores out;
  const bool known = std::all_of(w.begin(), w.end(), [](double v) { return std::isfinite(v); });
  for (std::size_t s = 0; s < scored.size(); ++s) {
    if (!known || candidates.empty() || scored[s].rows() == 0) {
      out.nll.push_back(kNaN);
      out.metric.push_back(kNaN);
      continue;
    }
    // NLL: the mixture's density, per output (the candidates' NLL is the mean over outputs).
    const std::vector<double> log_p = mixture_log_density(row_log_densities(candidates, scored, s), w);
    const bool classification = candidates.front().classification;
    Matrix mixture;  // the weighted mean of the candidates' probabilities or means
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      if (w[c] <= 0.0) continue;
      const Matrix& m = classification ? candidates[c].probability.at(s) : candidates[c].means.at(s).mean();
      if (mixture.size() == 0) mixture = Matrix::Zero(m.rows(), m.cols());
      mixture += w[c] * m;
    }
    const double outputs = classification ? 1.0 : static_cast<double>(mixture.cols());
    double nll = 0.0;
    for (const double v : log_p) nll -= v / outputs;
    out.nll.push_back(nll / static_cast<double>(log_p.size()));
    if (classification) {
      out.metric.push_back(accuracy(argmax_rows(view(mixture)), *scored[s].labels));
    } else {
      out.metric.push_back(mean_squared_error(view(mixture), view(*scored[s].truth)));
    }
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
      if (s < scored_.size()) {
        probability_sums_.emplace_back(rows[s], classes);
        entropy_sums_.emplace_back(rows[s], 1);
      }
    } else {
      candidate_.means.emplace_back(rows[s], outputs);
      candidate_.components.emplace_back();
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
      row_entropy(view(scratch_), entropy_scratch_);
      entropy_sums_[set].add(view(entropy_scratch_));
      candidate_.probability.resize(scored_.size());
      candidate_.probability[set] = probability_sums_[set].mean();
      candidate_.member_entropy.resize(scored_.size());
      candidate_.member_entropy[set] = entropy_sums_[set].mean();
    }
  } else {
    candidate_.means.at(set).add(prediction);
    candidate_.components.at(set).emplace_back(prediction.rows(), prediction.cols()).add(prediction);
    if (set < scored_.size()) candidate_.coverage[set].add(prediction, view(*scored_[set].truth));
  }
}

void DeepEnsembleBuilder::done() {
  candidate_.members += 1;
  if (!candidate_.classification && candidate_.members > 0) candidate_.noise = estimate_noise(candidate_, scored_);
}

}  // namespace simmer::ensemble
