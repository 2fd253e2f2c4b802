#pragma once
/// \file
/// Convergence diagnostics of a scalar sampled by several chains: split-R̂ (Gelman et al. 2013,
/// BDA3 §11.4) and the effective sample size by Geyer's initial monotone sequence estimator, as
/// Stan and ArviZ compute them (ArviZ `rhat(method="split")` / `ess(method="mean")`: split
/// chains, no rank normalisation). No MPI, no HDF5: tested serially.

#include <string>
#include <vector>

namespace simmer::ensemble {

/// Draws of one scalar: chains[c][d], every chain the same length.
using Chains = std::vector<std::vector<double>>;

/// Each chain cut into its first and second half (the middle draw of an odd length is dropped,
/// as ArviZ does): 2 × chains of ⌊draws/2⌋.
Chains split_chains(const Chains& chains);

/// Split-R̂ = sqrt(((n−1)/n · W + B/n) / W) over the split chains (n draws each; W the mean
/// within-chain variance, B/n the variance of the chain means). Needs ≥ 2 chains of ≥ 4
/// draws (else NaN); NaN when every split chain is constant (W = 0).
double split_rhat(const Chains& chains);

/// Effective sample size of the chains' mean: S·n / τ̂ over the S split chains of n draws, with
/// τ̂ = −1 + 2 Σ ρ̂_t summed over Geyer's initial positive pairs, made monotone (Stan's
/// `ess_mean`; ArviZ `_ess`). ρ̂_t = 1 − (W − mean_c acov_c(t)) / var⁺ from the biased
/// within-chain autocovariances. τ̂ is bounded below by 1/log10(S·n). Needs ≥ 2 chains of ≥ 4
/// draws (else NaN); constant draws give S·n.
double effective_sample_size(const Chains& chains);

/// Rank normalisation (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021): every draw replaced
/// by Φ⁻¹((r − 3/8) / (N + 1/4)), r its rank among all N draws of all chains (ties: the average
/// rank). The result does not depend on any monotone transformation of the draws.
Chains rank_normalized(const Chains& chains);

/// Bulk ESS (Vehtari et al. 2021; ArviZ `ess(method="bulk")`): effective_sample_size of the
/// rank-normalised draws. Robust to heavy tails, invariant under monotone transformations.
double bulk_ess(const Chains& chains);

/// Rank-normalised split-R̂ (Vehtari et al. 2021; ArviZ `rhat(method="rank")`): the larger of
/// the bulk R̂ (split_rhat of the rank-normalised draws) and the tail R̂ (of the rank-normalised
/// draws folded about the median, |θ − median|).
double rank_rhat(const Chains& chains);

/// Φ⁻¹(p) for p in (0, 1): Acklam's rational approximation with one Newton step on erfc
/// (relative error ~1e-15).
double normal_quantile(double p);

/// Biased autocovariance of one chain at every lag 0..n−1, (1/n) Σ_{i<n−lag} (x_i − x̄)(x_{i+lag} − x̄),
/// by FFT in O(n log n) (what effective_sample_size uses).
std::vector<double> autocovariances(const std::vector<double>& chain);

/// The chains as used by the diagnostics: rows of `draws` [chains][length] with their
/// non-finite entries (unwritten draws of a stopped trajectory) dropped, chains with fewer than
/// `min_draws` finite draws left out, the rest cut to the shortest remaining length (their
/// first draws, so every chain covers the same steps).
Chains usable_chains(const Chains& draws, std::size_t min_draws = 4);

/// Split-R̂ of one series (a trajectory's member series, the stationarity verdict's): its halves
/// compared as two chains, each split again, so four quarters. NaN with fewer than 8 values.
double series_rhat(const std::vector<double>& series);

/// The window at which a stationary series would reach series_rhat `target`, from its series_rhat
/// `rhat` over a window of `window` steps: with n members a quarter and W, B/n the within-quarter
/// variance and the variance of the quarters' means, R̂² − 1 ≈ (B/n)/W, and for an integrated
/// autocorrelation time τ (in steps) a quarter's mean varies as about 4τ/window times the
/// series' variance (4(τ − s)/window with members every s steps: the stride drops out while it
/// is well below τ), so the window scales by (rhat² − 1)/(target² − 1). A guide, not a promise:
/// B has about three degrees of freedom, so one series' estimate scatters (its median runs about
/// a fifth low on AR(1)); a window that has not yet seen a series' slowest direction
/// underestimates τ; a transient at its start overestimates it (docs/STATIONARITY.md has it
/// against long runs). `window` itself when rhat <= target; NaN when rhat is not finite or
/// target <= 1.
double window_for_split_rhat(double window, double rhat, double target);

/// "1.003" / "n/a" (for NaN), for reports.
std::string format_diagnostic(double value, int precision);

}  // namespace simmer::ensemble
