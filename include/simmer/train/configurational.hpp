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

#include "simmer/core/rng.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::train {

/// |T_conf/T − 1| above this: the run warns that the step biases the sampled law (or that the
/// window is too short to tell). The same bound as the thermostat tests' and issue 29's.
inline constexpr double kConfigurationalTolerance = 0.05;

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
  void add(const ConfigurationalSample& c, double kinetic_temperature, double target_temperature);
  [[nodiscard]] double configurational_temperature() const;
  [[nodiscard]] double kinetic_temperature() const;
  [[nodiscard]] double target_temperature() const;
  /// Checkpoint and message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(samples, gradient_sq, trace, kinetic, target);
  }
};

}  // namespace simmer::train
