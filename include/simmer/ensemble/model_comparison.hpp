#pragma once
/// \file
/// Model comparison from pointwise log-likelihoods (simmer_analyze compare, docs/ANALYZE.md):
/// WAIC (Watanabe 2010) and PSIS-LOO (Vehtari, Gelman & Gabry 2017; Pareto smoothing as in
/// Vehtari et al. 2024), computed as ArviZ computes them (arviz.waic, arviz.loo, arviz.psislw),
/// on the log scale: the expected log pointwise predictive density, higher is better.

#include <cstdint>
#include <utility>
#include <vector>

#include "simmer/core/types.hpp"

namespace simmer::ensemble {

/// One criterion's estimate over n observations.
struct Elpd {
  double elpd = 0.0;              ///< sum over observations of the pointwise values
  double se = 0.0;                ///< sqrt(n var(pointwise)), var with divisor n (ArviZ's)
  double p = 0.0;                 ///< effective number of parameters (p_waic, p_loo)
  std::vector<double> pointwise;  ///< per observation
  std::vector<double> pareto_k;   ///< PSIS-LOO: k-hat per observation (inf: too short a tail to fit)
  std::int64_t k_above = 0;       ///< PSIS-LOO: observations with k-hat above good_k
  double good_k = 0.7;            ///< PSIS-LOO: min(1 - 1/log10(S), 0.7), ArviZ's threshold
  bool variance_warning = false;  ///< WAIC: some observation's log-density variance exceeds 0.4
};

/// WAIC of `log_lik` (draws × observations): elpd_i = log mean_s p(y_i | θ_s) − var_s log p(y_i | θ_s)
/// (the variance with divisor S, as ArviZ's), p_waic = Σ_i var_s.
Elpd waic(const Matrix& log_lik);

/// Pareto-smoothed log importance weights of one observation's draws from their log ratios
/// (−log p(y_i | θ_s) for LOO): the largest ceil(min(S/5, 3 sqrt(S/r_eff))) ratios replaced by the
/// expected order statistics of a generalized Pareto fit (Zhang & Stephens 2009 with a weak prior
/// on k), truncated at the largest raw weight, normalised; and k-hat (inf: 4 or fewer tail draws).
std::pair<std::vector<double>, double> psis_log_weights(std::vector<double> log_ratios, double r_eff = 1.0);

/// PSIS-LOO of `log_lik` (draws × observations): elpd_i = log Σ_s w_is p(y_i | θ_s) with the
/// smoothed weights of psis_log_weights; p_loo = lppd − elpd_loo.
Elpd psis_loo(const Matrix& log_lik, double r_eff = 1.0);

/// The standard error of the difference of two candidates' elpd on the same observations:
/// sqrt(n var(a_i − b_i)) (ArviZ's compare, dse).
double difference_se(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace simmer::ensemble
