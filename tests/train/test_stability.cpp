#include <catch2/catch.hpp>

#include "simmer/train/stability.hpp"

using namespace simmer;
using namespace simmer::train;

namespace {
/// L = ½ Σ a_i x_i²: Hessian diag(a).
class Quadratic final : public Objective {
 public:
  explicit Quadratic(Vector a) : a_(std::move(a)) {}
  [[nodiscard]] Index parameter_count() const override { return a_.size(); }
  double evaluate(const Vector& x) override { return 0.5 * x.dot(a_.cwiseProduct(x)); }
  double evaluate_with_gradient(const Vector& x, Vector& g) override {
    g = a_.cwiseProduct(x);
    return evaluate(x);
  }

 private:
  Vector a_;
};
}  // namespace

TEST_CASE("power iteration finds the largest Hessian eigenvalue", "[stability]") {
  Vector a = Vector::LinSpaced(50, 0.1, 10.0);
  a(17) = 8.0e7;  // the Auto-MPG S scale of docs/METHOD.md §9
  Quadratic f(a);
  Vector x = Vector::Constant(50, 0.3);
  const Vector before = x;
  Rng rng(12);
  const auto est = estimate_curvature(f, x, rng, 30);
  INFO("seed 12");
  CHECK(est.lambda_max == Approx(8.0e7).epsilon(1e-6));
  CHECK(est.time_step_limit() == Approx(2.0 / std::sqrt(8.0e7)).epsilon(1e-6));
  CHECK(est.gradients == 60);
  CHECK(x == before);
}
