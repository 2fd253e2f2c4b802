#include "simmer/train/configurational.hpp"

#include <cmath>
#include <limits>

#include "simmer/core/error.hpp"
#include "simmer/train/stability.hpp"

namespace simmer::train {

template <class S>
ConfigurationalSample configurational_sample(BasicObjective<S>& objective, VectorOf<S>& x, double temperature,
                                             const Vector* masses, const Vector* prior_precision, Rng& rng,
                                             int probes) {
  const Index n = x.size();
  const bool weighted = masses != nullptr && masses->size() > 0;
  const bool prior = prior_precision != nullptr && prior_precision->size() > 0;
  if ((weighted && masses->size() != n) || (prior && prior_precision->size() != n) || probes < 1) {
    throw Error("configurational_sample: one mass and one prior precision per parameter, and a probe");
  }
  const Vector inverse_mass = weighted ? masses->cwiseInverse().eval() : Vector::Ones(n).eval();
  Vector z(n), hz(n), mean_gradient(n), gradient = Vector::Zero(n);
  HessianProduct<S> hess(objective, x);
  ConfigurationalSample out;
  for (int probe = 0; probe < probes; ++probe) {
    for (Index i = 0; i < n; ++i) z(i) = (rng.next() >> 63) != 0 ? 1.0 : -1.0;
    hess.apply(z, hz, &mean_gradient);
    out.trace += z.cwiseProduct(inverse_mass).dot(hz);
    gradient += mean_gradient;
  }
  out.trace /= probes;
  gradient /= probes;
  if (prior) {
    gradient += temperature * prior_precision->cwiseProduct(hess.position());
    out.trace += temperature * prior_precision->dot(inverse_mass);
  }
  out.gradient_sq = gradient.cwiseProduct(inverse_mass).dot(gradient);
  return out;
}

template ConfigurationalSample configurational_sample(BasicObjective<double>&, VectorOf<double>&, double, const Vector*,
                                                      const Vector*, Rng&, int);
template ConfigurationalSample configurational_sample(BasicObjective<float>&, VectorOf<float>&, double, const Vector*,
                                                      const Vector*, Rng&, int);

void ThermometerSums::add(const ConfigurationalSample& c, double kinetic_temperature, double target_temperature) {
  samples += 1;
  gradient_sq += c.gradient_sq;
  trace += c.trace;
  gradient_sq_sq += c.gradient_sq * c.gradient_sq;
  trace_sq += c.trace * c.trace;
  cross += c.gradient_sq * c.trace;
  kinetic += kinetic_temperature;
  target += target_temperature;
}

double ThermometerSums::configurational_temperature() const {
  return samples > 0 ? gradient_sq / trace : std::numeric_limits<double>::quiet_NaN();
}
double ThermometerSums::configurational_stderr() const {
  if (samples < 2) return std::numeric_limits<double>::quiet_NaN();
  const auto n = static_cast<double>(samples);
  const double a = gradient_sq / n, b = trace / n, r = a / b;
  const double var_a = (gradient_sq_sq - n * a * a) / (n - 1.0);
  const double var_b = (trace_sq - n * b * b) / (n - 1.0);
  const double cov = (cross - n * a * b) / (n - 1.0);
  return std::sqrt(std::max(0.0, var_a - 2.0 * r * cov + r * r * var_b) / n) / std::abs(b);
}

double ThermometerSums::kinetic_temperature() const {
  return samples > 0 ? kinetic / static_cast<double>(samples) : std::numeric_limits<double>::quiet_NaN();
}
double ThermometerSums::target_temperature() const {
  return samples > 0 ? target / static_cast<double>(samples) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace simmer::train
