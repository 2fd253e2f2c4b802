#include "simmer/train/posterior.hpp"

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

Vector gaussian_prior_precision(const std::vector<model::TensorLayout>& layout, Index parameters, double sigma,
                                PriorScaling scaling) {
  if (!(sigma > 0.0) || !std::isfinite(sigma)) {
    throw FieldError("gaussian_prior.sigma", std::to_string(sigma), "must be > 0");
  }
  Vector precision = Vector::Constant(parameters, 1.0 / (sigma * sigma));
  if (scaling == PriorScaling::none) return precision;
  for (const auto& t : layout) {
    const bool kernel = t.name.size() >= 7 && t.name.compare(t.name.size() - 7, 7, "/kernel") == 0;
    if (!kernel || t.shape.size() < 2) continue;  // biases keep σ
    Index fan_in = 1;
    for (std::size_t d = 0; d + 1 < t.shape.size(); ++d) fan_in *= t.shape[d];
    const Index size = fan_in * t.shape.back();
    precision.segment(t.offset, size).setConstant(static_cast<double>(fan_in) / (sigma * sigma));
  }
  return precision;
}

double prior_rms(const Vector& precision) {
  if (precision.size() == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(precision.cwiseInverse().mean());
}

}  // namespace simmer::train
