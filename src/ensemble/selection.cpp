#include "simmer/ensemble/selection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "simmer/core/error.hpp"

namespace simmer::ensemble {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Mean and standard error (sample sd / sqrt(n)) of `v`; NaN when any value is not finite.
std::pair<double, double> mean_stderr(const std::vector<double>& v) {
  if (v.empty()) return {kNaN, kNaN};
  double sum = 0.0;
  for (const double x : v) {
    if (!std::isfinite(x)) return {kNaN, kNaN};
    sum += x;
  }
  const auto n = static_cast<double>(v.size());
  const double mean = sum / n;
  double q = 0.0;
  for (const double x : v) q += (x - mean) * (x - mean);
  return {mean, v.size() > 1 ? std::sqrt(q / (n - 1.0) / n) : 0.0};
}

}  // namespace

PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw Error("internal: a paired difference of different rows");
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = a[i] - b[i];
  const auto [mean, se] = mean_stderr(d);
  return {mean, se};
}

Selection select(const std::vector<std::vector<double>>& row_losses, SelectRule rule) {
  if (row_losses.empty()) throw Error("internal: nothing to select from");
  Selection s;
  const std::size_t n = row_losses.size();
  for (const auto& rows : row_losses) {
    if (rows.size() != row_losses.front().size()) throw Error("internal: candidates scored on different rows");
    const auto [mean, se] = mean_stderr(rows);
    s.loss.push_back(mean);
    s.stderr_loss.push_back(se);
  }
  // The best: the lowest finite loss, the first of equals (NaN never wins over a number).
  bool found = false;
  for (std::size_t c = 0; c < n; ++c) {
    if (std::isfinite(s.loss[c]) && (!found || s.loss[c] < s.loss[s.best])) {
      s.best = c;
      found = true;
    }
  }
  s.stderr_difference.assign(n, kNaN);
  s.one_se = s.best;
  if (found) {
    for (std::size_t c = 0; c < n; ++c)
      s.stderr_difference[c] = paired_difference(row_losses[c], row_losses[s.best]).stderr_;
    for (std::size_t c = 0; c < n; ++c) {
      if (std::isfinite(s.loss[c]) && s.loss[c] - s.loss[s.best] <= s.stderr_difference[c]) {
        s.one_se = c;
        break;
      }
    }
  }
  s.selected = rule == SelectRule::one_se ? s.one_se : s.best;
  return s;
}

namespace {

/// Checks the candidates' rows agree; returns the row count.
std::size_t common_rows(const std::vector<std::vector<double>>& log_density) {
  if (log_density.empty()) throw Error("internal: nothing to stack");
  for (const auto& rows : log_density) {
    if (rows.size() != log_density.front().size()) throw Error("internal: candidates stacked on different rows");
  }
  return log_density.front().size();
}

}  // namespace

std::vector<double> mixture_log_density(const std::vector<std::vector<double>>& log_density,
                                        const std::vector<double>& weights) {
  const std::size_t rows = common_rows(log_density);
  if (weights.size() != log_density.size()) throw Error("internal: a weight per stacked candidate");
  std::vector<double> log_w(weights.size());
  for (std::size_t c = 0; c < weights.size(); ++c) log_w[c] = weights[c] > 0.0 ? std::log(weights[c]) : 0.0;
  std::vector<double> out(rows, kNaN);
  for (std::size_t i = 0; i < rows; ++i) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < weights.size(); ++c) {
      if (weights[c] > 0.0) top = std::max(top, log_w[c] + log_density[c][i]);
    }
    if (!std::isfinite(top)) continue;
    double total = 0.0;
    for (std::size_t c = 0; c < weights.size(); ++c) {
      if (weights[c] > 0.0) total += std::exp(log_w[c] + log_density[c][i] - top);
    }
    out[i] = top + std::log(total);
  }
  return out;
}

namespace {

/// One EM sweep of stacking from `w`: the next weights w_c g_c into `next`; returns the
/// Frank–Wolfe gap max_c g_c − 1 over the candidates that take part (`part`).
double em_sweep(const std::vector<std::vector<double>>& log_density, const std::vector<bool>& part,
                const std::vector<double>& w, std::vector<double>& next) {
  const std::size_t rows = log_density.front().size();
  const std::vector<double> mixture = mixture_log_density(log_density, w);
  double gap = -std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < w.size(); ++c) {
    next[c] = 0.0;
    if (!part[c]) continue;
    double g = 0.0;  // ∂L/∂w_c
    for (std::size_t i = 0; i < rows; ++i) g += std::exp(log_density[c][i] - mixture[i]);
    g /= static_cast<double>(rows);
    next[c] = w[c] * g;
    gap = std::max(gap, g - 1.0);
  }
  double total = 0.0;  // Σ w_c g_c = 1 but for rounding: keep the weights on the simplex
  for (const double v : next) total += v;
  for (double& v : next) v /= total;
  return gap;
}

double mean_log_likelihood(const std::vector<std::vector<double>>& log_density, const std::vector<double>& w) {
  double sum = 0.0;
  for (const double v : mixture_log_density(log_density, w)) sum += v;
  return sum / static_cast<double>(log_density.front().size());
}

}  // namespace

Stacking stack(const std::vector<std::vector<double>>& log_density, std::int64_t max_sweeps, double tolerance) {
  const std::size_t rows = common_rows(log_density);
  const std::size_t n = log_density.size();
  std::vector<bool> part(n, rows > 0);
  std::size_t parts = 0;
  for (std::size_t c = 0; c < n; ++c) {
    for (const double v : log_density[c]) part[c] = part[c] && std::isfinite(v);
    parts += part[c] ? 1 : 0;
  }
  Stacking s;
  if (parts == 0) {
    s.weights.assign(n, kNaN);
    s.gap = kNaN;
    return s;
  }
  std::vector<double> w(n, 0.0), w1(n), w2(n), jump(n), w3(n);
  for (std::size_t c = 0; c < n; ++c) w[c] = part[c] ? 1.0 / static_cast<double>(parts) : 0.0;
  // A weight an extrapolation would set to 0 is floored here: EM cannot revive a zero weight.
  constexpr double kFloor = 1e-12;
  constexpr double kNegligible = 1e-9;  ///< below it a weight is 0 in the result
  while (true) {
    s.gap = em_sweep(log_density, part, w, w1);
    if (s.gap <= tolerance || s.sweeps >= max_sweeps) break;
    ++s.sweeps;
    em_sweep(log_density, part, w1, w2);
    ++s.sweeps;
    // SQUAREM (scheme S3): r = w1 − w, v = w2 − w1 − r, α = −|r|/|v| (at most −1, which is w2).
    double rr = 0.0, vv = 0.0;
    for (std::size_t c = 0; c < n; ++c) {
      const double r = w1[c] - w[c], v = w2[c] - w1[c] - r;
      rr += r * r;
      vv += v * v;
    }
    bool jumped = false;
    if (vv > 0.0) {
      const double alpha = std::min(-1.0, -std::sqrt(rr / vv));
      double total = 0.0;
      for (std::size_t c = 0; c < n; ++c) {
        const double r = w1[c] - w[c], v = w2[c] - w1[c] - r;
        jump[c] = part[c] ? std::max(kFloor, w[c] - 2.0 * alpha * r + alpha * alpha * v) : 0.0;
        total += jump[c];
      }
      for (double& v : jump) v /= total;
      em_sweep(log_density, part, jump, w3);  // a sweep from the jump steadies it
      ++s.sweeps;
      jumped = mean_log_likelihood(log_density, w3) >= mean_log_likelihood(log_density, w2);
    }
    w.swap(jumped ? w3 : w2);
  }
  // A weight the floor or a slow decay left at a few 1e-12 is a candidate the maximum does not
  // use: set to 0, so that the mixture (and predict's networks) leave it out, and the gap is
  // that of the weights returned.
  double total = 0.0;
  for (double& v : w) {
    if (v < kNegligible) v = 0.0;
    total += v;
  }
  for (double& v : w) v /= total;
  s.gap = em_sweep(log_density, part, w, w1);
  s.weights = w;
  return s;
}

}  // namespace simmer::ensemble
