#include "simmer/ensemble/predictive.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "simmer/core/error.hpp"

namespace simmer::ensemble {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

/// Φ(z) without cancellation in either tail.
double normal_cdf(double z) { return 0.5 * std::erfc(-z * kInvSqrt2); }

double total_weight(const Mixture& m) {
  double w = 0.0;
  for (const double x : m.weight) w += x;
  return w;
}

/// F(y) and its density f(y) at once (the density is +∞ at a point mass).
std::pair<double, double> cdf_and_density(const Mixture& m, double noise, double y, double weight) {
  double cdf = 0.0, density = 0.0;
  for (std::size_t c = 0; c < m.mean.size(); ++c) {
    const double w = m.weight[c];
    if (w <= 0.0) continue;
    const double var = m.variance[c] + noise;
    if (var <= 0.0) {
      cdf += w * (y > m.mean[c] ? 1.0 : (y == m.mean[c] ? 0.5 : 0.0));
      if (y == m.mean[c]) density = kInf;
      continue;
    }
    const double sd = std::sqrt(var);
    const double z = (y - m.mean[c]) / sd;
    cdf += w * normal_cdf(z);
    density += w * kInvSqrt2Pi * std::exp(-0.5 * z * z) / sd;
  }
  return {cdf / weight, density / weight};
}

}  // namespace

double NoiseEstimate::mean() const { return variance.size() > 0 ? variance.mean() : kNaN; }

NoiseEstimate noise_from_residuals(ConstBatchView mean, ConstBatchView truth, NoiseSource source) {
  if (mean.rows() != truth.rows() || mean.cols() != truth.cols()) {
    throw Error("internal: the noise estimate's mean and truth differ in shape");
  }
  NoiseEstimate out;
  out.source = source;
  out.variance = residual_variance(mean, truth);
  return out;
}

double mixture_cdf(const Mixture& m, double noise, double y) {
  const double weight = total_weight(m);
  if (!(weight > 0.0) || std::isnan(y)) return kNaN;
  return cdf_and_density(m, noise, y, weight).first;
}

double mixture_quantile(const Mixture& m, double noise, double level) {
  const double weight = total_weight(m);
  if (!(weight > 0.0) || !(level >= 0.0 && level <= 1.0)) return kNaN;
  if (level == 0.0) return -kInf;
  if (level == 1.0) return kInf;
  // A bracket [lo, hi] with F(lo) < level < F(hi): 10 sd beyond the outermost components,
  // widened while it is not (levels within 1e-23 of 0 or 1).
  double lo = kInf, hi = -kInf, widest = 0.0;
  for (std::size_t c = 0; c < m.mean.size(); ++c) {
    if (m.weight[c] <= 0.0) continue;
    const double sd = std::sqrt(std::max(0.0, m.variance[c] + noise));
    lo = std::min(lo, m.mean[c] - 10.0 * sd);
    hi = std::max(hi, m.mean[c] + 10.0 * sd);
    widest = std::max(widest, sd);
  }
  if (!std::isfinite(lo) || !std::isfinite(hi)) return kNaN;
  const double step = std::max({widest, std::abs(lo), std::abs(hi), 1.0});
  for (int i = 0; i < 64 && cdf_and_density(m, noise, lo, weight).first > level; ++i) lo -= step * std::ldexp(1.0, i);
  for (int i = 0; i < 64 && cdf_and_density(m, noise, hi, weight).first < level; ++i) hi += step * std::ldexp(1.0, i);
  // Newton from the middle, falling back to bisection whenever a step leaves the bracket (rtsafe).
  double y = 0.5 * (lo + hi);
  for (int it = 0; it < 200; ++it) {
    const auto [f, density] = cdf_and_density(m, noise, y, weight);
    const double g = f - level;
    if (g == 0.0) return y;
    if (g < 0.0)
      lo = y;
    else
      hi = y;
    double next = (density > 0.0 && std::isfinite(density)) ? y - g / density : kNaN;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    const double tolerance = 1e-12 * std::max(1.0, std::abs(next));
    if (std::abs(next - y) <= tolerance || hi - lo <= tolerance) return next;
    y = next;
  }
  return y;
}

MixtureMoments mixture_moments(const Mixture& m, double noise) {
  const double weight = total_weight(m);
  MixtureMoments out;
  if (!(weight > 0.0)) return {kNaN, kNaN, kNaN};
  for (std::size_t c = 0; c < m.mean.size(); ++c) out.mean += m.weight[c] * m.mean[c];
  out.mean /= weight;
  for (std::size_t c = 0; c < m.mean.size(); ++c) {
    const double d = m.mean[c] - out.mean;
    out.model += m.weight[c] * (m.variance[c] + d * d);
  }
  out.model /= weight;
  out.total = out.model + noise;
  return out;
}

void mixture_at(const std::vector<MeanAccumulator>& parts, Index row, Index output, Mixture& out) {
  out.resize(parts.size());
  for (std::size_t c = 0; c < parts.size(); ++c) {
    const MeanAccumulator& p = parts[c];
    const auto n = static_cast<double>(p.members());
    out.weight[c] = n;
    out.mean[c] = n > 0 ? p.mean()(row, output) : 0.0;
    out.variance[c] = n > 0 ? p.m2()(row, output) / n : 0.0;
  }
}

double coverage_of_pit(std::span<const double> pit, double level) {
  if (pit.empty()) return kNaN;
  const double low = 0.5 * (1.0 - level), high = 0.5 * (1.0 + level);
  std::size_t inside = 0;
  for (const double u : pit) inside += (u >= low && u <= high) ? 1 : 0;
  return static_cast<double>(inside) / static_cast<double>(pit.size());
}

std::array<double, kCoverageLevels.size()> predictive_coverage(const std::vector<MeanAccumulator>& parts,
                                                               const NoiseEstimate& noise, ConstBatchView truth) {
  std::array<double, kCoverageLevels.size()> out{};
  out.fill(kNaN);
  std::int64_t members = 0;
  for (const auto& p : parts) members += p.members();
  if (members == 0 || truth.size() == 0 || !noise.known()) return out;
  if (noise.variance.cols() != truth.cols())
    throw Error("internal: the noise estimate has the wrong number of outputs");
  std::vector<double> pit;
  pit.reserve(static_cast<std::size_t>(truth.size()));
  Mixture m;
  for (Index i = 0; i < truth.rows(); ++i) {
    for (Index o = 0; o < truth.cols(); ++o) {
      mixture_at(parts, i, o, m);
      pit.push_back(mixture_cdf(m, noise.variance(0, o), truth(i, o)));
    }
  }
  for (std::size_t l = 0; l < kCoverageLevels.size(); ++l) out[l] = coverage_of_pit(pit, kCoverageLevels[l]);
  return out;
}

}  // namespace simmer::ensemble
