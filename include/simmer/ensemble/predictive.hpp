#pragma once
/// \file
/// Regression's predictive law (issue 26; docs/ANALYZE.md, "Predictive intervals"). A value y of
/// a row is predicted by the mixture
///
///   p(y) = Σ_c w_c N(y; m_c, v_c + σ²)
///
/// of its components c and the noise variance σ² of that output. A component is a stored network
/// (m_c its prediction, v_c = 0, equal weights: simmer_analyze predict), or, in a run, one
/// trajectory's members (m_c their mean, v_c their variance, w_c their share of the members: the
/// run does not keep every member's prediction) or one network of the deep ensemble. Intervals are
/// the mixture's quantiles; a value is covered by the central q interval when its probability
/// integral transform F(y) lies in [(1 − q)/2, (1 + q)/2].
///
/// σ² (per output) is the mean squared residual of the ensemble's mean on held-out data: the
/// validation set where the run has one, else the training set (NoiseSource).

#include <array>
#include <span>
#include <vector>

#include "simmer/core/names.hpp"
#include "simmer/core/types.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/uncertainty.hpp"

namespace simmer::ensemble {

/// Where σ² comes from: the validation set's residuals (held out of everything but scoring) or,
/// without a validation split, the training set's.
enum class NoiseSource { validation, training };
inline constexpr Names<NoiseSource, 2> kNoiseSourceNames{
    "noise source", {{{NoiseSource::validation, "validation"}, {NoiseSource::training, "training"}}}};

/// An ensemble's noise variance per output and where it came from.
struct NoiseEstimate {
  Matrix variance;  ///< [1][outputs]; empty before it is estimated
  NoiseSource source = NoiseSource::training;
  [[nodiscard]] bool known() const { return variance.size() > 0; }
  /// The mean over outputs (σ² itself with one output): /metrics' <prefix>noise_variance.
  [[nodiscard]] double mean() const;
  /// Checkpoint and message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(shaped(variance), source);
  }
};

/// σ² [1][outputs] = the mean squared residual of `mean` against `truth` on one set.
NoiseEstimate noise_from_residuals(ConstBatchView mean, ConstBatchView truth, NoiseSource source);

/// One value's mixture: its components' means, variances (before noise) and weights (any
/// positive scale; a zero weight drops a component). Buffers are reused by `resize`.
struct Mixture {
  std::vector<double> mean, variance, weight;
  void resize(std::size_t n) {
    mean.resize(n);
    variance.resize(n);
    weight.resize(n);
  }
};

/// F(y) = Σ w_c Φ((y − m_c) / sqrt(v_c + σ²)) / Σ w_c; a component of zero total variance is a
/// point mass (Φ = 0, 1/2, 1 below, at, above it). NaN without weight.
double mixture_cdf(const Mixture& m, double noise, double y);
/// The `level` quantile F⁻¹(level) (−∞ at 0, +∞ at 1), by safeguarded Newton steps on a bracket,
/// to a relative 1e-12; NaN without weight or for a level outside [0, 1].
double mixture_quantile(const Mixture& m, double noise, double level);

/// The mixture's mean and variances: `model` = the components' spread Σ w (v_c + (m_c − m̄)²) / Σ w
/// (the members' variance, not sample-corrected), `total` = model + σ².
struct MixtureMoments {
  double mean = 0, model = 0, total = 0;
};
MixtureMoments mixture_moments(const Mixture& m, double noise);

/// The mixture of value (row, output) of a set whose components are `parts` (one accumulator
/// each; weight = its members, variance = its members' variance Σ(p − m)²/n), into `out`.
void mixture_at(const std::vector<MeanAccumulator>& parts, Index row, Index output, Mixture& out);

/// Share of the values of `truth` [rows][outputs] inside the central interval of each of
/// kCoverageLevels under the mixture of `parts` and `noise` [1][outputs]; NaN without members.
std::array<double, kCoverageLevels.size()> predictive_coverage(const std::vector<MeanAccumulator>& parts,
                                                               const NoiseEstimate& noise, ConstBatchView truth);

/// The central-interval coverage of values whose probability integral transforms are `pit`, at
/// `level`: the share with (1 − level)/2 ≤ F(y) ≤ (1 + level)/2.
double coverage_of_pit(std::span<const double> pit, double level);

}  // namespace simmer::ensemble
