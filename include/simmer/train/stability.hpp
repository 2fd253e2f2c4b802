#pragma once
/// \file
/// Leapfrog stability of a time step: the NHC integrator's drift–kick–drift core is stable for
/// h < 2/sqrt(lambda_max) where lambda_max is the largest eigenvalue of the loss Hessian.

#include <type_traits>

#include "simmer/core/rng.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::train {

struct CurvatureEstimate {
  double lambda_max = 0.0;  ///< largest |eigenvalue| of the Hessian found (Rayleigh quotient)
  int gradients = 0;        ///< gradient evaluations spent
  /// 2 / sqrt(lambda_max): the largest stable leapfrog step (infinite for a flat loss).
  [[nodiscard]] double time_step_limit() const;
};

/// Power iteration on Hessian-vector products from central gradient differences,
/// H v ≈ (∇L(x + εv) − ∇L(x − εv)) / 2ε, starting from a random direction drawn from `rng`.
/// With `masses` (one per parameter), of the mass-weighted Hessian M^(−1/2) H M^(−1/2), whose
/// λ_max bounds the step with those masses (docs/MIXING.md). Leaves `x` unchanged (it may be
/// the network's own parameter vector).
template <class S>
CurvatureEstimate estimate_curvature(BasicObjective<S>& objective, VectorOf<S>& x, Rng& rng, int iterations = 20,
                                     const Vector* masses = nullptr);

/// The Nosé–Hoover chain's own step limit: linearised about equilibrium (Σ m v² ≈ N_f T), the first
/// thermostat velocity obeys w_1'' = −(2 N_f T / Q_1) w_1, so the splitting is stable for
/// h < 2/sqrt(2 N_f T / Q_1) (docs/MIXING.md: measured on a harmonic chain). Infinite with the
/// Langevin thermostat or at T <= 0.
double thermostat_step_limit(const NhcOptions& options, double degrees_of_freedom, double temperature);

/// The relative step of the central gradient differences that estimate H v (times
/// max(1, rms x)): 1e-5 in float64, 5e-3 in float32 (near the cube root of the epsilon, where
/// truncation and rounding errors balance).
template <class S>
constexpr double difference_step() {
  return std::is_same_v<S, float> ? 5e-3 : 1e-5;
}

}  // namespace simmer::train
