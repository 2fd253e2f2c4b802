/// \file
/// Split, subset, one-hot, min–max scaling and the noisy-sine data: the steps every run
/// applies to its data before training (docs/METHOD.md §6, §7).

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/core/rng.hpp"
#include "simmer/data/dataset.hpp"
#include "simmer/data/scaler.hpp"
#include "simmer/data/sine.hpp"

using Catch::Contains;
using simmer::Index;
using simmer::Matrix;
using simmer::Rng;
using namespace simmer::data;

TEST_CASE("split_by_count: sizes, disjoint, in range, seeded", "[data][split]") {
  constexpr std::uint64_t seed = 20240611;
  INFO("seed " << seed);
  Rng rng(seed);
  const Split s = split_by_count(150, 112, 30, rng);
  REQUIRE(s.train.size() == 112);
  REQUIRE(s.test.size() == 30);

  std::set<std::int64_t> seen;
  for (const auto i : s.train) seen.insert(i);
  for (const auto i : s.test) seen.insert(i);
  CHECK(seen.size() == 142);  // no index twice, within or across the parts
  CHECK(*seen.begin() >= 0);
  CHECK(*seen.rbegin() < 150);

  SECTION("the same seed gives the same split") {
    Rng again(seed);
    const Split t = split_by_count(150, 112, 30, again);
    CHECK(t.train == s.train);
    CHECK(t.test == s.test);
  }
  SECTION("a different seed gives a different split") {
    Rng other(seed + 1);
    const Split t = split_by_count(150, 112, 30, other);
    CHECK(t.train != s.train);
  }
  SECTION("train is the head of the permutation, test the next rows") {
    Rng again(seed);
    const auto order = simmer::permutation(150, again);
    CHECK(std::equal(s.train.begin(), s.train.end(), order.begin()));
    CHECK(std::equal(s.test.begin(), s.test.end(), order.begin() + 112));
  }
}

TEST_CASE("split_by_count: all rows used, and counts that do not fit", "[data][split]") {
  Rng rng(7);
  const Split all = split_by_count(10, 6, 4, rng);
  std::vector<std::int64_t> joined = all.train;
  joined.insert(joined.end(), all.test.begin(), all.test.end());
  std::sort(joined.begin(), joined.end());
  CHECK(joined == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

  REQUIRE_THROWS_AS(split_by_count(150, 120, 40, rng), simmer::Error);
  REQUIRE_THROWS_WITH(split_by_count(150, 120, 40, rng),
                      Contains("120 train") && Contains("40 test") && Contains("150 rows"));
  REQUIRE_THROWS_WITH(split_by_count(150, -1, 40, rng), Contains("-1 train"));
}

TEST_CASE("split_by_fraction: rounded training count, both parts non-empty", "[data][split]") {
  Rng rng(11);
  const Split s = split_by_fraction(392, 0.8, rng);
  CHECK(s.train.size() == 314);  // round(313.6)
  CHECK(s.test.size() == 78);

  const Split half = split_by_fraction(10, 0.5, rng);
  CHECK(half.train.size() == 5);
  CHECK(half.test.size() == 5);

  REQUIRE_THROWS_WITH(split_by_fraction(10, 0.0, rng), Contains("(0, 1)"));
  REQUIRE_THROWS_WITH(split_by_fraction(10, 1.0, rng), Contains("(0, 1)"));
  REQUIRE_THROWS_WITH(split_by_fraction(10, std::nan(""), rng), Contains("(0, 1)"));
  REQUIRE_THROWS_WITH(split_by_fraction(10, 0.01, rng), Contains("0 train") && Contains("10 test"));
  REQUIRE_THROWS_WITH(split_by_fraction(10, 0.99, rng), Contains("10 train") && Contains("0 test"));
}

TEST_CASE("subset keeps rows in the given order with names and classes", "[data][subset]") {
  Dataset d;
  d.task = Task::classification;
  d.x.resize(4, 2);
  d.x << 0, 1, 10, 11, 20, 21, 30, 31;
  d.labels = {0, 1, 2, 1};
  d.y = one_hot(d.labels, 3);
  d.feature_names = {"a", "b"};
  d.target_names = {"c"};
  d.class_names = {"p", "q", "r"};

  const Dataset s = subset(d, {3, 0, 3});
  REQUIRE(s.rows() == 3);
  CHECK(s.x(0, 0) == 30.0);
  CHECK(s.x(1, 1) == 1.0);
  CHECK(s.x(2, 1) == 31.0);
  CHECK(s.labels == std::vector<std::int64_t>{1, 0, 1});
  CHECK(s.y(0, 1) == 1.0);
  CHECK(s.y(1, 0) == 1.0);
  CHECK(s.feature_names == d.feature_names);
  CHECK(s.target_names == d.target_names);
  CHECK(s.class_names == d.class_names);
  CHECK(s.task == Task::classification);

  CHECK(subset(d, {}).rows() == 0);
  REQUIRE_THROWS_WITH(subset(d, {0, 4}), Contains("4"));
  REQUIRE_THROWS_AS(subset(d, {-1}), simmer::Error);
}

TEST_CASE("one_hot", "[data]") {
  const Matrix m = one_hot({2, 0, 1}, 3);
  Matrix expected(3, 3);
  expected << 0, 0, 1, 1, 0, 0, 0, 1, 0;
  CHECK(m == expected);
  REQUIRE_THROWS_WITH(one_hot({0, 3}, 3), Contains("label 3"));
  REQUIRE_THROWS_AS(one_hot({-1}, 3), simmer::Error);
}

TEST_CASE("MinMaxScaler maps fitted columns onto -1..1 and back", "[data][scaler]") {
  constexpr std::uint64_t seed = 99;
  INFO("seed " << seed);
  Rng rng(seed);
  Matrix m(50, 3);
  for (Index r = 0; r < m.rows(); ++r) {
    m(r, 0) = rng.uniform(-3.0, 7.0);
    m(r, 1) = rng.uniform(1500.0, 5200.0);  // auto-mpg weights
    m(r, 2) = 4.25;                         // constant column
  }
  const auto scaler = MinMaxScaler::fit(m);
  REQUIRE(scaler.columns() == 3);
  CHECK(scaler.min()[1] == m.col(1).minCoeff());
  CHECK(scaler.max()[1] == m.col(1).maxCoeff());

  const Matrix s = scaler.transform(m);
  for (Index c = 0; c < 2; ++c) {
    INFO("column " << c);
    CHECK(s.col(c).minCoeff() == -1.0);  // exactly, not approximately
    CHECK(s.col(c).maxCoeff() == 1.0);
  }
  CHECK(s.col(2).isZero(0.0));

  const Matrix back = scaler.inverse(s);
  for (Index r = 0; r < m.rows(); ++r) {
    for (Index c = 0; c < m.cols(); ++c) {
      INFO("row " << r << " column " << c);
      CHECK(std::abs(back(r, c) - m(r, c)) <= 1e-12 * std::max(1.0, std::abs(m(r, c))));
    }
  }
  CHECK(back.col(2).cwiseEqual(4.25).all());  // the constant comes back exactly

  SECTION("scale and offset are the inverse map, column by column") {
    const auto scale = scaler.scale();
    const auto offset = scaler.offset();
    CHECK(scale[2] == 0.0);
    CHECK(offset[2] == 4.25);
    for (Index c = 0; c < 3; ++c) {
      CHECK(back(0, c) == scale[c] * s(0, c) + offset[c]);
    }
  }
  SECTION("stored bounds give the same map as fitting") {
    const MinMaxScaler stored(scaler.min(), scaler.max());
    CHECK(stored.transform(m) == s);
  }
  SECTION("values outside the fitted range extrapolate linearly") {
    Matrix outside(1, 3);
    outside << scaler.max()[0] + (scaler.max()[0] - scaler.min()[0]), 0.0, 9.0;
    const Matrix t = scaler.transform(outside);
    CHECK(t(0, 0) == Approx(3.0));
    CHECK(t(0, 2) == 0.0);
  }
  SECTION("mismatched shapes and bad bounds are errors") {
    REQUIRE_THROWS_WITH(scaler.transform(Matrix::Zero(2, 2)), Contains("3 columns") && Contains("has 2"));
    REQUIRE_THROWS_AS(scaler.inverse(Matrix::Zero(2, 4)), simmer::Error);
    REQUIRE_THROWS_AS(MinMaxScaler::fit(Matrix(0, 3)), simmer::Error);
    Eigen::RowVectorXd lo(2);
    Eigen::RowVectorXd hi(2);
    lo << 0.0, 1.0;
    hi << 1.0, 0.0;
    REQUIRE_THROWS_AS(MinMaxScaler(lo, hi), simmer::Error);
  }
}

TEST_CASE("MinMaxScaler::finite_bounds: columns whose range or midpoint overflow a double", "[data][scaler]") {
  Matrix m(3, 4);
  m << 1.0, -1.7e308, 1.0e308, 1.7e308,  //
      2.0, 1.7e308, 1.5e308, 1.7e308,    //
      3.0, 0.0, 1.2e308, 1.7e308;
  const auto scaler = MinMaxScaler::fit(m);
  CHECK(scaler.finite_bounds(0));
  CHECK_FALSE(scaler.finite_bounds(1));  // max - min overflows
  CHECK_FALSE(scaler.finite_bounds(2));  // max + min overflows (the offset)
  CHECK(scaler.finite_bounds(3));        // constant: scale 0, offset the value
  // What the check prevents: the overflowing columns scale to NaN or inf.
  const Matrix s = scaler.transform(m);
  CHECK(s.col(0).allFinite());
  CHECK_FALSE(s.col(1).allFinite());
  CHECK_FALSE(std::isfinite(scaler.offset()[2]));
}

TEST_CASE("split_stratified: every class keeps its share in both parts", "[data][split]") {
  // 3 classes of 100, 40 and 6 rows, interleaved.
  std::vector<std::int64_t> labels;
  for (int i = 0; i < 100; ++i) labels.push_back(0);
  for (int i = 0; i < 40; ++i) labels.push_back(1);
  for (int i = 0; i < 6; ++i) labels.push_back(2);
  Rng shuffle(5);
  const auto order = simmer::permutation(static_cast<std::int64_t>(labels.size()), shuffle);
  std::vector<std::int64_t> mixed;
  for (const auto i : order) mixed.push_back(labels[static_cast<std::size_t>(i)]);

  constexpr std::uint64_t seed = 11;
  INFO("seed " << seed);
  const auto count = [&](const std::vector<std::int64_t>& rows, std::int64_t k) {
    return std::count_if(rows.begin(), rows.end(),
                         [&](std::int64_t i) { return mixed[static_cast<std::size_t>(i)] == k; });
  };
  SECTION("proportional counts, disjoint parts, classes mixed in each part") {
    Rng rng(seed);
    const Split s = split_stratified(mixed, 73, 73, rng);
    REQUIRE(s.train.size() == 73);
    REQUIRE(s.test.size() == 73);
    std::set<std::int64_t> seen(s.train.begin(), s.train.end());
    seen.insert(s.test.begin(), s.test.end());
    CHECK(seen.size() == 146);
    // Half of every class in each part.
    CHECK(count(s.train, 0) == 50);
    CHECK(count(s.train, 1) == 20);
    CHECK(count(s.train, 2) == 3);
    CHECK(count(s.test, 2) == 3);
    // The order follows the permutation, not the classes.
    CHECK_FALSE(std::is_sorted(s.train.begin(), s.train.end(), [&](std::int64_t a, std::int64_t b) {
      return mixed[static_cast<std::size_t>(a)] < mixed[static_cast<std::size_t>(b)];
    }));
  }
  SECTION("the same seed gives the same split; another seed another") {
    Rng a(seed), b(seed), c(seed + 1);
    const Split sa = split_stratified(mixed, 100, 30, a);
    const Split sb = split_stratified(mixed, 100, 30, b);
    const Split sc = split_stratified(mixed, 100, 30, c);
    CHECK(sa.train == sb.train);
    CHECK(sa.test == sb.test);
    CHECK(sa.train != sc.train);
  }
  SECTION("a rare class gets a row in each part where a random split may give it none") {
    // 10 training rows of 146: the share of class 2 rounds to 0, but it still gets one.
    Rng rng(seed);
    const Split s = split_stratified(mixed, 10, 5, rng);
    REQUIRE(s.train.size() == 10);
    REQUIRE(s.test.size() == 5);
    for (std::int64_t k = 0; k < 3; ++k) {
      INFO("class " << k);
      CHECK(count(s.train, k) >= 1);
      CHECK(count(s.test, k) >= 1);
    }
  }
  SECTION("all rows used; a class of one row goes to training") {
    std::vector<std::int64_t> few = {0, 0, 0, 1, 1, 2};
    Rng rng(seed);
    const Split s = split_stratified(few, 4, 2, rng);
    REQUIRE(s.train.size() == 4);
    REQUIRE(s.test.size() == 2);
    std::vector<int> train_count(3, 0);
    for (const auto i : s.train) ++train_count[static_cast<std::size_t>(few[static_cast<std::size_t>(i)])];
    CHECK(train_count[2] == 1);
    CHECK(train_count[0] >= 1);
    CHECK(train_count[1] >= 1);
  }
  SECTION("counts that do not fit are refused as in split_by_count") {
    Rng rng(seed);
    REQUIRE_THROWS_WITH(split_stratified(mixed, 140, 10, rng), Contains("140 train + 10 test rows > 146"));
    REQUIRE_THROWS_AS(split_stratified(mixed, -1, 10, rng), simmer::Error);
  }
}

TEST_CASE("make_noisy_sine: the §7 grid and targets", "[data][sine]") {
  constexpr std::uint64_t seed = 12345;
  INFO("seed " << seed);
  Rng rng(seed);
  const Dataset d = make_noisy_sine(SineSpec{}, rng);

  REQUIRE(d.rows() == 101);
  REQUIRE(d.features() == 1);
  REQUIRE(d.outputs() == 1);
  CHECK(d.task == Task::regression);
  CHECK(d.feature_names == std::vector<std::string>{"x"});
  CHECK(d.target_names == std::vector<std::string>{"y"});
  CHECK(d.x(0, 0) == -1.0);
  CHECK(d.x(100, 0) == 1.0);
  CHECK(d.x(50, 0) == Approx(0.0).margin(1e-15));
  for (Index i = 1; i < d.rows(); ++i) {
    CHECK(d.x(i, 0) - d.x(i - 1, 0) == Approx(0.02).epsilon(1e-12));
  }

  SECTION("same seed, same data") {
    Rng again(seed);
    const Dataset e = make_noisy_sine(SineSpec{}, again);
    CHECK(e.x == d.x);
    CHECK(e.y == d.y);
  }
  SECTION("no noise: exactly the ground truth") {
    SineSpec spec;
    spec.noise = 0.0;
    const Dataset clean = make_noisy_sine(spec, rng);
    for (Index i = 0; i < clean.rows(); ++i) {
      CHECK(clean.y(i, 0) == sine_truth(clean.x(i, 0)));
    }
    CHECK(sine_truth(0.25) == Approx(1.0));
  }
  SECTION("invalid specs") {
    SineSpec one_point;
    one_point.points = 1;
    REQUIRE_THROWS_WITH(make_noisy_sine(one_point, rng), Contains("points = 1"));
    SineSpec reversed;
    reversed.x_min = 1.0;
    reversed.x_max = -1.0;
    REQUIRE_THROWS_AS(make_noisy_sine(reversed, rng), simmer::Error);
    SineSpec negative_noise;
    negative_noise.noise = -0.1;
    REQUIRE_THROWS_AS(make_noisy_sine(negative_noise, rng), simmer::Error);
  }
}

TEST_CASE("make_noisy_sine: the noise has standard deviation sigma", "[data][sine]") {
  constexpr std::uint64_t seed = 777;
  INFO("seed " << seed);
  Rng rng(seed);
  SineSpec spec;
  spec.points = 200001;
  spec.noise = 0.1;
  const Dataset d = make_noisy_sine(spec, rng);

  double sum = 0.0;
  double sum_sq = 0.0;
  for (Index i = 0; i < d.rows(); ++i) {
    const double residual = d.y(i, 0) - sine_truth(d.x(i, 0));
    sum += residual;
    sum_sq += residual * residual;
  }
  const auto n = static_cast<double>(d.rows());
  const double mean = sum / n;
  const double std_dev = std::sqrt(sum_sq / n - mean * mean);
  INFO("mean " << mean << ", standard deviation " << std_dev);
  // Standard errors: 0.1/sqrt(n) ~ 2.2e-4 for the mean, 0.1/sqrt(2n) ~ 1.6e-4 for the std.
  CHECK(std::abs(mean) < 1.5e-3);
  CHECK(std::abs(std_dev - 0.1) < 1.5e-3);
}
