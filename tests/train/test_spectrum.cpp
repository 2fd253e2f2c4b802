// The curvature report's eigenvalue count (stochastic Lanczos quadrature) on quadratics whose
// Hessian spectrum is known.
#include <catch2/catch.hpp>

#include <Eigen/QR>

#include "simmer/train/spectrum.hpp"

using namespace simmer;
using namespace simmer::train;

namespace {

/// L = ½ xᵀ H x with H = Q diag(λ) Qᵀ for a random orthogonal Q.
class RotatedQuadratic final : public Objective {
 public:
  RotatedQuadratic(const Vector& eigenvalues, Rng& rng) {
    const Index n = eigenvalues.size();
    Eigen::MatrixXd a(n, n);
    for (Index i = 0; i < a.size(); ++i) a.data()[i] = rng.normal();
    const Eigen::MatrixXd q = Eigen::HouseholderQR<Eigen::MatrixXd>(a).householderQ();
    h_ = q * eigenvalues.asDiagonal() * q.transpose();
  }
  [[nodiscard]] Index parameter_count() const override { return h_.rows(); }
  double evaluate(const Vector& x) override { return 0.5 * x.dot(h_ * x); }
  double evaluate_with_gradient(const Vector& x, Vector& g) override {
    g = h_ * x;
    return evaluate(x);
  }

 private:
  Eigen::MatrixXd h_;
};

}  // namespace

TEST_CASE("SLQ counts the eigenvalues above a threshold", "[spectrum]") {
  Rng rng(42);
  const Index n = 300;
  Vector lambda(n);
  for (Index i = 0; i < n; ++i) lambda(i) = i < 15 ? 1.0 + 10.0 * static_cast<double>(i) : 0.01 * rng.uniform();
  RotatedQuadratic f(lambda, rng);
  Vector x = Vector::Zero(n);
  for (Index i = 0; i < n; ++i) x(i) = 0.1 * rng.normal();
  const Vector before = x;
  const SpectrumEstimate est = estimate_spectrum(f, x, 0.1, 60, 20, rng);
  INFO("seed 42: 15 of 300 eigenvalues in [1, 141], the rest below 0.01; 60 steps x 20 probes: "
       << est.count_above << " +- " << est.count_stderr << ", Ritz above " << est.ritz_above);
  CHECK(x == before);           // the position is left unchanged
  CHECK(est.ritz_above == 15);  // the top of the spectrum converges
  CHECK(est.lambda_max == Approx(141.0).epsilon(1e-6));
  CHECK(std::abs(est.count_above - 15.0) < 4.0 * est.count_stderr + 1.0);
  CHECK(est.gradients == 2 * 60 * 20);
}

TEST_CASE("SLQ with as many steps as parameters is exact", "[spectrum]") {
  Rng rng(7);
  const Index n = 40;
  Vector lambda(n);
  for (Index i = 0; i < n; ++i) lambda(i) = static_cast<double>(i) * 0.1;  // 0, 0.1, ..., 3.9
  RotatedQuadratic f(lambda, rng);
  Vector x = Vector::Ones(n);
  const SpectrumEstimate est = estimate_spectrum(f, x, 1.95, 40, 1, rng);
  INFO("seed 7, eigenvalues 0..3.9 step 0.1, threshold 1.95: 20 above");
  CHECK(est.ritz_above == 20);
  CHECK(est.lambda_max == Approx(3.9).epsilon(1e-6));
  CHECK(std::isnan(est.count_stderr));  // one probe
}
