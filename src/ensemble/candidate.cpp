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

Candidate stacked_candidate(const std::vector<Candidate>& candidates, const std::vector<double>& w,
                            const std::vector<ScoredSet>& scored, std::string name) {
  if (w.size() != candidates.size() || candidates.empty()) throw Error("internal: a stacking weight per candidate");
  constexpr double kUnits = 4294967296.0;  // 2^32: the multiplied members of all candidates together
  Candidate out;
  out.name = std::move(name);
  out.classification = candidates.front().classification;
  std::vector<std::int64_t> k(candidates.size(), 0);
  double total = 0.0;  // Σ k_c n_c
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    const auto n = static_cast<double>(candidates[c].members);
    if (!(w[c] > 0.0) || !std::isfinite(w[c]) || n <= 0.0) continue;
    k[c] = std::llround(w[c] * kUnits / n);
    total += static_cast<double>(k[c]) * n;
    if (k[c] > 0) out.members += candidates[c].members;
  }
  if (out.members == 0) return out;
  bool first = true;
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    if (k[c] == 0) continue;
    const Candidate& from = candidates[c];
    const double share = static_cast<double>(k[c]) * static_cast<double>(from.members) / total;
    if (first) {  // the shapes, from the first candidate with a weight
      out.votes.resize(from.votes.size());
      for (std::size_t s = 0; s < from.votes.size(); ++s)
        out.votes[s] = VoteAccumulator(from.votes[s].votes().rows(), from.votes[s].votes().cols());
      for (const auto& m : from.means) out.means.emplace_back(m.mean().rows(), m.mean().cols());
      for (const auto& m : from.probability) out.probability.push_back(Matrix::Zero(m.rows(), m.cols()));
      for (const auto& m : from.member_entropy) out.member_entropy.push_back(Matrix::Zero(m.rows(), m.cols()));
      for (const auto& cov : from.coverage) {
        out.coverage.emplace_back();
        out.coverage.back().restore(0, std::vector<std::int64_t>(cov.below().size(), 0),
                                    std::vector<std::int64_t>(cov.equal().size(), 0));
      }
      out.components.resize(from.components.size());
      first = false;
    }
    if (from.votes.size() != out.votes.size() || from.means.size() != out.means.size() ||
        from.probability.size() != out.probability.size() || from.member_entropy.size() != out.member_entropy.size() ||
        from.coverage.size() != out.coverage.size() || from.components.size() != out.components.size())
      throw Error("internal: stacked candidates differ in their sets");
    for (std::size_t s = 0; s < out.votes.size(); ++s)
      out.votes[s].add_votes(from.votes[s].votes() * k[c], from.votes[s].members() * k[c]);
    for (std::size_t s = 0; s < out.probability.size(); ++s) out.probability[s] += share * from.probability[s];
    for (std::size_t s = 0; s < out.member_entropy.size(); ++s) out.member_entropy[s] += share * from.member_entropy[s];
    // m2 × k: each member k times. The ensemble's spread takes each candidate's own (unbiased)
    // variance, m2 n/(n − 1), so that a weight of 1 is that candidate; a component's stays m2 / n.
    const auto multiplied = [&](const MeanAccumulator& m, MeanAccumulator& into, bool unbiased) {
      const auto n = static_cast<double>(m.members());
      const double scale = unbiased && n > 1.0 ? n / (n - 1.0) : 1.0;
      into.merge(m.members() * k[c], m.mean(), m.m2() * (static_cast<double>(k[c]) * scale));
    };
    for (std::size_t s = 0; s < out.means.size(); ++s) multiplied(from.means[s], out.means[s], true);
    for (std::size_t s = 0; s < out.coverage.size(); ++s) {
      CoverageCounter times;
      std::vector<std::int64_t> below = from.coverage[s].below(), equal = from.coverage[s].equal();
      for (auto& v : below) v *= k[c];
      for (auto& v : equal) v *= k[c];
      times.restore(from.coverage[s].members() * k[c], std::move(below), std::move(equal));
      out.coverage[s].merge(times);
    }
    for (std::size_t s = 0; s < out.components.size(); ++s) {  // component t: trajectory t's of every candidate
      if (from.components[s].size() > out.components[s].size()) out.components[s].resize(from.components[s].size());
      for (std::size_t t = 0; t < from.components[s].size(); ++t)
        multiplied(from.components[s][t], out.components[s][t], false);
    }
  }
  if (!out.classification) out.noise = estimate_noise(out, scored);
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
