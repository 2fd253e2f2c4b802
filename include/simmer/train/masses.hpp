#pragma once
/// \file
/// Where per-parameter masses come from (NhcOptions::parameter_masses; docs/MIXING.md): Adam's
/// second moment at the retrofit start (as pSGLD preconditions with RMSprop's), or the variance
/// of each parameter over a warm-up (Stan's windowed diagonal adaptation); and their scale, set
/// so the stiffest mass-weighted direction keeps the unit-mass stability limit; or the diagonal
/// of the potential's Hessian averaged over a warm-up (a Riemannian metric's diagonal, as
/// diagonal-metric HMC preconditions).

#include <cstdint>

#include "simmer/core/names.hpp"
#include "simmer/core/types.hpp"

namespace simmer::train {

/// simmer.parameter_masses
enum class ParameterMasses {
  unit,      ///< every m_i = 1: the paper
  adam,      ///< m_i ∝ sqrt(v̂_i) + ε from Adam's bias-corrected second moment (retrofit)
  adapt,     ///< m_i ∝ 1 / Var(x_i) over a warm-up at the start of simmering (Stan)
  curvature  ///< m_i ∝ diag(∇²U)_i, Hutchinson's estimate averaged over a warm-up, floored by the prior
};
inline constexpr Names<ParameterMasses, 4> kParameterMassesNames{"simmer.parameter_masses",
                                                                 {{{ParameterMasses::unit, "unit"},
                                                                   {ParameterMasses::adam, "adam"},
                                                                   {ParameterMasses::adapt, "adapt"},
                                                                   {ParameterMasses::curvature, "curvature"}}}};

/// Where each trajectory's parameter masses come from, and over how many steps.
struct MassOptions {
  ParameterMasses kind = ParameterMasses::unit;
  std::int64_t warmup = 0;  ///< adapt, curvature: the first simmering steps, with unit masses
};

/// Whether the masses come from a warm-up of simmering (simmer.mass_warmup steps at unit masses).
inline bool masses_from_warmup(ParameterMasses m) {
  return m == ParameterMasses::adapt || m == ParameterMasses::curvature;
}

/// curvature: Hutchinson probes of diag(∇²L) over the warm-up in all (one probe per sample when
/// the warm-up has this many steps or more; more per sample in a shorter one).
inline constexpr int kCurvatureMassProbes = 32;

/// Unscaled masses from the warm-up's mean Hessian diagonal d of the loss and the prior's
/// curvature c (T/σ_i² at the first simmering temperature; empty without a prior): m_i =
/// max(d_i, 0) + c_i, the diagonal of ∇²U with the loss's negative curvature cut off, floored at
/// 10⁻³ of the masses' mean so that a direction flat in both (no prior) cannot get a vanishing
/// mass. With m_i = H_ii a diagonal Hessian's directions all oscillate at one frequency, so the
/// flattest move as fast as the stiffest allows. Throws when no mass is > 0 or one is not finite.
Vector curvature_masses(const Vector& mean_diagonal, const Vector& prior_curvature);

/// Unscaled masses from Adam's second moment v after `updates` updates: sqrt(v / (1 − β2^t)) + ε,
/// Adam's own per-parameter denominator (large where the loss is steep). Throws when updates < 1.
Vector adam_masses(const Vector& second_moment, std::int64_t updates, double beta2, double epsilon);

/// Welford's running mean and variance of a vector over a warm-up: of each parameter (adapt:
/// masses 1/Var(x_i)), or of the Hessian diagonal's samples (curvature: their mean). Adapt's variances are
/// regularised towards the mean variance as Stan does for short windows
/// (Var_reg = n/(n+5) Var + 5/(n+5) mean Var) so that a parameter the warm-up barely moved does
/// not get an enormous mass.
class MassAdaptation {
 public:
  MassAdaptation() = default;  ///< not adapting (no parameters)
  explicit MassAdaptation(Index parameters);
  /// One draw, in any scalar; no allocation.
  template <class Derived>
  void add(const Eigen::MatrixBase<Derived>& x) {
    ++count_;
    const auto n = static_cast<double>(count_);
    for (Index i = 0; i < mean_.size(); ++i) {
      const auto xi = static_cast<double>(x(i));
      const double delta = xi - mean_(i);
      mean_(i) += delta / n;
      m2_(i) += delta * (xi - mean_(i));
    }
  }
  [[nodiscard]] bool active() const { return mean_.size() > 0; }
  [[nodiscard]] std::int64_t count() const { return count_; }
  /// Unscaled masses 1/Var_reg(x_i); throws with fewer than two draws.
  [[nodiscard]] Vector masses() const;
  [[nodiscard]] const Vector& mean() const { return mean_; }
  [[nodiscard]] const Vector& sum_of_squares() const { return m2_; }
  /// Restores a saved state (checkpoints).
  void restore(std::int64_t count, Vector mean, Vector m2);
  /// Checkpoint fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(count_, mean_, m2_);
    ar.require(count_ >= 0 && mean_.size() == m2_.size(), "a mass adaptation state of mismatched sizes");
  }

 private:
  std::int64_t count_ = 0;
  Vector mean_;
  Vector m2_;
};

/// The masses scaled by c = λ_w / λ, where λ_w is the largest eigenvalue of the Hessian weighted
/// by the unscaled masses (M^(−1/2) H M^(−1/2)) and λ the unweighted one: the scaled masses'
/// weighted λ_max is λ, so the time step keeps the stability margin it has with unit masses.
/// Throws when either curvature is not a finite number > 0.
Vector scaled_masses(const Vector& unscaled, double weighted_lambda_max, double lambda_max);

}  // namespace simmer::train
