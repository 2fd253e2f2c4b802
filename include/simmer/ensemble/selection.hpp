#pragma once
/// \file
/// Choosing the run's ensemble among its candidates (ensemble/candidate.hpp) on data the
/// gradients never saw (issue 17): the validation set's NLL or metric, with the standard error
/// that says how much of a difference is chance. With ~100 validation rows the best candidate is
/// often best by chance, so besides the plain minimum a one-standard-error rule is offered: the
/// first candidate, in the order given (the deep ensemble, then the rungs coldest first: the
/// least heat first), whose loss is within one standard error of the best's, the error being
/// that of the paired per-row differences (the candidates are scored on the same rows, so their
/// differences are far less noisy than either score).

#include <cstddef>
#include <string>
#include <vector>

#include "simmer/core/names.hpp"
#include "simmer/ensemble/candidate.hpp"

namespace simmer::ensemble {

/// ensemble.select_by: the validation score the choice minimises (none: no choice).
enum class SelectBy { nll, metric, none };
/// ensemble.select_rule: the lowest validation loss, the one-standard-error rule, or the
/// candidates stacked (parallel::choose; `select` gives `best` for it).
enum class SelectRule { best, one_se, stacking };
inline constexpr Names<SelectBy, 3> kSelectByNames{
    "ensemble.select_by", {{{SelectBy::nll, "nll"}, {SelectBy::metric, "metric"}, {SelectBy::none, "none"}}}};
inline constexpr Names<SelectRule, 3> kSelectRuleNames{
    "ensemble.select_rule",
    {{{SelectRule::best, "best"}, {SelectRule::one_se, "one_se"}, {SelectRule::stacking, "stacking"}}}};
/// How a run chooses its ensemble among its candidates (ensemble.select_by, select_rule).
struct SelectionOptions {
  SelectBy by = SelectBy::nll;
  SelectRule rule = SelectRule::stacking;
};
inline std::string to_string(SelectBy by) { return std::string(kSelectByNames.name(by)); }
inline std::string to_string(SelectRule rule) { return std::string(kSelectRuleNames.name(rule)); }
/// Parses the names to_string gives; throws simmer::Error naming the text otherwise.
inline SelectBy parse_select_by(const std::string& text) { return kSelectByNames.parse(text); }
inline SelectRule parse_select_rule(const std::string& text) { return kSelectRuleNames.parse(text); }

struct Selection {
  std::vector<double> loss;         ///< per candidate: mean validation loss (lower is better)
  std::vector<double> stderr_loss;  ///< its standard error, sd / sqrt(rows)
  /// the standard error of the paired per-row difference to the best candidate (0 for the best)
  std::vector<double> stderr_difference;
  std::size_t best = 0;    ///< the lowest loss (the first of equals)
  std::size_t one_se = 0;  ///< the first candidate within one standard error of the best
  std::size_t selected = 0;
  /// Message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(loss, stderr_loss, stderr_difference, best, one_se, selected);
  }
};

/// The mean of the per-row differences a − b (same rows) and its standard error (sd / sqrt(rows)):
/// how far apart two candidates are on one set, and how much of that is which rows it holds. NaN,
/// NaN when a value is not finite or there are no rows.
struct PairedDifference {
  double mean = 0, stderr_ = 0;
  template <class Ar>
  void fields(Ar& ar) {
    ar(mean, stderr_);
  }
};
PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b);

/// Stacking (Yao, Vehtari, Simpson & Gelman 2018, with held-out rows in place of leave-one-out):
/// one mixture of the candidates' predictive densities, Σ_c w_c p_c(y), whose weights (w_c ≥ 0,
/// Σ w_c = 1) maximise the held-out rows' mean log-likelihood L(w) = mean_i log Σ_c w_c p_c(y_i).
/// L is concave, so a maximum is global. Found by EM from equal weights (a sweep: w_c ← w_c g_c,
/// g_c = mean_i p_c(y_i) / Σ_k w_k p_k(y_i) = ∂L/∂w_c, which never lowers L), accelerated by
/// SQUAREM's extrapolation (Varadhan & Roland 2008; kept only when it does not lower L), until
/// the Frank–Wolfe gap max_c g_c − 1 (Σ_c w_c g_c = 1), which bounds L(w*) − L(w) from above,
/// is at most `tolerance`, or after `max_sweeps` sweeps; weights below 1e-9 are then set to 0
/// (the rest renormalised, and the gap is that of the weights returned). Near-copies of one
/// candidate share its weight in a way the rows cannot tell apart; L, and so the mixture, is then
/// still the maximum.
struct Stacking {
  std::vector<double> weights;  ///< per candidate; 0 for one with a non-finite density on some row
  std::int64_t sweeps = 0;      ///< EM sweeps made
  double gap = 0;               ///< the Frank–Wolfe gap at `weights`: L(w*) − L(w) ≤ gap
  /// Message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(weights, sweeps, gap);
  }
};
/// `log_density[c][i]` = log p_c(y_i), every candidate on the same rows. A candidate with a
/// non-finite value on any row takes no part (weight 0); with none left the weights are all NaN.
/// Throws simmer::Error for no candidates or candidates on different rows.
Stacking stack(const std::vector<std::vector<double>>& log_density, std::int64_t max_sweeps = 100000,
               double tolerance = 1e-10);
/// Per row, the mixture's log density log Σ_c w_c p_c(y_i) (candidates with weight 0 left out, so
/// their non-finite values do not matter), computed in logs so a row far out in every candidate's
/// tail does not underflow.
std::vector<double> mixture_log_density(const std::vector<std::vector<double>>& log_density,
                                        const std::vector<double>& weights);

/// Chooses among candidates by their per-row validation losses (one RowLosses::nll or ::metric
/// vector each, all of the same rows; a candidate without members has NaN losses and is never
/// chosen unless none has members). Throws simmer::Error for no candidates.
Selection select(const std::vector<std::vector<double>>& row_losses, SelectRule rule);

}  // namespace simmer::ensemble
