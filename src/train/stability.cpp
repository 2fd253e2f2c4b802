#include "simmer/train/stability.hpp"

#include <cmath>
#include <limits>

namespace simmer::train {

double CurvatureEstimate::time_step_limit() const {
  return lambda_max > 0.0 ? 2.0 / std::sqrt(lambda_max) : std::numeric_limits<double>::infinity();
}

CurvatureEstimate estimate_curvature(Objective& objective, Vector& x, Rng& rng, int iterations) {
  const Index n = x.size();
  Vector v(n), hv(n), g_plus(n), g_minus(n);
  for (Index i = 0; i < n; ++i) v(i) = rng.normal();
  v.normalize();
  const Vector x0 = x;
  // ε scaled to the parameters so the difference is well above rounding.
  const double eps = 1e-5 * std::max(1.0, x0.norm() / std::sqrt(static_cast<double>(n)));
  CurvatureEstimate est;
  for (int it = 0; it < iterations; ++it) {
    x = x0 + eps * v;
    objective.evaluate_with_gradient(x, g_plus);
    g_plus = Vector(g_plus);  // the objective may hand back its own buffer: keep a copy
    x = x0 - eps * v;
    objective.evaluate_with_gradient(x, g_minus);
    est.gradients += 2;
    hv = (g_plus - g_minus) / (2.0 * eps);
    est.lambda_max = std::abs(v.dot(hv));
    const double norm = hv.norm();
    if (!(norm > 0.0) || !std::isfinite(norm)) break;
    v = hv / norm;
  }
  x = x0;
  return est;
}

}  // namespace simmer::train
