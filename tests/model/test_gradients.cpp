// Gradient checks (Stan Math's expect_ad idea): every layer, activation and loss against
// central finite differences, relative tolerance.
#include <catch2/catch.hpp>

#include "gradient_check.hpp"

#include "simmer/model/activation.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/model/dense.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/train/objective.hpp"

using namespace simmer;
using namespace simmer::model;
using simmer::test::max_gradient_error;
using simmer::test::random_matrix;

namespace {

Matrix one_hot_like(Index rows, Index classes, Rng& rng) {
  Matrix m = Matrix::Zero(rows, classes);
  for (Index i = 0; i < rows; ++i) {
    m(i, static_cast<Index>(rng.below(static_cast<std::uint64_t>(classes)))) = 1.0;
  }
  return m;
}

}  // namespace

TEST_CASE("dense + activation layers: parameter gradient matches finite differences", "[gradient]") {
  const auto act =
      GENERATE(Activation::linear, Activation::tanh, Activation::relu, Activation::elu, Activation::sigmoid);
  INFO("activation " << to_string(act) << ", seed 11");
  Rng rng(11);
  Network net = build_network({"3-7-5-2", act, Activation::linear});
  net.initialize(Init::glorot_normal, rng);
  // Non-zero biases so relu/elu kinks are exercised away from the origin.
  for (Index i = 0; i < net.parameter_count(); ++i) net.parameters()(i) += 0.1 * rng.normal();
  const Matrix x = random_matrix(9, 3, rng);
  const Matrix y = random_matrix(9, 2, rng);
  train::NetworkObjective f(net, LossKind::mse, x, y);
  CHECK(max_gradient_error(f, net.parameters()) < 1e-6);
}

TEST_CASE("losses: gradient matches finite differences", "[gradient]") {
  const auto loss = GENERATE(LossKind::sse, LossKind::mse, LossKind::cce, LossKind::bce);
  INFO("loss " << to_string(loss) << ", seed 5");
  Rng rng(5);
  Network net = build_network({"4-6-3", Activation::tanh, Activation::linear});
  net.initialize(Init::glorot_uniform, rng);
  const Matrix x = random_matrix(8, 4, rng);
  Matrix y(8, 3);
  if (loss == LossKind::cce) {
    y = one_hot_like(8, 3, rng);
  } else if (loss == LossKind::bce) {
    for (Index i = 0; i < y.size(); ++i) y.data()[i] = rng.uniform() < 0.5 ? 0.0 : 1.0;
  } else {
    y = random_matrix(8, 3, rng);
  }
  train::NetworkObjective f(net, loss, x, y);
  CHECK(max_gradient_error(f, net.parameters()) < 1e-6);
}

TEST_CASE("output un-scaling is part of the gradient", "[gradient]") {
  Rng rng(3);
  Network net = build_network({"2-5-2", Activation::elu, Activation::linear});
  net.initialize(Init::glorot_normal, rng);
  const Matrix x = random_matrix(6, 2, rng);
  const Matrix y = random_matrix(6, 2, rng, 10.0);
  Eigen::RowVectorXd scale(2), offset(2);
  scale << 12.5, 0.3;
  offset << 20.0, -1.0;
  train::NetworkObjective f(net, LossKind::sse, x, y, scale, offset);
  CHECK(max_gradient_error(f, net.parameters()) < 1e-6);
}

TEST_CASE("input gradient of every layer kind (chained through a first layer)", "[gradient]") {
  // The first dense layer's weight gradient depends on dL/d(input) of everything above it, so a
  // deep stack checks each layer's input gradient too.
  Rng rng(21);
  Network net = build_network({"2-4-4-4-4-4-1", Activation::tanh, Activation::sigmoid});
  net.initialize(Init::glorot_normal, rng);
  const Matrix x = random_matrix(5, 2, rng);
  const Matrix y = random_matrix(5, 1, rng);
  train::NetworkObjective f(net, LossKind::sse, x, y);
  CHECK(max_gradient_error(f, net.parameters()) < 1e-6);
}

TEST_CASE("cross-entropy losses are stable for huge logits", "[loss]") {
  Matrix z(2, 3);
  z << 1000.0, -1000.0, 0.0, -800.0, 800.0, 799.0;
  Matrix t = Matrix::Zero(2, 3);
  t(0, 0) = 1.0;
  t(1, 2) = 1.0;
  const double cce = loss_value(LossKind::cce, view(z), view(t));
  REQUIRE(std::isfinite(cce));
  CHECK(cce == Approx((0.0 + (1.0 + std::log1p(std::exp(-1.0)))) / 2.0));
  Matrix zb(2, 1);
  zb << 1000.0, -1000.0;
  Matrix tb(2, 1);
  tb << 0.0, 0.0;
  CHECK(loss_value(LossKind::bce, view(zb), view(tb)) == Approx(500.0));
}

TEST_CASE("fast_tanh agrees with std::tanh", "[activation]") {
  std::vector<double> x;
  for (double v = -30.0; v <= 30.0; v += 0.0137) x.push_back(v);
  for (double v = -0.05; v <= 0.05; v += 1e-5) x.push_back(v);
  x.push_back(0.0);
  x.push_back(1e-300);
  x.push_back(-1e-12);
  std::vector<double> y(x.size());
  fast_tanh(x.data(), y.data(), static_cast<Index>(x.size()));
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ref = std::tanh(x[i]);
    worst = std::max(worst, std::abs(y[i] - ref) / std::max(std::abs(ref), 1e-300));
  }
  CHECK(worst < 1e-13);
}
