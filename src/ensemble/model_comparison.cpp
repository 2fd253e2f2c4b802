// WAIC and PSIS-LOO as ArviZ computes them (arviz/stats/stats.py: waic, loo, psislw, _psislw,
// _gpdfit, _gpinv), so the numbers agree with az.waic / az.loo on the same log-likelihoods.
#include "simmer/ensemble/model_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "simmer/core/error.hpp"

namespace simmer::ensemble {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double log_sum_exp(const std::vector<double>& x) {
  const double top = *std::max_element(x.begin(), x.end());
  if (!std::isfinite(top)) return top;
  double sum = 0.0;
  for (const double v : x) sum += std::exp(v - top);
  return top + std::log(sum);
}

/// numpy's sqrt(len(x) * np.var(x)) (divisor n), which is the root of the sum of squares.
double pointwise_se(const std::vector<double>& x) {
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  double ss = 0.0;
  for (const double v : x) ss += (v - mean) * (v - mean);
  return std::sqrt(ss);
}

/// The generalized Pareto fit to the sorted exceedances `x` (Zhang & Stephens 2009's empirical
/// Bayes estimate, with ArviZ's prior: k shrunk towards 0.5 with weight 10): (k, sigma).
std::pair<double, double> gpd_fit(const std::vector<double>& x) {
  constexpr double kPriorBs = 3.0, kPriorK = 10.0;
  const auto n = static_cast<std::int64_t>(x.size());
  const auto nd = static_cast<double>(n);
  const std::int64_t m = 30 + static_cast<std::int64_t>(std::sqrt(nd));
  const double quartile = x[static_cast<std::size_t>(static_cast<std::int64_t>(nd / 4.0 + 0.5) - 1)];
  std::vector<double> b(static_cast<std::size_t>(m)), k(static_cast<std::size_t>(m)), len(static_cast<std::size_t>(m));
  for (std::int64_t j = 0; j < m; ++j) {
    double bj = 1.0 - std::sqrt(static_cast<double>(m) / (static_cast<double>(j + 1) - 0.5));
    bj /= kPriorBs * quartile;
    bj += 1.0 / x.back();
    double kj = 0.0;
    for (const double v : x) kj += std::log1p(-bj * v);
    kj /= nd;
    b[static_cast<std::size_t>(j)] = bj;
    k[static_cast<std::size_t>(j)] = kj;
    len[static_cast<std::size_t>(j)] = nd * (std::log(-(bj / kj)) - kj - 1.0);
  }
  std::vector<double> w(static_cast<std::size_t>(m));
  for (std::size_t j = 0; j < w.size(); ++j) {
    double s = 0.0;
    for (std::size_t l = 0; l < w.size(); ++l) s += std::exp(len[l] - len[j]);
    w[j] = 1.0 / s;
  }
  // Negligible weights dropped, the rest normalised: the posterior mean of b.
  double total = 0.0, b_post = 0.0;
  for (std::size_t j = 0; j < w.size(); ++j) {
    if (w[j] >= 10.0 * std::numeric_limits<double>::epsilon()) total += w[j];
  }
  for (std::size_t j = 0; j < w.size(); ++j) {
    if (w[j] >= 10.0 * std::numeric_limits<double>::epsilon()) b_post += b[j] * (w[j] / total);
  }
  double k_post = 0.0;
  for (const double v : x) k_post += std::log1p(-b_post * v);
  k_post /= nd;
  const double sigma = -k_post / b_post;
  k_post = (nd * k_post + kPriorK * 0.5) / (nd + kPriorK);
  return {k_post, sigma};
}

/// The generalized Pareto quantile function at p in (0, 1).
double gpd_quantile(double p, double k, double sigma) {
  if (!(sigma > 0)) return std::nan("");
  if (std::abs(k) < std::numeric_limits<double>::epsilon()) return -std::log1p(-p) * sigma;
  return std::expm1(-k * std::log1p(-p)) / k * sigma;
}

void check_shape(const Matrix& log_lik, const char* what) {
  if (log_lik.rows() < 2 || log_lik.cols() < 1) {
    throw Error(std::string(what) + ": needs at least 2 draws and 1 observation, got " +
                std::to_string(log_lik.rows()) + " x " + std::to_string(log_lik.cols()));
  }
}

std::vector<double> column(const Matrix& m, Index i) {
  std::vector<double> out(static_cast<std::size_t>(m.rows()));
  for (Index s = 0; s < m.rows(); ++s) out[static_cast<std::size_t>(s)] = m(s, i);
  return out;
}

/// log mean_s exp(ll_s).
double log_mean_exp(const std::vector<double>& ll) {
  return log_sum_exp(ll) - std::log(static_cast<double>(ll.size()));
}

}  // namespace

Elpd waic(const Matrix& log_lik) {
  check_shape(log_lik, "WAIC");
  Elpd out;
  const auto S = static_cast<double>(log_lik.rows());
  for (Index i = 0; i < log_lik.cols(); ++i) {
    const std::vector<double> ll = column(log_lik, i);
    const double mean = std::accumulate(ll.begin(), ll.end(), 0.0) / S;
    double var = 0.0;
    for (const double v : ll) var += (v - mean) * (v - mean);
    var /= S;
    out.variance_warning = out.variance_warning || var > 0.4;
    out.pointwise.push_back(log_mean_exp(ll) - var);
    out.p += var;
  }
  out.elpd = std::accumulate(out.pointwise.begin(), out.pointwise.end(), 0.0);
  out.se = pointwise_se(out.pointwise);
  return out;
}

std::pair<std::vector<double>, double> psis_log_weights(std::vector<double> x, double r_eff) {
  const auto S = static_cast<double>(x.size());
  const double top = *std::max_element(x.begin(), x.end());
  for (double& v : x) v -= top;
  // The tail: the draws above the (M+1)-th largest, M = ceil(min(S/5, 3 sqrt(S/r_eff))).
  const auto tail_size = static_cast<std::size_t>(std::ceil(std::min(S / 5.0, 3.0 * std::sqrt(S / r_eff))));
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  const double cutoff = std::max(x[order[x.size() - tail_size - 1]], std::log(std::numeric_limits<double>::min()));
  const double exp_cutoff = std::exp(cutoff);
  std::vector<std::size_t> tail;
  for (std::size_t s = 0; s < x.size(); ++s) {
    if (x[s] > cutoff) tail.push_back(s);
  }
  double k = kInf;
  if (tail.size() > 4) {
    std::stable_sort(tail.begin(), tail.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
    std::vector<double> exceed(tail.size());
    for (std::size_t j = 0; j < tail.size(); ++j) exceed[j] = std::exp(x[tail[j]]) - exp_cutoff;
    double sigma = 0.0;
    std::tie(k, sigma) = gpd_fit(exceed);
    if (std::isfinite(k)) {
      const auto n = static_cast<double>(tail.size());
      for (std::size_t j = 0; j < tail.size(); ++j) {
        const double p = (static_cast<double>(j) + 0.5) / n;
        x[tail[j]] = std::log(gpd_quantile(p, k, sigma) + exp_cutoff);
      }
      for (double& v : x) v = std::min(v, 0.0);  // no weight above the largest raw one
    }
  }
  const double norm = log_sum_exp(x);
  for (double& v : x) v -= norm;
  return {x, k};
}

Elpd psis_loo(const Matrix& log_lik, double r_eff) {
  check_shape(log_lik, "PSIS-LOO");
  Elpd out;
  const auto S = static_cast<double>(log_lik.rows());
  out.good_k = std::min(1.0 - 1.0 / std::log10(S), 0.7);
  double lppd = 0.0;
  for (Index i = 0; i < log_lik.cols(); ++i) {
    const std::vector<double> ll = column(log_lik, i);
    std::vector<double> ratios(ll.size());
    for (std::size_t s = 0; s < ll.size(); ++s) ratios[s] = -ll[s];
    auto [log_w, k] = psis_log_weights(std::move(ratios), r_eff);
    for (std::size_t s = 0; s < ll.size(); ++s) log_w[s] += ll[s];
    out.pointwise.push_back(log_sum_exp(log_w));
    out.pareto_k.push_back(k);
    if (k > out.good_k) ++out.k_above;
    lppd += log_mean_exp(ll);
  }
  out.elpd = std::accumulate(out.pointwise.begin(), out.pointwise.end(), 0.0);
  out.se = pointwise_se(out.pointwise);
  out.p = lppd - out.elpd;
  return out;
}

double difference_se(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw Error("elpd difference: the candidates have different observations");
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return pointwise_se(d);
}

}  // namespace simmer::ensemble
