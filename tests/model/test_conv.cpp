// Image layers (conv2d, pooling, flatten) and LeNet-5: forward against direct loops, parameter
// and input gradients against central finite differences (Stan Math's expect_ad idea).
#include <catch2/catch.hpp>

#include "gradient_check.hpp"

#include "simmer/model/architecture.hpp"
#include "simmer/model/conv.hpp"
#include "simmer/model/conv_block.hpp"
#include "simmer/model/dense.hpp"
#include "simmer/model/gemm.hpp"
#include "simmer/model/initializer.hpp"
#include "simmer/model/pool.hpp"
#include "simmer/train/objective.hpp"

using namespace simmer;
using namespace simmer::model;
using simmer::test::max_gradient_error;
using simmer::test::random_matrix;

namespace {

BatchView batch(Matrix& m) { return {m.data(), m.rows(), m.cols()}; }

/// A layer's parameters (standard normal draws) and gradient, bound to it and reserved for
/// `rows` rows. The vectors' buffers stay put when the struct moves, so the binding holds.
struct Bound {
  Vector params;
  Vector grads;
};
Bound bind_random(Layer& layer, Index rows, Rng& rng) {
  Bound b{Vector(layer.parameter_count()), Vector::Zero(layer.parameter_count())};
  for (Index i = 0; i < b.params.size(); ++i) b.params(i) = rng.normal();
  layer.bind(b.params.data(), b.grads.data());
  layer.reserve(rows);
  return b;
}

/// Worst |analytic - numeric| / max(1, |numeric|) of one layer's parameter and input gradients
/// for the loss L = Σ R ⊙ layer(x) with a fixed random R (so dL/dout = R).
struct LayerGradientError {
  double parameters = 0.0;
  double inputs = 0.0;
};

LayerGradientError layer_gradient_error(Layer& layer, Index rows, Rng& rng, double eps = 1e-6) {
  Vector params = Vector::Zero(layer.parameter_count());
  for (Index i = 0; i < params.size(); ++i) params(i) = 0.5 * rng.normal();
  Vector grads = Vector::Zero(params.size());
  layer.bind(params.data(), grads.data());
  layer.reserve(rows);
  Matrix x = random_matrix(rows, layer.input_size(), rng);
  const Matrix weights = random_matrix(rows, layer.output_size(), rng);
  Matrix y(rows, layer.output_size());
  const auto loss = [&] {
    layer.forward(view(x), batch(y));
    return (y.array() * weights.array()).sum();
  };

  loss();
  Matrix grad_out = weights;
  Matrix grad_in(rows, layer.input_size());
  BatchView grad_in_view = batch(grad_in);
  layer.backward(view(x), view(y), batch(grad_out), &grad_in_view);
  const Vector analytic_params = grads;
  // Without grad_in the parameter gradient must be the same.
  grad_out = weights;
  layer.backward(view(x), view(y), batch(grad_out), nullptr);
  if (grads.size() > 0) CHECK((grads - analytic_params).cwiseAbs().maxCoeff() <= 1e-12);

  const auto numeric = [&](double& value) {
    const double v = value;
    value = v + eps;
    const double up = loss();
    value = v - eps;
    const double down = loss();
    value = v;
    return (up - down) / (2 * eps);
  };
  LayerGradientError worst;
  for (Index i = 0; i < params.size(); ++i) {
    const double n = numeric(params(i));
    worst.parameters = std::max(worst.parameters, std::abs(analytic_params(i) - n) / std::max(1.0, std::abs(n)));
  }
  for (Index i = 0; i < x.size(); ++i) {
    const double n = numeric(x.data()[i]);
    worst.inputs = std::max(worst.inputs, std::abs(grad_in.data()[i] - n) / std::max(1.0, std::abs(n)));
  }
  return worst;
}

/// im2col budget of `images` images for `conv`, so a batch is split into several chunks.
Index bytes_for_images(const Conv2D& conv, Index images) {
  const Index patch = conv.parameter_count() / conv.filters() - 1;  // kh·kw·in_channels
  return images * conv.out_height() * conv.out_width() * (patch + 1) * static_cast<Index>(sizeof(double));
}

/// out[n][oy][ox][f] = b[f] + Σ in[n][oy - pad + ky][ox - pad + kx][c] K[ky][kx][c][f].
Matrix naive_conv(const Matrix& x, const Vector& params, Index height, Index width, Index channels, Index filters,
                  Index kernel, Padding padding) {
  const Index pad = padding == Padding::same ? (kernel - 1) / 2 : 0;
  const Index oh = padding == Padding::same ? height : height - kernel + 1;
  const Index ow = padding == Padding::same ? width : width - kernel + 1;
  const double* k = params.data();
  const double* b = k + kernel * kernel * channels * filters;
  Matrix out(x.rows(), oh * ow * filters);
  for (Index n = 0; n < x.rows(); ++n) {
    for (Index oy = 0; oy < oh; ++oy) {
      for (Index ox = 0; ox < ow; ++ox) {
        for (Index f = 0; f < filters; ++f) {
          double sum = b[f];
          for (Index ky = 0; ky < kernel; ++ky) {
            for (Index kx = 0; kx < kernel; ++kx) {
              const Index iy = oy - pad + ky, ix = ox - pad + kx;
              if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
              for (Index c = 0; c < channels; ++c) {
                sum += x(n, (iy * width + ix) * channels + c) * k[((ky * kernel + kx) * channels + c) * filters + f];
              }
            }
          }
          out(n, (oy * ow + ox) * filters + f) = sum;
        }
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("conv2d: shapes, tensors and padding", "[conv]") {
  const Conv2D valid(28, 28, 1, 6, 5, Padding::valid);
  CHECK(valid.out_height() == 24);
  CHECK(valid.output_size() == 24 * 24 * 6);
  const Conv2D same(14, 10, 6, 16, 5, Padding::same);
  CHECK(same.out_height() == 14);
  CHECK(same.out_width() == 10);
  CHECK(same.input_size() == 14 * 10 * 6);
  CHECK(same.parameter_count() == 5 * 5 * 6 * 16 + 16);
  const auto t = same.tensors();
  REQUIRE(t.size() == 2);
  CHECK(t[0].name == "kernel");
  CHECK(t[0].shape == std::vector<Index>{5, 5, 6, 16});
  CHECK(t[1].name == "bias");
  CHECK(t[1].shape == std::vector<Index>{16});
  CHECK_THROWS_WITH(Conv2D(4, 8, 1, 2, 5, Padding::valid), Catch::Contains("does not fit"));
  CHECK_THROWS_WITH(Conv2D(4, 8, 0, 2), Catch::Contains("positive"));
}

TEST_CASE("conv2d: forward equals a direct convolution loop, in chunks", "[conv]") {
  const auto padding = GENERATE(Padding::valid, Padding::same);
  const auto channels = GENERATE(Index{1}, Index{3});
  const auto kernel = GENERATE(Index{3}, Index{4}, Index{5});
  // 4 filters: GEMM written channel-major, then transposed; 8: written HWC directly.
  const auto filters = GENERATE(Index{4}, Index{8});
  const auto algorithm = GENERATE(ConvAlgorithm::im2col, ConvAlgorithm::direct);
  INFO("padding " << (padding == Padding::same ? "same" : "valid") << ", channels " << channels << ", kernel " << kernel
                  << ", filters " << filters << ", " << to_string(algorithm) << ", seed 17");
  Rng rng(17);
  const Index height = 6, width = 7, rows = 5;
  Conv2D conv(height, width, channels, filters, kernel, padding, algorithm);
  REQUIRE(conv.algorithm() == algorithm);
  conv.set_column_bytes(bytes_for_images(conv, 2));  // im2col: chunks of 2, 2, 1 images
  REQUIRE(conv.chunk_images() == 2);                 // (direct works image by image)
  Bound bound = bind_random(conv, rows, rng);
  const Vector& params = bound.params;
  const Matrix x = random_matrix(rows, conv.input_size(), rng);
  Matrix y(rows, conv.output_size());
  conv.forward(view(x), batch(y));
  const Matrix expected = naive_conv(x, params, height, width, channels, filters, kernel, padding);
  CHECK((y - expected).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("conv2d: parameter and input gradients match finite differences", "[conv]") {
  const auto padding = GENERATE(Padding::valid, Padding::same);
  const auto channels = GENERATE(Index{1}, Index{3});
  const auto filters = GENERATE(Index{3}, Index{8});
  const auto algorithm = GENERATE(ConvAlgorithm::im2col, ConvAlgorithm::direct);
  INFO("padding " << (padding == Padding::same ? "same" : "valid") << ", channels " << channels << ", filters "
                  << filters << ", " << to_string(algorithm) << ", seed 23");
  Rng rng(23);
  Conv2D conv(6, 7, channels, filters, 5, padding, algorithm);
  conv.set_column_bytes(bytes_for_images(conv, 2));  // batch of 3: chunks of 2 and 1
  REQUIRE(conv.chunk_images() == 2);
  const auto error = layer_gradient_error(conv, 3, rng);
  CHECK(error.parameters < 1e-7);
  CHECK(error.inputs < 1e-7);
}

TEST_CASE("conv2d direct: rows of several register blocks, filter groups, kernel sizes", "[conv]") {
  // Width 37: 5 packets of 8 per row (AVX-512), two register blocks; 13 filters: groups of
  // 6, 6 and 1 in the forward correlation, of 2-4 (by kernel size) in the kernel gradient;
  // kernels 1 to 7.
  const auto kernel = GENERATE(Index{1}, Index{2}, Index{3}, Index{4}, Index{5}, Index{6}, Index{7});
  const auto padding = GENERATE(Padding::valid, Padding::same);
  INFO("kernel " << kernel << ", padding " << (padding == Padding::same ? "same" : "valid") << ", seed 29");
  Rng rng(29);
  const Index height = 8, width = 37, channels = 2, filters = 13;
  Conv2D conv(height, width, channels, filters, kernel, padding, ConvAlgorithm::direct);
  Bound bound = bind_random(conv, 2, rng);
  const Vector& params = bound.params;
  const Matrix x = random_matrix(2, conv.input_size(), rng);
  Matrix y(2, conv.output_size());
  conv.forward(view(x), batch(y));
  const Matrix expected = naive_conv(x, params, height, width, channels, filters, kernel, padding);
  CHECK((y - expected).cwiseAbs().maxCoeff() < 1e-12);
  // The layer is linear in its parameters and in its input, so central differences are exact
  // for any step; a large one keeps the round-off of these larger sums below the bound.
  Conv2D small(7, 19, 3, 7, kernel, padding, ConvAlgorithm::direct);
  const auto error = layer_gradient_error(small, 2, rng, 1e-2);
  CHECK(error.parameters < 1e-7);
  CHECK(error.inputs < 1e-7);
}

TEST_CASE("conv2d direct: growing the batch between passes keeps the input gradient", "[conv]") {
  // Buffers grow on demand; growing must not lose what begin_backward() prepared (the flipped
  // kernel of the input gradient once did).
  Rng rng(31);
  const Matrix x = random_matrix(2, 8 * 8, rng);
  const Matrix r = random_matrix(2, 8 * 8 * 3, rng);
  Vector params(3 * 3 * 3 + 3);
  for (Index i = 0; i < params.size(); ++i) params(i) = rng.normal();
  const auto input_gradient = [&](bool reserve_first) {
    Conv2D conv(8, 8, 1, 3, 3, Padding::same, ConvAlgorithm::direct);
    Vector grads = Vector::Zero(params.size());
    conv.bind(params.data(), grads.data());
    if (reserve_first) conv.reserve(2);
    Matrix y1(1, conv.output_size());
    conv.forward(ConstBatchView(x.data(), 1, x.cols()), batch(y1));  // one row first
    Matrix g = r, grad_in(2, conv.input_size());
    BatchView grad_in_view = batch(grad_in);
    Matrix y(2, conv.output_size());
    conv.backward(view(x), view(y), batch(g), &grad_in_view);  // then two
    return grad_in;
  };
  const Matrix grown = input_gradient(false);
  const Matrix reserved = input_gradient(true);
  CHECK(reserved.cwiseAbs().maxCoeff() > 0.1);
  CHECK((grown - reserved).cwiseAbs().maxCoeff() == 0.0);
}

TEST_CASE("conv2d: the direct algorithm refuses kernels it has no kernels for", "[conv]") {
  CHECK_THROWS_WITH(Conv2D(20, 20, 1, 4, 9, Padding::same, ConvAlgorithm::direct),
                    Catch::Contains("direct algorithm takes kernels up to 7x7"));
  CHECK(Conv2D(20, 20, 1, 4, 9, Padding::same).algorithm() == ConvAlgorithm::im2col);
}

TEST_CASE("conv2d: changing the chunk after reserve keeps the result", "[conv]") {
  Rng rng(5);
  Conv2D conv(9, 8, 2, 3, 5, Padding::same);
  Bound bound = bind_random(conv, 7, rng);  // kept alive: the layer points into it
  const Matrix x = random_matrix(7, conv.input_size(), rng);
  Matrix whole(7, conv.output_size()), chunked(7, conv.output_size());
  conv.forward(view(x), batch(whole));
  conv.set_column_bytes(1);
  CHECK(conv.chunk_images() == 1);
  conv.forward(view(x), batch(chunked));
  CHECK((whole - chunked).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("conv2d: Glorot initialisation with Keras's convolution fans", "[conv]") {
  Rng rng(9);
  const Conv2D conv(10, 10, 6, 16, 5, Padding::valid);
  Vector params = Vector::Constant(conv.parameter_count(), 7.0);
  conv.initialize(params.data(), Init::glorot_uniform, rng);
  const Index weights = 5 * 5 * 6 * 16;
  const double limit = std::sqrt(6.0 / (5.0 * 5.0 * 6.0 + 5.0 * 5.0 * 16.0));
  CHECK(params.head(weights).cwiseAbs().maxCoeff() <= limit);
  CHECK(params.head(weights).cwiseAbs().maxCoeff() > 0.95 * limit);
  CHECK(params.tail(16).isZero(0.0));
  // The count overload is the fan_in·fan_out one for dense kernels (same draws).
  Rng a(3), b(3);
  std::vector<double> wa(12 * 7), wb(12 * 7);
  fill_weights(wa.data(), 12, 7, Init::modified_glorot_normal, a);
  fill_weights(wb.data(), 12 * 7, 12, 7, Init::modified_glorot_normal, b);
  CHECK(wa == wb);
}

TEST_CASE("pool2d: forward, floors odd sizes, gradients match finite differences", "[conv]") {
  const auto pool = GENERATE(PoolKind::average, PoolKind::max);
  const auto size = GENERATE(Index{2}, Index{3});
  INFO("pool " << to_string(pool) << ", size " << size << ", seed 31 (random inputs: no ties)");
  Rng rng(31);
  Pool2D layer(7, 8, 3, pool, size);
  CHECK(layer.out_height() == 7 / size);
  CHECK(layer.out_width() == 8 / size);
  CHECK(layer.parameter_count() == 0);
  layer.reserve(2);
  const Matrix x = random_matrix(2, layer.input_size(), rng);
  Matrix y(2, layer.output_size());
  layer.forward(view(x), batch(y));
  double worst = 0.0;
  for (Index n = 0; n < 2; ++n) {
    for (Index oy = 0; oy < layer.out_height(); ++oy) {
      for (Index ox = 0; ox < layer.out_width(); ++ox) {
        for (Index c = 0; c < 3; ++c) {
          double sum = 0.0, best = -1e300;
          for (Index ky = 0; ky < size; ++ky) {
            for (Index kx = 0; kx < size; ++kx) {
              const double v = x(n, ((oy * size + ky) * 8 + ox * size + kx) * 3 + c);
              sum += v;
              best = std::max(best, v);
            }
          }
          const double expected = pool == PoolKind::max ? best : sum / static_cast<double>(size * size);
          worst = std::max(worst, std::abs(y(n, (oy * layer.out_width() + ox) * 3 + c) - expected));
        }
      }
    }
  }
  CHECK(worst < 1e-14);
  const auto error = layer_gradient_error(layer, 3, rng);
  CHECK(error.inputs < 1e-8);
}

TEST_CASE("pool2d: max pooling sends a tie's gradient to the first maximum", "[conv]") {
  Pool2D layer(2, 2, 1, PoolKind::max, 2);
  layer.reserve(1);
  Matrix x(1, 4);
  x << 1.0, 3.0, 3.0, 2.0;
  Matrix y(1, 1), g(1, 1), gi(1, 4);
  layer.forward(view(x), batch(y));
  CHECK(y(0, 0) == 3.0);
  g(0, 0) = 5.0;
  BatchView gi_view = batch(gi);
  layer.backward(view(x), view(y), batch(g), &gi_view);
  CHECK(gi(0, 0) == 0.0);
  CHECK(gi(0, 1) == 5.0);
  CHECK(gi(0, 2) == 0.0);
  CHECK(gi(0, 3) == 0.0);
  CHECK(parse_pool_kind("max") == PoolKind::max);
  CHECK(parse_pool_kind("average") == PoolKind::average);
  CHECK_THROWS_WITH(parse_pool_kind("median"), Catch::Contains("'median'"));
}

TEST_CASE("flatten: identity with the gradient passed through", "[conv]") {
  Rng rng(2);
  Flatten layer(12);
  CHECK(layer.kind() == "flatten");
  const auto error = layer_gradient_error(layer, 3, rng);
  CHECK(error.inputs < 1e-9);
}

TEST_CASE("conv block: equals conv2d, activation and pool2d as three layers", "[conv]") {
  const auto activation =
      GENERATE(Activation::relu, Activation::tanh, Activation::elu, Activation::sigmoid, Activation::linear);
  const auto pooling = GENERATE(PoolKind::max, PoolKind::average);
  const auto algorithm = GENERATE(ConvAlgorithm::im2col, ConvAlgorithm::direct);
  // 3×3 same: 9×11 maps; 4×4 valid: 6×8 maps. Pools of 2 and 3 (floors 9 and 11).
  const auto kernel = GENERATE(Index{3}, Index{4});
  const auto pool_size = GENERATE(Index{2}, Index{3});
  const Padding padding = kernel == 3 ? Padding::same : Padding::valid;
  INFO(to_string(activation) << ", " << to_string(pooling) << ", " << to_string(algorithm) << ", kernel " << kernel
                             << ", pool " << pool_size << ", seed 37");
  Rng rng(37);
  const Index height = 9, width = 11, channels = 2, filters = 5, rows = 5;
  ConvBlock block(height, width, channels, filters, kernel, padding, activation, pooling, pool_size, algorithm);
  block.set_chunk_images(2);  // chunks of 2, 2, 1
  Conv2D conv(height, width, channels, filters, kernel, padding, algorithm);
  ActivationLayer act(activation, conv.output_size());
  Pool2D pool(conv.out_height(), conv.out_width(), filters, pooling, pool_size);
  REQUIRE(block.output_size() == pool.output_size());
  CHECK(block.kind() == "conv2d_" + to_string(activation) + "_" + to_string(pooling) + "_pool2d");
  REQUIRE(block.parameter_count() == conv.parameter_count());

  Vector params(conv.parameter_count());
  for (Index i = 0; i < params.size(); ++i) params(i) = 0.5 * rng.normal();
  Vector block_grads = Vector::Zero(params.size()), grads = Vector::Zero(params.size());
  block.bind(params.data(), block_grads.data());
  conv.bind(params.data(), grads.data());
  const Matrix x = random_matrix(rows, conv.input_size(), rng);
  const Matrix r = random_matrix(rows, block.output_size(), rng);

  Matrix out(rows, block.output_size());
  block.forward(view(x), batch(out));
  Matrix z(rows, conv.output_size()), a(rows, conv.output_size());
  Matrix expected(rows, pool.output_size());
  conv.forward(view(x), batch(z));
  act.forward(view(z), batch(a));
  pool.forward(view(a), batch(expected));
  CHECK((out - expected).cwiseAbs().maxCoeff() < 1e-13);

  Matrix g = r, grad_in(rows, conv.input_size());
  BatchView grad_in_view = batch(grad_in);
  block.backward(view(x), view(out), batch(g), &grad_in_view);
  Matrix g3 = r, da(rows, conv.output_size()), dz(rows, conv.output_size()), expected_in(rows, conv.input_size());
  BatchView da_view = batch(da), dz_view = batch(dz), in_view = batch(expected_in);
  pool.backward(view(a), view(expected), batch(g3), &da_view);
  act.backward(view(z), view(a), batch(da), &dz_view);
  conv.backward(view(x), view(z), batch(dz), &in_view);
  CHECK((block_grads - grads).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((grad_in - expected_in).cwiseAbs().maxCoeff() < 1e-12);

  // And against finite differences (multi-chunk, with the input gradient).
  const auto error = layer_gradient_error(block, rows, rng);
  CHECK(error.parameters < 1e-6);
  CHECK(error.inputs < 1e-6);
}

TEST_CASE("lenet5: shapes and parameter count of the classic 28x28 net", "[conv]") {
  Network net = build_lenet5(28, 28, 1, 10, Activation::tanh, PoolKind::average);
  CHECK(net.input_size() == 784);
  CHECK(net.output_size() == 10);
  CHECK(net.parameter_count() == 61706);
  const auto layout = net.layout();
  REQUIRE(layout.size() == 10);
  CHECK(layout[0].name == "layer0_conv2d_tanh_average_pool2d/kernel");
  CHECK(layout[0].shape == std::vector<Index>{5, 5, 1, 6});
  CHECK(layout[2].name == "layer1_conv2d_tanh_average_pool2d/kernel");
  CHECK(layout[4].name == "layer3_dense/kernel");
  CHECK(layout[4].shape == std::vector<Index>{400, 120});
  const auto& layers = net.layers();
  CHECK(layers[0]->output_size() == 14 * 14 * 6);
  CHECK(layers[1]->output_size() == 5 * 5 * 16);
  CHECK(layers[2]->kind() == "flatten");
  // The first convolution (6 filters on 28-wide rows) runs direct, the second im2col.
  CHECK(dynamic_cast<const ConvBlock&>(*layers[0]).conv().algorithm() == ConvAlgorithm::direct);
  CHECK(dynamic_cast<const ConvBlock&>(*layers[1]).conv().algorithm() == ConvAlgorithm::im2col);
  CHECK(layers.back()->kind() == "dense");  // logits

  ArchitectureSpec spec;
  spec.layers = "lenet5";
  spec.activation = Activation::relu;
  spec.input_shape = {28, 28, 1};
  spec.outputs = 10;
  spec.pooling = PoolKind::max;
  Network built = build_network(spec);
  CHECK(built.parameter_count() == 61706);
  CHECK(built.layers()[0]->kind() == "conv2d_relu_max_pool2d");
  spec.output = Activation::sigmoid;
  CHECK(build_network(spec).layers().back()->kind() == "sigmoid");
  spec.input_shape = {28, 28};
  CHECK_THROWS_WITH(build_network(spec), Catch::Contains("input shape"));
  CHECK_THROWS_WITH(build_lenet5(8, 28, 1, 10, Activation::tanh, PoolKind::max), Catch::Contains("12x12"));
  CHECK(is_image_architecture("lenet5"));
  CHECK_FALSE(is_image_architecture("2-3"));
}

TEST_CASE("lenet5-like nets: gradient through the network with CCE", "[conv]") {
  const auto pooling = GENERATE(PoolKind::average, PoolKind::max);
  INFO("pooling " << to_string(pooling) << ", seed 41");
  Rng rng(41);
  Network net = build_lenet5(12, 12, 1, 3, Activation::tanh, pooling);
  for (const auto& layer : net.layers()) {
    if (auto* block = dynamic_cast<ConvBlock*>(layer.get())) {
      block->set_chunk_images(3);  // batch of 4: chunks of 3 and 1
    }
  }
  net.initialize(Init::glorot_uniform, rng);
  for (Index i = 0; i < net.parameter_count(); ++i) net.parameters()(i) += 0.05 * rng.normal();
  const Matrix x = random_matrix(4, 144, rng);
  Matrix y = Matrix::Zero(4, 3);
  for (Index i = 0; i < 4; ++i) y(i, static_cast<Index>(rng.below(3))) = 1.0;
  train::NetworkObjective f(net, LossKind::cce, x, y);
  CHECK(max_gradient_error(f, net.parameters()) < 1e-6);
}

TEST_CASE("two-conv net on 3-channel images: input gradients chain through", "[conv]") {
  // 8×8×3 → conv 4 3×3 same → elu → average pool → 4×4×4 → conv 5 3×3 valid → tanh → max pool
  // → flatten 5 → dense 2: every conv input gradient feeds the first conv's kernel gradient.
  Rng rng(43);
  std::vector<LayerPtr> layers;
  layers.push_back(std::make_unique<Conv2D>(8, 8, 3, 4, 3, Padding::same));
  layers.push_back(std::make_unique<ActivationLayer>(Activation::elu, 8 * 8 * 4));
  layers.push_back(std::make_unique<Pool2D>(8, 8, 4, PoolKind::average, 2));
  auto conv2 = std::make_unique<Conv2D>(4, 4, 4, 5, 3, Padding::valid);
  conv2->set_column_bytes(bytes_for_images(*conv2, 2));
  layers.push_back(std::move(conv2));
  layers.push_back(std::make_unique<ActivationLayer>(Activation::tanh, 2 * 2 * 5));
  layers.push_back(std::make_unique<Pool2D>(2, 2, 5, PoolKind::max, 2));
  layers.push_back(std::make_unique<Flatten>(5));
  layers.push_back(std::make_unique<Dense>(5, 2));
  Network net(std::move(layers));
  net.initialize(Init::glorot_normal, rng);
  for (Index i = 0; i < net.parameter_count(); ++i) net.parameters()(i) += 0.1 * rng.normal();
  const Matrix x = random_matrix(3, 8 * 8 * 3, rng);
  const Matrix y = random_matrix(3, 2, rng);
  train::NetworkObjective f(net, LossKind::mse, x, y);
  CHECK(max_gradient_error(f, net.parameters()) < 1e-6);
}

TEST_CASE("gemm with a workspace is bit-identical to Eigen's product", "[conv]") {
  // Shapes through each of Eigen's paths: coefficient-based (tiny), GEMV (one row or column)
  // and blocked GEMM (dense layers, the convolution's three products), with transposed operands.
  const auto shape =
      GENERATE(std::vector<Index>{3, 4, 5}, std::vector<Index>{1, 50, 30}, std::vector<Index>{50, 1, 30},
               std::vector<Index>{64, 120, 400}, std::vector<Index>{400, 120, 64}, std::vector<Index>{784, 6, 26},
               std::vector<Index>{26, 6, 784}, std::vector<Index>{300, 150, 16});
  const Index m = shape[0], n = shape[1], k = shape[2];
  INFO("m " << m << ", n " << n << ", k " << k << ", seed 51");
  Rng rng(51);
  const Matrix a = random_matrix(m, k, rng);
  const Matrix at = a.transpose();  // row-major k × m: Aᵀ stored, A seen column-major
  const Matrix b = random_matrix(k, n, rng);
  const Matrix start = random_matrix(m, n, rng);
  GemmWorkspace<double> workspace;
  workspace.reserve(m, n, k);

  Matrix expected = start;
  BatchView e = batch(expected);
  e.noalias() = view(a) * view(b);
  Matrix c = start;
  gemm(m, n, k, {a.data(), k, true}, {b.data(), n, true}, {c.data(), n, true}, false, workspace);
  CHECK(c == expected);

  e.noalias() += view(at).transpose() * view(b);
  gemm(m, n, k, {at.data(), m, false}, {b.data(), n, true}, {c.data(), n, true}, true, workspace);
  CHECK(c == expected);

  // Strided destination: the first n columns of an m × (n + 1) matrix (the coefficient-based
  // path may round differently there than into a contiguous one).
  Matrix wide = Matrix::Zero(m, n + 1);
  gemm(m, n, k, {a.data(), k, true}, {b.data(), n, true}, {wide.data(), n + 1, true}, false, workspace);
  Matrix plain = Matrix::Zero(m, n);
  batch(plain).noalias() = view(a) * view(b);
  CHECK((wide.leftCols(n) - plain).cwiseAbs().maxCoeff() < 1e-12);
  CHECK(wide.col(n).isZero(0.0));
}
