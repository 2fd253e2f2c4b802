#include "simmer/ensemble/selection.hpp"

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
  s.selected = rule == SelectRule::best ? s.best : s.one_se;
  return s;
}

}  // namespace simmer::ensemble
