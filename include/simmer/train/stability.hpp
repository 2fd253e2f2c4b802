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

/// The one finite-difference Hessian-vector product (the power iteration here, the Lanczos
/// spectrum, the configurational temperature and the curvature masses all use it):
/// H d ≈ (∇L(x₀ + εd) − ∇L(x₀ − εd)) / 2ε, central differences (error O(ε²)) with ε =
/// difference_step<S>() · max(1, rms x₀). Holds the position x₀ it was made at (`position()`);
/// between products `x` (the network's own parameter vector, say) holds the last probe point, and
/// the product puts it back to x₀ when it goes. No allocation after construction.
template <class S>
class HessianProduct {
 public:
  HessianProduct(BasicObjective<S>& objective, VectorOf<S>& x);
  ~HessianProduct() { *x_ = keep_; }
  HessianProduct(const HessianProduct&) = delete;
  HessianProduct& operator=(const HessianProduct&) = delete;
  /// `hd` = H d at x₀ (float64); with `mean_gradient`, also ∇L(x₀) as the mean of the two
  /// differenced gradients (error O(ε²)).
  void apply(const Vector& d, Vector& hd, Vector* mean_gradient = nullptr);
  [[nodiscard]] int gradients() const { return gradients_; }
  [[nodiscard]] const Vector& position() const { return x0_; }

 private:
  BasicObjective<S>* f_;
  VectorOf<S>* x_;
  VectorOf<S> keep_;
  Vector x0_;
  VectorOf<S> plus_, minus_;
  double eps_ = 0;
  int gradients_ = 0;
};

/// Hutchinson's estimate of diag(∇²L) at `x` (left unchanged): the mean of z ⊙ (H z) over
/// `probes` Rademacher vectors z drawn from `rng` (exact for a diagonal Hessian; for entry i the
/// error has variance Σ_{j≠i} H_ij² / probes). Written into `diagonal` (resized).
template <class S>
void hessian_diagonal(BasicObjective<S>& objective, VectorOf<S>& x, Rng& rng, int probes, Vector& diagonal);

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
/// Langevin thermostat or at T <= 0, and with the Nosé–Hoover–Langevin ones, whose period is
/// π sqrt(2) thermostat_steps steps by construction (NhcOptions::thermostat_steps).
double thermostat_step_limit(const NhcOptions& options, double degrees_of_freedom, double temperature);

/// The relative step of the central gradient differences that estimate H v (times
/// max(1, rms x)): 1e-5 in float64, 5e-3 in float32 (near the cube root of the epsilon, where
/// truncation and rounding errors balance).
template <class S>
constexpr double difference_step() {
  return std::is_same_v<S, float> ? 5e-3 : 1e-5;
}

}  // namespace simmer::train
