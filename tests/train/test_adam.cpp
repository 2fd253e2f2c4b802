#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/model/architecture.hpp"
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

TEST_CASE("Adam's epoch callback stops training: the same iterate as fewer epochs", "[adam]") {
  // Mini-batches, so the shuffling stream must also stop where the epochs do.
  Rng data_rng(7);
  Matrix x(40, 2), y(40, 1);
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = data_rng.uniform(-1, 1);
  for (Index i = 0; i < y.size(); ++i) y.data()[i] = data_rng.uniform(-1, 1);
  const auto run = [&](std::int64_t epochs, std::int64_t stop_after, std::vector<std::int64_t>& seen) {
    Rng rng(3);
    model::Network net = model::build_network<double>({"2-5-1", model::Activation::tanh, model::Activation::linear});
    net.initialize(model::Init::glorot_normal, rng);
    NetworkObjective f(net, model::LossKind::mse, x, y, Eigen::RowVectorXd(), Eigen::RowVectorXd());
    AdamOptions opt;
    opt.epochs = epochs;
    opt.batch_size = 16;
    AdamState state = AdamState::zeros(net.parameter_count());
    train_adam(opt, state, f, rng, [&](std::int64_t epoch, double) {
      seen.push_back(epoch);
      return epoch == stop_after;
    });
    CHECK(state.epoch == std::min(epochs, stop_after));
    return Vector(net.parameters());
  };
  std::vector<std::int64_t> stopped, full;
  const Vector early = run(10, 4, stopped);
  const Vector four = run(4, 99, full);
  CHECK(stopped == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK(full == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK(early == four);
}
