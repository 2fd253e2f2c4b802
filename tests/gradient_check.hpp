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

/// rows × cols of scale · N(0, 1) draws.
inline Matrix random_matrix(Index rows, Index cols, Rng& rng, double scale = 1.0) {
  Matrix m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = scale * rng.normal();
  return m;
}

}  // namespace simmer::test
