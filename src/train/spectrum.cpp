#include "simmer/train/spectrum.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "simmer/train/stability.hpp"

namespace simmer::train {
template <class S>
SpectrumEstimate estimate_spectrum(BasicObjective<S>& objective, VectorOf<S>& x, double threshold, int steps,
                                   int probes, Rng& rng) {
  const Index n = x.size();
  SpectrumEstimate est;
  est.probes = probes;
  est.lambda_max = -std::numeric_limits<double>::infinity();
  const int m = static_cast<int>(std::min<Index>(steps, n));
  const bool reorthogonalise = static_cast<double>(n) * m * 8.0 <= 64.0 * 1024 * 1024;
  HessianProduct<S> hess(objective, x);
  std::vector<double> counts;
  for (int probe = 0; probe < probes; ++probe) {
    std::vector<Vector> basis;
    Vector q(n), w(n), q_prev = Vector::Zero(n);
    for (Index i = 0; i < n; ++i) q(i) = (rng.next() >> 63) != 0 ? 1.0 : -1.0;
    q /= q.norm();
    std::vector<double> alpha, beta;
    double b_prev = 0.0;
    for (int j = 0; j < m; ++j) {
      if (reorthogonalise) basis.push_back(q);
      hess.apply(q, w);
      const double a = q.dot(w);
      w -= a * q + b_prev * q_prev;
      if (reorthogonalise) {
        for (int pass = 0; pass < 2; ++pass) {
          for (const Vector& u : basis) w -= u.dot(w) * u;
        }
      }
      alpha.push_back(a);
      const double b = w.norm();
      if (j + 1 == m || !(b > 1e-10 * std::max(1.0, std::abs(a)))) break;  // Krylov space closed
      beta.push_back(b);
      q_prev = q;
      q = w / b;
      b_prev = b;
    }
    const auto k = static_cast<Index>(alpha.size());
    Eigen::MatrixXd t = Eigen::MatrixXd::Zero(k, k);
    for (Index i = 0; i < k; ++i) {
      t(i, i) = alpha[static_cast<std::size_t>(i)];
      if (i + 1 < k) t(i, i + 1) = t(i + 1, i) = beta[static_cast<std::size_t>(i)];
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(t);
    double count = 0.0;
    int ritz = 0;
    for (Index i = 0; i < k; ++i) {
      const double theta = eig.eigenvalues()(i);
      const double tau = eig.eigenvectors()(0, i);
      est.lambda_max = std::max(est.lambda_max, theta);
      if (theta > threshold) {
        count += static_cast<double>(n) * tau * tau;
        ++ritz;
      }
    }
    if (probe == 0) est.ritz_above = ritz;
    est.steps = std::max(est.steps, static_cast<int>(k));
    counts.push_back(count);
  }
  double mean = 0.0;
  for (const double c : counts) mean += c;
  mean /= static_cast<double>(counts.size());
  double var = 0.0;
  for (const double c : counts) var += (c - mean) * (c - mean);
  est.count_above = mean;
  est.count_stderr = counts.size() > 1
                         ? std::sqrt(var / static_cast<double>(counts.size() - 1) / static_cast<double>(counts.size()))
                         : std::numeric_limits<double>::quiet_NaN();
  est.gradients = hess.gradients();
  return est;
}

template SpectrumEstimate estimate_spectrum(BasicObjective<double>&, VectorOf<double>&, double, int, int, Rng&);
template SpectrumEstimate estimate_spectrum(BasicObjective<float>&, VectorOf<float>&, double, int, int, Rng&);

}  // namespace simmer::train
