#include "simmer/ensemble/convergence.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <unsupported/Eigen/FFT>
#include <utility>
#include <vector>

namespace simmer::ensemble {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double mean_of(const std::vector<double>& v) {
  double s = 0.0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

/// Sample variance (ddof = 1).
double variance_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double q = 0.0;
  for (const double x : v) q += (x - m) * (x - m);
  return q / static_cast<double>(v.size() - 1);
}

/// ≥ 2 chains, all of the same length ≥ 4.
bool valid(const Chains& chains) {
  if (chains.size() < 2 || chains.front().size() < 4) return false;
  return std::all_of(chains.begin(), chains.end(),
                     [&](const std::vector<double>& c) { return c.size() == chains.front().size(); });
}

}  // namespace

Chains split_chains(const Chains& chains) {
  Chains out;
  out.reserve(2 * chains.size());
  for (const auto& c : chains) {
    const std::size_t half = c.size() / 2;
    out.emplace_back(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(half));
  }
  for (const auto& c : chains) {
    const std::size_t half = c.size() / 2;
    out.emplace_back(c.end() - static_cast<std::ptrdiff_t>(half), c.end());
  }
  return out;
}

std::vector<double> autocovariances(const std::vector<double>& chain) {
  // Wiener–Khinchin, as ArviZ: the centred chain zero-padded to a power of two ≥ 2n (no wrap-around),
  // |FFT|², inverse (Eigen's inverse divides by the length), the first n entries over n.
  const std::size_t n = chain.size();
  if (n == 0) return {};
  std::size_t length = 1;
  while (length < 2 * n) length <<= 1U;
  const double m = mean_of(chain);
  std::vector<double> centred(length, 0.0);
  for (std::size_t i = 0; i < n; ++i) centred[i] = chain[i] - m;
  Eigen::FFT<double> fft;
  std::vector<std::complex<double>> spectrum;
  fft.fwd(spectrum, centred);
  for (auto& c : spectrum) c = std::norm(c);
  std::vector<double> acov;
  fft.inv(acov, spectrum);
  acov.resize(n);
  for (double& a : acov) a /= static_cast<double>(n);
  return acov;
}

double split_rhat(const Chains& chains) {
  if (!valid(chains)) return kNaN;
  const Chains split = split_chains(chains);
  const auto n = static_cast<double>(split.front().size());
  std::vector<double> means, variances;
  for (const auto& c : split) {
    means.push_back(mean_of(c));
    variances.push_back(variance_of(c));
  }
  const double within = mean_of(variances);
  const double between = n * variance_of(means);
  if (!(within > 0.0)) return kNaN;
  return std::sqrt((between / within + n - 1.0) / n);
}

double effective_sample_size(const Chains& chains) {
  if (!valid(chains)) return kNaN;
  const Chains split = split_chains(chains);
  const std::size_t draws = split.front().size();
  const auto n = static_cast<double>(draws);
  const double total = static_cast<double>(split.size()) * n;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& c : split) {
    for (const double x : c) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  if (!std::isfinite(lo) || !std::isfinite(hi)) return kNaN;
  if (hi - lo < 1e-15) return total;  // constant draws: numpy's float64 resolution, as ArviZ

  // Mean over chains of the autocovariance at one lag, every lag at once by FFT: a slowly mixing
  // chain of 10^5 draws takes Geyer's sequence to thousands of lags, which one sum per lag made
  // minutes (a ladder's end of run, Auto-MPG ab initio: 200 000 steps per trajectory).
  std::vector<std::vector<double>> acov;
  acov.reserve(split.size());
  for (const auto& c : split) acov.push_back(autocovariances(c));
  const auto mean_acov = [&](std::size_t lag) {
    double s = 0.0;
    for (const auto& a : acov) s += lag < a.size() ? a[lag] : 0.0;
    return s / static_cast<double>(split.size());
  };
  std::vector<double> chain_means;
  for (const auto& c : split) chain_means.push_back(mean_of(c));
  const double mean_var = mean_acov(0) * n / (n - 1.0);
  const double var_plus = mean_var * (n - 1.0) / n + variance_of(chain_means);

  std::vector<double> rho(draws, 0.0);
  double rho_even = 1.0;
  double rho_odd = 1.0 - (mean_var - mean_acov(1)) / var_plus;
  rho[0] = rho_even;
  rho[1] = rho_odd;
  // Geyer's initial positive sequence: pairs ρ̂_{t+1} + ρ̂_{t+2} while their sum stays positive.
  std::size_t t = 1;
  while (t + 3 < draws && rho_even + rho_odd > 0.0) {
    rho_even = 1.0 - (mean_var - mean_acov(t + 1)) / var_plus;
    rho_odd = 1.0 - (mean_var - mean_acov(t + 2)) / var_plus;
    if (rho_even + rho_odd >= 0.0) {
      rho[t + 1] = rho_even;
      rho[t + 2] = rho_odd;
    }
    t += 2;
  }
  // max_t = t − 2 (may be −1 when the loop never ran): work with max_t + 1 ≥ 0.
  const std::size_t last = t - 1;  // = max_t + 1
  if (rho_even > 0.0) rho[last] = rho_even;
  // Geyer's initial monotone sequence: no pair larger than the one before it.
  for (std::size_t u = 1; u + 3 <= last; u += 2) {  // u <= max_t − 2
    if (rho[u + 1] + rho[u + 2] > rho[u - 1] + rho[u]) {
      rho[u + 1] = (rho[u - 1] + rho[u]) / 2.0;
      rho[u + 2] = rho[u + 1];
    }
  }
  double tau = -1.0;
  for (std::size_t u = 0; u < last; ++u) tau += 2.0 * rho[u];
  tau += rho[last];
  tau = std::max(tau, 1.0 / std::log10(total));
  for (const double r : rho) {
    if (std::isnan(r)) return kNaN;
  }
  return total / tau;
}

Chains usable_chains(const Chains& draws, std::size_t min_draws) {
  Chains out;
  for (const auto& row : draws) {
    std::vector<double> finite;
    for (const double x : row) {
      if (std::isfinite(x)) finite.push_back(x);
    }
    if (finite.size() >= min_draws) out.push_back(std::move(finite));
  }
  if (out.empty()) return out;
  std::size_t shortest = out.front().size();
  for (const auto& c : out) shortest = std::min(shortest, c.size());
  for (auto& c : out) c.resize(shortest);
  return out;
}

std::string format_diagnostic(double value, int precision) {
  if (std::isnan(value)) return "n/a";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", precision, value);
  return buf;
}

double normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) {
    if (p == 0.0) return -std::numeric_limits<double>::infinity();
    if (p == 1.0) return std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  // Acklam's coefficients.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double low = 0.02425;
  double x = 0.0;
  if (p < low) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else if (p <= 1.0 - low) {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  } else {
    const double q = std::sqrt(-2.0 * std::log(1.0 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  // One Halley step on Φ(x) − p, Φ from erfc.
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2.0 * M_PI) * std::exp(0.5 * x * x);
  return x - u / (1.0 + 0.5 * x * u);
}

Chains rank_normalized(const Chains& chains) {
  std::vector<std::pair<double, std::size_t>> all;  // (value, flat index)
  std::size_t flat = 0;
  for (const auto& chain : chains) {
    for (const double v : chain) all.emplace_back(v, flat++);
  }
  std::sort(all.begin(), all.end());
  std::vector<double> rank(all.size());
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j + 1 < all.size() && all[j + 1].first == all[i].first) ++j;
    const double average = 0.5 * static_cast<double>(i + j) + 1.0;  // 1-based average rank of the tie
    for (std::size_t t = i; t <= j; ++t) rank[all[t].second] = average;
    i = j + 1;
  }
  const auto n = static_cast<double>(all.size());
  Chains out = chains;
  flat = 0;
  for (auto& chain : out) {
    for (double& v : chain) v = normal_quantile((rank[flat++] - 0.375) / (n + 0.25));
  }
  return out;
}

double bulk_ess(const Chains& chains) { return effective_sample_size(rank_normalized(chains)); }

double rank_rhat(const Chains& chains) {
  std::vector<double> pooled;
  for (const auto& chain : chains) pooled.insert(pooled.end(), chain.begin(), chain.end());
  if (pooled.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(pooled.begin(), pooled.end());
  const std::size_t m = pooled.size();
  const double median = m % 2 == 1 ? pooled[m / 2] : 0.5 * (pooled[m / 2 - 1] + pooled[m / 2]);
  Chains folded = chains;
  for (auto& chain : folded) {
    for (double& v : chain) v = std::abs(v - median);
  }
  const double bulk = split_rhat(rank_normalized(chains));
  const double tail = split_rhat(rank_normalized(folded));
  if (std::isnan(bulk) || std::isnan(tail)) return std::isnan(bulk) ? tail : bulk;
  return std::max(bulk, tail);
}

double series_rhat(const std::vector<double>& series) {
  const std::size_t half = series.size() / 2;
  if (half < 4) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = series.begin() + static_cast<std::ptrdiff_t>(half);
  return split_rhat({std::vector<double>(series.begin(), mid),
                     std::vector<double>(mid, series.begin() + static_cast<std::ptrdiff_t>(2 * half))});
}

double window_for_split_rhat(double window, double rhat, double target) {
  if (!std::isfinite(rhat) || !(target > 1.0)) return std::numeric_limits<double>::quiet_NaN();
  if (rhat <= target) return window;
  return window * (rhat * rhat - 1.0) / (target * target - 1.0);
}

}  // namespace simmer::ensemble
