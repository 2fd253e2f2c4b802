#pragma once
/// \file
/// How many loss-Hessian eigenvalues exceed a threshold (the temperature T), by stochastic
/// Lanczos quadrature (Ubaru, Chen & Saad 2017; Ghorbani, Krishnan & Xiao 2019): for each
/// random Rademacher probe z, m Lanczos steps on Hessian-vector products from central gradient
/// differences give Ritz values θ_j and weights τ_j² (first components of the tridiagonal
/// matrix's eigenvectors); N Σ_j τ_j² [θ_j > threshold], averaged over probes, estimates the
/// count. Only modes stiffer than T stay within a thermal amplitude sqrt(T/λ) < 1 of the
/// minimum, so the count says how much of the network equipartition's harmonic picture
/// (loss rise N_f T/2) can describe (docs/METHOD.md §10).

#include "simmer/core/rng.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::train {

struct SpectrumEstimate {
  double count_above = 0;   ///< estimated number of eigenvalues > threshold (SLQ)
  double count_stderr = 0;  ///< its standard error over the probes (NaN with one probe)
  int ritz_above = 0;       ///< Ritz values > threshold in the first probe (converged from the top)
  double lambda_max = 0;    ///< largest Ritz value of all probes
  int steps = 0;            ///< Lanczos steps per probe (fewer when the Krylov space closes)
  int probes = 0;
  int gradients = 0;  ///< gradient evaluations spent (2 per step)
  /// Checkpoint and message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(count_above, count_stderr, ritz_above, lambda_max, steps, probes, gradients);
  }
};

/// Leaves `x` unchanged (it may be the network's own parameter vector). Lanczos vectors are
/// fully re-orthogonalised while they fit in 64 MB (N·steps doubles); above that the plain
/// three-term recurrence is used, which may repeat converged top eigenvalues (documented).
template <class S>
SpectrumEstimate estimate_spectrum(BasicObjective<S>& objective, VectorOf<S>& x, double threshold, int steps,
                                   int probes, Rng& rng);

}  // namespace simmer::train
