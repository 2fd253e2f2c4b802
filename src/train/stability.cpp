#include "simmer/train/stability.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "simmer/core/error.hpp"

namespace simmer::train {

double CurvatureEstimate::time_step_limit() const {
  return lambda_max > 0.0 ? 2.0 / std::sqrt(lambda_max) : std::numeric_limits<double>::infinity();
}

double thermostat_step_limit(const NhcOptions& options, double degrees_of_freedom, double temperature) {
  if (options.thermostat != Thermostat::nose_hoover_chain || !(temperature > 0.0) || !(degrees_of_freedom > 0.0)) {
    return std::numeric_limits<double>::infinity();
  }
  const double q1 = options.masses.empty() ? 1.0 : options.masses.front();
  return 2.0 / std::sqrt(2.0 * degrees_of_freedom * temperature / q1);
}

template <class S>
HessianProduct<S>::HessianProduct(BasicObjective<S>& objective, VectorOf<S>& x)
    : f_(&objective), x_(&x), keep_(x), x0_(x.template cast<double>()), plus_(x.size()), minus_(x.size()) {
  // ε scaled to the parameters so the difference is well above rounding.
  eps_ = difference_step<S>() * std::max(1.0, x0_.norm() / std::sqrt(static_cast<double>(x0_.size())));
}

template <class S>
void HessianProduct<S>::apply(const Vector& d, Vector& hd, Vector* mean_gradient) {
  *x_ = (x0_ + eps_ * d).template cast<S>();
  f_->evaluate_with_gradient(*x_, plus_);
  *x_ = (x0_ - eps_ * d).template cast<S>();
  f_->evaluate_with_gradient(*x_, minus_);
  gradients_ += 2;
  hd = (plus_ - minus_).template cast<double>() / (2.0 * eps_);
  if (mean_gradient != nullptr) {
    *mean_gradient = 0.5 * (plus_.template cast<double>() + minus_.template cast<double>());
  }
}

template <class S>
void hessian_diagonal(BasicObjective<S>& objective, VectorOf<S>& x, Rng& rng, int probes, Vector& diagonal) {
  if (probes < 1) throw Error("hessian_diagonal: needs a probe");
  const Index n = x.size();
  HessianProduct<S> hess(objective, x);
  Vector z(n), hz(n);
  diagonal = Vector::Zero(n);
  for (int probe = 0; probe < probes; ++probe) {
    for (Index i = 0; i < n; ++i) z(i) = (rng.next() >> 63) != 0 ? 1.0 : -1.0;
    hess.apply(z, hz);
    diagonal += z.cwiseProduct(hz);
  }
  diagonal /= static_cast<double>(probes);
}

template <class S>
CurvatureEstimate estimate_curvature(BasicObjective<S>& objective, VectorOf<S>& x, Rng& rng, int iterations,
                                     const Vector* masses) {
  const Index n = x.size();
  if (masses != nullptr && masses->size() != n) throw Error("estimate_curvature: one mass per parameter");
  const Vector inverse_sqrt_mass = masses != nullptr ? masses->cwiseInverse().cwiseSqrt().eval() : Vector();
  Vector d(n);         // the displacement M^(−1/2) v (v itself without masses)
  Vector v(n), hv(n);  // the power iteration in float64; the gradients in S
  for (Index i = 0; i < n; ++i) v(i) = rng.normal();
  v.normalize();
  HessianProduct<S> hess(objective, x);
  CurvatureEstimate est;
  for (int it = 0; it < iterations; ++it) {
    d = masses != nullptr ? v.cwiseProduct(inverse_sqrt_mass).eval() : v;
    hess.apply(d, hv);
    if (masses != nullptr) hv = hv.cwiseProduct(inverse_sqrt_mass);
    est.lambda_max = std::abs(v.dot(hv));
    const double norm = hv.norm();
    if (!(norm > 0.0) || !std::isfinite(norm)) break;
    v = hv / norm;
  }
  est.gradients = hess.gradients();
  return est;
}

template class HessianProduct<double>;
template class HessianProduct<float>;
template void hessian_diagonal(BasicObjective<double>&, VectorOf<double>&, Rng&, int, Vector&);
template void hessian_diagonal(BasicObjective<float>&, VectorOf<float>&, Rng&, int, Vector&);
template CurvatureEstimate estimate_curvature(BasicObjective<double>&, VectorOf<double>&, Rng&, int, const Vector*);
template CurvatureEstimate estimate_curvature(BasicObjective<float>&, VectorOf<float>&, Rng&, int, const Vector*);

}  // namespace simmer::train
