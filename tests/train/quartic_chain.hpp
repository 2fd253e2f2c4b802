#pragma once
// The coupled quartic chain of docs/METHOD.md §3, the integrator's reference potential, shared by
// the thermostat tests (test_nhc.cpp, test_parameter_masses.cpp).

#include "simmer/train/objective.hpp"

namespace simmer::test {

/// L = Σ x_i⁴/4 + Σ (x_i - x_{i+1})²/2: the coupled quartic chain of docs/METHOD.md §3, computed
/// in S (the float32 cases run the integrator as run.precision = float32 does).
template <class S>
class BasicQuarticChain final : public train::BasicObjective<S> {
 public:
  SIMMER_SCALAR_TYPES(S);
  explicit BasicQuarticChain(Index n) : n_(n) {}
  [[nodiscard]] Index parameter_count() const override { return n_; }
  double evaluate(const Vector& x) override {
    const auto d = x.head(n_ - 1) - x.tail(n_ - 1);
    return static_cast<double>(S(0.25) * x.array().pow(4).sum() + S(0.5) * d.squaredNorm());
  }
  double evaluate_with_gradient(const Vector& x, Vector& g) override {
    g = x.array().cube().matrix();
    const Vector d = x.head(n_ - 1) - x.tail(n_ - 1);
    g.head(n_ - 1) += d;
    g.tail(n_ - 1) -= d;
    return evaluate(x);
  }

 private:
  Index n_;
};
using QuarticChain = BasicQuarticChain<double>;

}  // namespace simmer::test
