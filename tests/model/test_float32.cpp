// run.precision = float32: the same code path as float64 (templates on the scalar), checked
// against the float64 network at the same parameters and against float32 finite differences,
// with the tolerances named in gradient_check.hpp (from float32's epsilon).
#include <catch2/catch.hpp>

#include "gradient_check.hpp"

#include "simmer/model/activation.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/model/conv.hpp"
#include "simmer/model/conv_block.hpp"
#include "simmer/model/dense.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/model/pool.hpp"
#include "simmer/train/objective.hpp"

using namespace simmer;
using namespace simmer::model;
using namespace simmer::test;  // the gradient-check helpers and float32 tolerances

namespace {

/// Both precisions of one network, loss and data set, at the same (float32-representable)
/// parameters.
struct Pair {
  Network f64;
  BasicNetwork<float> f32;
  Matrix x, y;
  MatrixOf<float> x32, y32;

  Pair(const ArchitectureSpec& spec, Index rows, LossKind loss, Rng& rng)
      : f64(build_network<double>(spec)), f32(build_network<float>(spec)) {
    f64.initialize(Init::glorot_normal, rng);
    for (Index i = 0; i < f64.parameter_count(); ++i) f64.parameters()(i) += 0.1 * rng.normal();
    f64.parameters() = f64.parameters().cast<float>().cast<double>();  // representable in float32
    f32.parameters() = f64.parameters().cast<float>();
    x = random_matrix(rows, f64.input_size(), rng);
    y = Matrix::Zero(rows, f64.output_size());
    if (loss == LossKind::cce) {
      for (Index i = 0; i < rows; ++i) {
        y(i, static_cast<Index>(rng.below(static_cast<std::uint64_t>(y.cols())))) = 1.0;
      }
    } else if (loss == LossKind::bce) {
      for (Index i = 0; i < y.size(); ++i) y.data()[i] = rng.uniform() < 0.5 ? 0.0 : 1.0;
    } else {
      y = random_matrix(rows, f64.output_size(), rng);
    }
    x = x.cast<float>().cast<double>();
    x32 = x.cast<float>();
    y32 = y.cast<float>();
  }
};

/// max |g32 − g64| / max(1, |g64|).
double relative_difference(const VectorOf<float>& g32, const Vector& g64) {
  double worst = 0.0;
  for (Index i = 0; i < g64.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(g32(i)) - g64(i)) / std::max(1.0, std::abs(g64(i))));
  }
  return worst;
}

}  // namespace

TEST_CASE("float32: every activation and loss, gradient against float64 and finite differences",
          "[gradient][float32]") {
  const auto act =
      GENERATE(Activation::linear, Activation::tanh, Activation::relu, Activation::elu, Activation::sigmoid);
  const auto loss = GENERATE(LossKind::sse, LossKind::mse, LossKind::cce, LossKind::bce);
  INFO("activation " << to_string(act) << ", loss " << to_string(loss) << ", seed 17");
  Rng rng(17);
  Pair n({"4-7-5-3", act, Activation::linear}, 16, loss, rng);
  train::NetworkObjective f64(n.f64, loss, n.x, n.y);
  train::BasicNetworkObjective<float> f32(n.f32, loss, n.x32, n.y32);
  Vector g64(n.f64.parameter_count());
  VectorOf<float> g32(n.f32.parameter_count());
  const double l64 = f64.evaluate_with_gradient(n.f64.parameters(), g64);
  const double l32 = f32.evaluate_with_gradient(n.f32.parameters(), g32);
  CHECK(std::abs(l32 - l64) <= kFloat32AnalyticTolerance * std::max(1.0, std::abs(l64)));
  CHECK(relative_difference(g32, g64) <= kFloat32AnalyticTolerance);
  // Float32 differences need a step near ε^(1/3) ≈ 5e-3, which crosses ReLU's kink for some unit
  // of the batch: its gradient is checked against float64 above (and by finite differences in
  // float64, test_gradients.cpp).
  if (act != Activation::relu) {
    CHECK(max_gradient_error(f32, n.f32.parameters(), kFloat32DifferenceStep) <= kFloat32DifferenceTolerance);
  }
}

TEST_CASE("float32: output un-scaling, deep stacks and chunked gradients agree with float64", "[gradient][float32]") {
  Rng rng(23);
  Pair n({"2-6-6-6-6-2", Activation::tanh, Activation::sigmoid}, 32, LossKind::sse, rng);
  Eigen::RowVectorXd scale(2), offset(2);
  scale << 12.5, 0.3;
  offset << 20.0, -1.0;
  train::NetworkObjective f64(n.f64, LossKind::sse, n.x, n.y, scale, offset);
  train::BasicNetworkObjective<float> f32(n.f32, LossKind::sse, n.x32, n.y32, scale, offset);
  for (const Index chunks : {Index{1}, Index{4}}) {
    INFO("gradient chunks " << chunks);
    f32.set_gradient_chunks(chunks);
    Vector g64(n.f64.parameter_count());
    VectorOf<float> g32(n.f32.parameter_count());
    f64.evaluate_with_gradient(n.f64.parameters(), g64);
    f32.evaluate_with_gradient(n.f32.parameters(), g32);
    // Relative to the gradient's scale (sse of targets ~10 sums large terms).
    CHECK(relative_difference(g32 / static_cast<float>(g64.cwiseAbs().maxCoeff()), g64 / g64.cwiseAbs().maxCoeff()) <=
          kFloat32AnalyticTolerance);
  }
}

TEST_CASE("float32: LeNet-like image nets (both convolution algorithms, both poolings) against float64",
          "[gradient][float32][conv]") {
  const auto pooling = GENERATE(PoolKind::average, PoolKind::max);
  const auto algorithm = GENERATE(ConvAlgorithm::im2col, ConvAlgorithm::direct);
  INFO("pooling " << to_string(pooling) << ", algorithm " << to_string(algorithm) << ", seed 29");
  Rng rng(29);
  const auto layers = [&](auto zero) {
    using S = decltype(zero);
    std::vector<LayerPtrOf<S>> l;
    l.push_back(
        std::make_unique<BasicConvBlock<S>>(12, 12, 2, 4, 5, Padding::same, Activation::tanh, pooling, 2, algorithm));
    l.push_back(std::make_unique<BasicFlatten<S>>(6 * 6 * 4));
    l.push_back(std::make_unique<BasicDense<S>>(6 * 6 * 4, 3));
    return BasicNetwork<S>(std::move(l));
  };
  Network net64 = layers(0.0);
  BasicNetwork<float> net32 = layers(0.0f);
  net64.initialize(Init::glorot_normal, rng);
  net64.parameters() = net64.parameters().cast<float>().cast<double>();
  net32.parameters() = net64.parameters().cast<float>();
  const Matrix x = random_matrix(6, 12 * 12 * 2, rng).cast<float>().cast<double>();
  Matrix y = Matrix::Zero(6, 3);
  for (Index i = 0; i < 6; ++i) y(i, i % 3) = 1.0;
  const MatrixOf<float> x32 = x.cast<float>(), y32 = y.cast<float>();
  train::NetworkObjective f64(net64, LossKind::cce, x, y);
  train::BasicNetworkObjective<float> f32(net32, LossKind::cce, x32, y32);
  Vector g64(net64.parameter_count());
  VectorOf<float> g32(net32.parameter_count());
  f64.evaluate_with_gradient(net64.parameters(), g64);
  f32.evaluate_with_gradient(net32.parameters(), g32);
  CHECK(relative_difference(g32, g64) <= kFloat32AnalyticTolerance);
  const auto p64 = f64.predict(view(x));
  const Matrix p32 = f32.predict(view(x32)).cast<double>();
  CHECK((p32 - p64).cwiseAbs().maxCoeff() <= kFloat32AnalyticTolerance * std::max(1.0, p64.cwiseAbs().maxCoeff()));
}

TEST_CASE("float32: fast_tanh is within a few ulps of std::tanh", "[activation][float32]") {
  std::vector<float> in, out(4001);
  for (int i = -2000; i <= 2000; ++i) in.push_back(static_cast<float>(i) / 200.0f);
  fast_tanh(in.data(), out.data(), static_cast<Index>(in.size()));
  double worst = 0.0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double exact = std::tanh(static_cast<double>(in[i]));
    worst = std::max(worst, std::abs(out[i] - exact) / std::max(1e-30, std::abs(exact)));
  }
  CHECK(worst <= 8 * simmer::test::kFloat32Epsilon);
}
