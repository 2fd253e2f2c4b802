#include <catch2/catch.hpp>

#include "simmer/core/error.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/model/initializer.hpp"

using namespace simmer;
using namespace simmer::model;

TEST_CASE("architecture string builds the layer stack and the flat layout", "[network]") {
  Network net = build_network({"2-100-50-50-3", Activation::tanh, Activation::linear});
  CHECK(net.input_size() == 2);
  CHECK(net.output_size() == 3);
  CHECK(net.parameter_count() == 2 * 100 + 100 + 100 * 50 + 50 + 50 * 50 + 50 + 50 * 3 + 3);
  const auto layout = net.layout();
  REQUIRE(layout.size() == 8);
  CHECK(layout[0].name == "layer0_dense/kernel");
  CHECK(layout[0].offset == 0);
  CHECK(layout[0].shape == std::vector<Index>{2, 100});
  CHECK(layout[1].name == "layer0_dense/bias");
  CHECK(layout[1].offset == 200);
  CHECK(layout[2].name == "layer2_dense/kernel");
  CHECK(layout[2].offset == 300);
  CHECK(layout[7].offset == net.parameter_count() - 3);
}

TEST_CASE("flattening convention: W as fan_in x fan_out row-major, then b, and y = x W + b", "[network]") {
  Network net = build_network({"2-3", Activation::tanh, Activation::linear});
  // W = [[1,2,3],[4,5,6]], b = [0.5, -1, 2]
  net.parameters() << 1, 2, 3, 4, 5, 6, 0.5, -1, 2;
  Matrix x(1, 2);
  x << 1.0, 10.0;
  const auto y = net.forward(view(x));
  CHECK(y(0, 0) == Approx(1 + 40 + 0.5));
  CHECK(y(0, 1) == Approx(2 + 50 - 1));
  CHECK(y(0, 2) == Approx(3 + 60 + 2));
}

TEST_CASE("bad architecture strings name the text", "[network]") {
  CHECK_THROWS_WITH(parse_widths("2-x-3"), Catch::Contains("'2-x-3'") && Catch::Contains("'x'"));
  CHECK_THROWS_WITH(parse_widths("4"), Catch::Contains("at least"));
  CHECK_THROWS_WITH(parse_widths("3-0-1"), Catch::Contains("'0'"));
  CHECK_THROWS_AS(parse_activation("swish"), Error);
  CHECK_THROWS_AS(parse_init("he_normal"), Error);
}

TEST_CASE("initialisers have the documented statistics", "[init]") {
  const Index fan_in = 200;
  const Index fan_out = 300;
  const Index n = fan_in * fan_out;
  std::vector<double> w(static_cast<std::size_t>(n));
  const double sigma = glorot_stddev(fan_in, fan_out);
  const auto stats = [&](Init scheme) {
    Rng rng(99);
    fill_weights(w.data(), fan_in, fan_out, scheme, rng);
    const Eigen::Map<const Eigen::ArrayXd> a(w.data(), n);
    const double mean = a.mean();
    const double sd = std::sqrt((a - mean).square().mean());
    return std::tuple{mean, sd, a.abs().maxCoeff()};
  };
  INFO("seed 99");
  {
    const auto [mean, sd, amax] = stats(Init::glorot_normal);
    CHECK(std::abs(mean) < 0.01 * sigma);
    CHECK(sd == Approx(sigma).epsilon(0.01));
    CHECK(amax <= 2.0 * sigma / 0.87962566103423978 + 1e-15);  // truncated at 2 s
  }
  {
    const auto [mean, sd, amax] = stats(Init::glorot_uniform);
    const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
    CHECK(std::abs(mean) < 0.01 * sigma);
    CHECK(sd == Approx(limit / std::sqrt(3.0)).epsilon(0.01));
    CHECK(amax <= limit);
  }
  {
    const auto [mean, sd, amax] = stats(Init::modified_glorot_normal);
    CHECK(std::abs(mean) < 0.01 * sigma);
    CHECK(sd == Approx(sigma).epsilon(0.01));
    (void)amax;
    // The segment structure (docs/METHOD.md §6), which plain Glorot normal does not have: weight i
    // belongs to segment i mod fan_in of [-2 sigma, 2 sigma] and is drawn around that segment's
    // midpoint (contracted so the layer's sd is Glorot's) with sd sigma / fan_in.
    const double segments = static_cast<double>(fan_in);
    const double seg_width = 4.0 * sigma / segments, width = sigma / segments;
    const double contraction =
        std::sqrt((sigma * sigma - width * width) / (seg_width * seg_width * (segments * segments - 1.0) / 12.0));
    double previous = -1e300;
    for (Index j = 0; j < fan_in; ++j) {
      double sum = 0.0, sum2 = 0.0;
      for (Index k = 0; k < fan_out; ++k) sum += w[static_cast<std::size_t>(k * fan_in + j)];
      const double group_mean = sum / static_cast<double>(fan_out);
      for (Index k = 0; k < fan_out; ++k) {
        const double d = w[static_cast<std::size_t>(k * fan_in + j)] - group_mean;
        sum2 += d * d;
      }
      const double group_sd = std::sqrt(sum2 / static_cast<double>(fan_out - 1));
      const double midpoint = contraction * (-2.0 * sigma + (static_cast<double>(j) + 0.5) * seg_width);
      INFO("segment " << j);
      CHECK(std::abs(group_mean - midpoint) < 5.0 * width / std::sqrt(static_cast<double>(fan_out)));
      CHECK(group_sd == Approx(width).epsilon(0.25));
      CHECK(group_mean > previous);  // the segments' centres rise with j
      previous = group_mean;
    }
  }
}

TEST_CASE("initialisation is seeded and biases are zero", "[init]") {
  Network a = build_network({"3-8-2", Activation::relu, Activation::linear});
  Network b = build_network({"3-8-2", Activation::relu, Activation::linear});
  Rng ra(7), rb(7);
  a.initialize(Init::glorot_normal, ra);
  b.initialize(Init::glorot_normal, rb);
  CHECK(a.parameters() == b.parameters());
  CHECK(a.parameters().segment(24, 8).isZero());
  CHECK(a.parameters().tail(2).isZero());
}

TEST_CASE("move-assigning a new parameter vector re-points the layers", "[network]") {
  // Eigen's move assignment swaps buffers; the layers' views must follow (a checkpoint restore
  // once computed with the freed old buffer).
  Network net = build_network({"2-3-1", Activation::tanh, Activation::linear});
  Rng rng(5);
  net.initialize(Init::glorot_normal, rng);
  Matrix x(4, 2);
  x << 0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8;
  const Matrix before = net.forward(view(x));
  const Vector copy = net.parameters();
  net.parameters() = Vector::Zero(copy.size());  // move-assign a temporary
  CHECK(net.forward(view(x)).isZero());
  net.parameters() = Vector(copy);
  CHECK(Matrix(net.forward(view(x))) == before);
}
