#include "simmer/train/masses.hpp"

#include <cmath>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::train {

Vector adam_masses(const Vector& second_moment, std::int64_t updates, double beta2, double epsilon) {
  if (updates < 1) throw Error("adam masses: Adam has taken no update (the second moment is empty)");
  const double correction = 1.0 - std::pow(beta2, static_cast<double>(updates));
  return ((second_moment.array() / correction).sqrt() + epsilon).matrix();
}

MassAdaptation::MassAdaptation(Index parameters) : mean_(Vector::Zero(parameters)), m2_(Vector::Zero(parameters)) {}

Vector MassAdaptation::masses() const {
  if (count_ < 2) throw Error("mass adaptation: " + std::to_string(count_) + " draw(s); the variance needs two");
  const auto n = static_cast<double>(count_);
  const Vector variance = m2_ / (n - 1.0);
  const double mean_variance = variance.mean();
  if (!(mean_variance > 0.0) || !std::isfinite(mean_variance)) {
    throw Error("mass adaptation: the warm-up did not move the parameters (mean variance " +
                std::to_string(mean_variance) + ")");
  }
  const Vector regularised = (n / (n + 5.0)) * variance.array() + (5.0 / (n + 5.0)) * mean_variance;
  return regularised.cwiseInverse();
}

void MassAdaptation::restore(std::int64_t count, Vector mean, Vector m2) {
  if (mean.size() != mean_.size() || m2.size() != m2_.size() || count < 0) {
    throw Error("mass adaptation: a saved state of another size");
  }
  count_ = count;
  mean_ = std::move(mean);
  m2_ = std::move(m2);
}

Vector curvature_masses(const Vector& mean_diagonal, const Vector& prior_curvature) {
  if (prior_curvature.size() > 0 && prior_curvature.size() != mean_diagonal.size()) {
    throw Error("curvature masses: one prior curvature per parameter");
  }
  Vector m = mean_diagonal.cwiseMax(0.0);
  if (prior_curvature.size() > 0) m += prior_curvature;
  const double mean = m.mean();
  if (!(mean > 0.0) || !std::isfinite(mean)) {
    throw Error("curvature masses: the warm-up's Hessian diagonal has no positive curvature (mean mass " +
                std::to_string(mean) + ")");
  }
  return m.cwiseMax(1e-3 * mean);
}

Vector scaled_masses(const Vector& unscaled, double weighted_lambda_max, double lambda_max) {
  if (!(weighted_lambda_max > 0.0) || !std::isfinite(weighted_lambda_max) || !(lambda_max > 0.0) ||
      !std::isfinite(lambda_max)) {
    throw Error("parameter masses: the curvature is not positive (lambda_max " + std::to_string(lambda_max) +
                ", mass-weighted " + std::to_string(weighted_lambda_max) + "); unit masses have nothing to scale to");
  }
  return unscaled * (weighted_lambda_max / lambda_max);
}

}  // namespace simmer::train
