#include "simmer/train/posterior.hpp"

#include <cmath>
#include <limits>

#include "simmer/core/error.hpp"

namespace simmer::train {

double bayes_temperature(model::LossKind loss, Index rows, Index outputs, double noise_sd) {
  const double n = static_cast<double>(rows);
  const double k = static_cast<double>(outputs);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (loss) {
    case model::LossKind::cce:
      return 1.0 / n;
    case model::LossKind::bce:
      return 1.0 / (n * k);
    case model::LossKind::sse:
      return noise_sd > 0.0 ? 2.0 * noise_sd * noise_sd : nan;
    case model::LossKind::mse:
      return noise_sd > 0.0 ? 2.0 * noise_sd * noise_sd / (n * k) : nan;
  }
  return nan;
}

double noise_sd_at(model::LossKind loss, Index rows, Index outputs, double temperature) {
  const double n = static_cast<double>(rows);
  const double k = static_cast<double>(outputs);
  if (loss == model::LossKind::sse) return std::sqrt(temperature / 2.0);
  if (loss == model::LossKind::mse) return std::sqrt(temperature * n * k / 2.0);
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {

void check_sigma(double sigma) {
  if (!(sigma > 0.0) || !std::isfinite(sigma)) {
    throw FieldError("gaussian_prior.sigma", std::to_string(sigma), "must be > 0");
  }
}

/// The scaling's rule, once: calls f(offset, size, fan_in) for every kernel whose σ is σ/√fan_in
/// (every other parameter keeps σ).
template <class F>
void for_each_scaled_kernel(const std::vector<model::TensorLayout>& layout, PriorScaling scaling, F&& f) {
  if (scaling == PriorScaling::none) return;
  for (const auto& t : layout) {
    const bool kernel = t.name.size() >= 7 && t.name.compare(t.name.size() - 7, 7, "/kernel") == 0;
    if (!kernel || t.shape.size() < 2) continue;  // biases keep σ
    Index fan_in = 1;
    for (std::size_t d = 0; d + 1 < t.shape.size(); ++d) fan_in *= t.shape[d];
    f(t.offset, fan_in * t.shape.back(), fan_in);
  }
}

}  // namespace

Vector gaussian_prior_precision(const std::vector<model::TensorLayout>& layout, Index parameters, double sigma,
                                PriorScaling scaling) {
  check_sigma(sigma);
  Vector precision = Vector::Constant(parameters, 1.0 / (sigma * sigma));
  for_each_scaled_kernel(layout, scaling, [&](Index offset, Index size, Index fan_in) {
    precision.segment(offset, size).setConstant(static_cast<double>(fan_in) / (sigma * sigma));
  });
  return precision;
}

double gaussian_prior_rms(const std::vector<model::TensorLayout>& layout, Index parameters, double sigma,
                          PriorScaling scaling) {
  check_sigma(sigma);
  if (parameters <= 0) return std::numeric_limits<double>::quiet_NaN();
  // Σ σ_i² / P: every parameter at σ², the scaled kernels at σ²/fan_in instead.
  double variance_sum = static_cast<double>(parameters);
  for_each_scaled_kernel(layout, scaling, [&](Index, Index size, Index fan_in) {
    variance_sum -= static_cast<double>(size) * (1.0 - 1.0 / static_cast<double>(fan_in));
  });
  return sigma * std::sqrt(variance_sum / static_cast<double>(parameters));
}

}  // namespace simmer::train
