#pragma once
/// \file
/// The configurational temperature, a check of the sampled law that the kinetic temperature
/// cannot give (issue 29): for positions drawn from exp(−U/T), integration by parts gives
/// ⟨∇U·M⁻¹∇U⟩ = T ⟨tr(M⁻¹∇²U)⟩ for any constant positive-definite M (Rugh 1997; Jepps, Ayton &
/// Evans 2000; the mass-weighted form with M the particle masses). The NHC thermostat holds the
/// *kinetic* temperature at T whatever the step, but a leapfrog step near its stability limit
/// samples positions from a law wider than exp(−U/T) (on a harmonic direction of angular
/// frequency ω the variance is T/(k(1 − (ωh/2)²))), so T_conf = ⟨|∇U|²_M⁻¹⟩ / ⟨tr M⁻¹∇²U⟩ rises
/// above T as the discretisation bias grows.
///
/// U is the integrator's potential: L plus, with a Gaussian prior, T Σ p_i x_i²/2 (NhcOptions::
/// prior_precision p), whose gradient and Hessian diagonal are added exactly. The trace of
/// M⁻¹∇²L is Hutchinson's estimate zᵀM⁻¹(∇²L z) with Rademacher probes z (the probes of the
/// curvature report), H z from central gradient differences as in stability.hpp; the gradient
/// at x is the mean of the two differenced gradients (error O(ε²)), so one sample costs two
/// gradient evaluations per probe.

#include <cmath>

#include "simmer/core/rng.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::train {

/// |T_conf/T − 1| above this: the run warns that the step biases the sampled law (or that the
/// window is too short to tell). The same bound as the thermostat tests' and issue 29's.
inline constexpr double kConfigurationalTolerance = 0.05;

/// Whether a window's T_conf/T = `ratio` with standard error `error` (both relative to T) is
/// measurably off: |ratio − 1| − 2·error > `tolerance`. A ratio without a standard error (one
/// sample, or an archive from before it) is not judged: one sample's ratio was called off by 5 %
/// alone. The one rule of the verdict, the run's warning and the summary's.
inline bool configurational_off(double ratio, double error, double tolerance = kConfigurationalTolerance) {
  if (!(error >= 0.0) || !std::isfinite(error)) return false;
  return ratio == ratio && (ratio - 1.0 > tolerance + 2.0 * error || 1.0 - ratio > tolerance + 2.0 * error);
}

/// One sample of the two sums at a position. Averaged over a window, their ratio is T_conf.
struct ConfigurationalSample {
  double gradient_sq = 0.0;  ///< ∇U·M⁻¹∇U
  double trace = 0.0;        ///< tr(M⁻¹∇²U), Hutchinson's estimate
};

/// The sample at `x` (left unchanged; it may be the network's own vector) at temperature `T`
/// (for the prior's part), with `masses` (nullptr or empty: unit) and `prior_precision` (nullptr
/// or empty: no prior), from `probes` Rademacher probes drawn from `rng`.
template <class S>
ConfigurationalSample configurational_sample(BasicObjective<S>& objective, VectorOf<S>& x, double temperature,
                                             const Vector* masses, const Vector* prior_precision, Rng& rng,
                                             int probes = 1);

/// Window sums of configurational samples and of the kinetic and target temperatures at the
/// same steps; their ratios are the reported temperatures (NaN without samples).
struct ThermometerSums {
  std::int64_t samples = 0;
  double gradient_sq = 0.0, trace = 0.0, kinetic = 0.0, target = 0.0;
  /// Σ a², Σ b², Σ ab of the samples' a = ∇U·M⁻¹∇U and b = tr(M⁻¹∇²U): the ratio's standard error.
  double gradient_sq_sq = 0.0, trace_sq = 0.0, cross = 0.0;
  void add(const ConfigurationalSample& c, double kinetic_temperature, double target_temperature);
  [[nodiscard]] double configurational_temperature() const;
  /// The standard error of configurational_temperature() by the delta method, as if the samples
  /// were independent (NaN with fewer than two): sqrt((s_a² − 2R s_ab + R² s_b²)/n)/b̄. A single
  /// Hutchinson probe's trace is noisy where one eigenvalue dominates the Hessian (its variance
  /// is 2 Σ_{i≠j} H_ij²), so a window's T_conf can be far from T by noise alone.
  [[nodiscard]] double configurational_stderr() const;
  [[nodiscard]] double kinetic_temperature() const;
  [[nodiscard]] double target_temperature() const;
  /// Checkpoint and message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(samples, gradient_sq, trace, kinetic, target, gradient_sq_sq, trace_sq, cross);
  }
};

}  // namespace simmer::train
