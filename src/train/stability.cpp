#include "simmer/train/stability.hpp"

#include <cmath>
#include <limits>

#include "simmer/core/error.hpp"

namespace simmer::train {

double CurvatureEstimate::time_step_limit() const {
  return lambda_max > 0.0 ? 2.0 / std::sqrt(lambda_max) : std::numeric_limits<double>::infinity();
}

double thermostat_step_limit(const NhcOptions& options, double degrees_of_freedom, double temperature) {
  if (options.thermostat == Thermostat::langevin || !(temperature > 0.0) || !(degrees_of_freedom > 0.0)) {
    return std::numeric_limits<double>::infinity();
  }
  const double q1 = options.masses.empty() ? 1.0 : options.masses.front();
  return 2.0 / std::sqrt(2.0 * degrees_of_freedom * temperature / q1);
}

template <class S>
CurvatureEstimate estimate_curvature(BasicObjective<S>& objective, VectorOf<S>& x, Rng& rng, int iterations,
                                     const Vector* masses) {
  const Index n = x.size();
  if (masses != nullptr && masses->size() != n) throw Error("estimate_curvature: one mass per parameter");
  const Vector inverse_sqrt_mass = masses != nullptr ? masses->cwiseInverse().cwiseSqrt().eval() : Vector();
  Vector d(n);         // the displacement M^(−1/2) v (v itself without masses)
  Vector v(n), hv(n);  // the power iteration in float64; the gradients in S
  VectorOf<S> g_plus(n), g_minus(n);
  for (Index i = 0; i < n; ++i) v(i) = rng.normal();
  v.normalize();
  const VectorOf<S> keep = x;
  const Vector x0 = x.template cast<double>();
  // ε scaled to the parameters so the difference is well above rounding.
  const double eps = difference_step<S>() * std::max(1.0, x0.norm() / std::sqrt(static_cast<double>(n)));
  CurvatureEstimate est;
  for (int it = 0; it < iterations; ++it) {
    d = masses != nullptr ? v.cwiseProduct(inverse_sqrt_mass).eval() : v;
    x = (x0 + eps * d).template cast<S>();
    objective.evaluate_with_gradient(x, g_plus);
    g_plus = VectorOf<S>(g_plus);  // the objective may hand back its own buffer: keep a copy
    x = (x0 - eps * d).template cast<S>();
    objective.evaluate_with_gradient(x, g_minus);
    est.gradients += 2;
    hv = (g_plus - g_minus).template cast<double>() / (2.0 * eps);
    if (masses != nullptr) hv = hv.cwiseProduct(inverse_sqrt_mass);
    est.lambda_max = std::abs(v.dot(hv));
    const double norm = hv.norm();
    if (!(norm > 0.0) || !std::isfinite(norm)) break;
    v = hv / norm;
  }
  x = keep;
  return est;
}

template CurvatureEstimate estimate_curvature(BasicObjective<double>&, VectorOf<double>&, Rng&, int, const Vector*);
template CurvatureEstimate estimate_curvature(BasicObjective<float>&, VectorOf<float>&, Rng&, int, const Vector*);

}  // namespace simmer::train
