#pragma once
/// \file
/// Shared by the gradient-check tests: central finite differences against an objective's
/// analytic gradient, and random batches.

#include <algorithm>
#include <cmath>

#include "simmer/core/rng.hpp"
#include "simmer/core/types.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::test {

/// max |analytic - numeric| / max(1, |numeric|) over all parameters of the objective.
inline double max_gradient_error(train::Objective& f, Vector x, double eps = 1e-6) {
  Vector grad(x.size());
  f.evaluate_with_gradient(x, grad);
  const Vector analytic = grad;
  double worst = 0.0;
  for (Index i = 0; i < x.size(); ++i) {
    const double xi = x(i);
    x(i) = xi + eps;
    const double up = f.evaluate(x);
    x(i) = xi - eps;
    const double down = f.evaluate(x);
    x(i) = xi;
    const double numeric = (up - down) / (2 * eps);
    worst = std::max(worst, std::abs(analytic(i) - numeric) / std::max(1.0, std::abs(numeric)));
  }
  return worst;
}

/// Tolerances of the float32 checks, from float32's machine epsilon (as Stan names its
/// tolerances): an analytic float32 gradient against the float64 one at the same parameters
/// (rounding in every product and sum of the batch: a few hundred ulps relative), and central
/// differences computed in float32 itself with the step that balances truncation (h²) against
/// rounding (ε/h), h = ε^(1/3), whose error is of order ε^(2/3).
inline constexpr double kFloat32Epsilon = 1.1920928955078125e-07;                              // 2^-23
inline constexpr double kFloat32AnalyticTolerance = 1024 * kFloat32Epsilon;                    // ≈ 1.2e-4
inline const double kFloat32DifferenceStep = std::cbrt(kFloat32Epsilon);                       // ≈ 4.9e-3
inline const double kFloat32DifferenceTolerance = 100 * std::pow(kFloat32Epsilon, 2.0 / 3.0);  // ≈ 2.4e-3

/// The float32 objective's finite-difference check: max |analytic - numeric| / max(1, |numeric|)
/// with x and x ± h rounded to float32 and the loss computed in float32.
inline double max_gradient_error(train::BasicObjective<float>& f, VectorOf<float> x, double eps) {
  VectorOf<float> grad(x.size());
  f.evaluate_with_gradient(x, grad);
  const VectorOf<float> analytic = grad;
  double worst = 0.0;
  for (Index i = 0; i < x.size(); ++i) {
    const float xi = x(i);
    const auto up_x = static_cast<float>(xi + eps), down_x = static_cast<float>(xi - eps);
    x(i) = up_x;
    const double up = f.evaluate(x);
    x(i) = down_x;
    const double down = f.evaluate(x);
    x(i) = xi;
    const double numeric = (up - down) / (static_cast<double>(up_x) - static_cast<double>(down_x));
    worst = std::max(worst, std::abs(analytic(i) - numeric) / std::max(1.0, std::abs(numeric)));
  }
  return worst;
}

/// rows × cols of scale · N(0, 1) draws.
inline Matrix random_matrix(Index rows, Index cols, Rng& rng, double scale = 1.0) {
  Matrix m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = scale * rng.normal();
  return m;
}

}  // namespace simmer::test
