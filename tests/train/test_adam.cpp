#include <catch2/catch.hpp>

#include "simmer/core/error.hpp"
#include "simmer/train/adam.hpp"

using namespace simmer;
using namespace simmer::train;

TEST_CASE("Adam reaches the known minimum of a quadratic", "[adam]") {
  // L = ½ Σ a_i (x_i - c_i)², minimum at c; badly scaled on purpose (a from 0.1 to 100).
  const Index n = 6;
  Vector a(n), c(n);
  a << 0.1, 1.0, 3.0, 10.0, 30.0, 100.0;
  c << 1.0, -2.0, 0.5, 3.0, -0.25, 0.0;
  Vector x = Vector::Zero(n);
  AdamOptions opt;
  opt.learning_rate = 0.01;
  AdamState state = AdamState::zeros(n);
  Vector before_last;
  for (int it = 0; it < 20000; ++it) {
    const Vector grad = a.cwiseProduct(x - c);
    before_last = x;
    adam_update(opt, state, x, grad);
  }
  CHECK((x - c).cwiseAbs().maxCoeff() < 1e-4);
  CHECK(state.t == 20000);
  // The previous iterate is kept for the retrofit velocity.
  CHECK(state.previous == before_last);
}

TEST_CASE("Adam's first step has size lr in every coordinate (bias correction)", "[adam]") {
  Vector x = Vector::Zero(3);
  Vector g(3);
  g << 5.0, -0.01, 1e3;
  AdamOptions opt;
  AdamState state = AdamState::zeros(3);
  adam_update(opt, state, x, g);
  // Keras form: m = 0.1 g, v = 0.001 g², α = lr √0.001 / 0.1, step = α m / (√v + ε):
  // ≈ lr·sign(g), slightly less where |g| is not large against ε.
  for (Index i = 0; i < 3; ++i) {
    const double expected = -0.002 * std::sqrt(0.001) / 0.1 * (0.1 * g(i)) / (std::sqrt(0.001) * std::abs(g(i)) + 1e-7);
    CHECK(x(i) == Approx(expected).epsilon(1e-12));
  }
  CHECK(x(1) == Approx(0.0019993677).epsilon(1e-7));
}

TEST_CASE("Adam options are validated with the key name", "[adam]") {
  AdamOptions opt;
  opt.learning_rate = -1;
  CHECK_THROWS_WITH(opt.validate(), Catch::Contains("AdamOptions.learning_rate"));
  opt = {};
  opt.epochs = -3;
  CHECK_THROWS_WITH(opt.validate(), Catch::Contains("AdamOptions.epochs") && Catch::Contains("-3"));
}
