// Regression's predictive mixture (issue 26): quantiles and CDF against a scipy transcription,
// moments, the noise rule, and predictive coverage on a case with known truth.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "simmer/core/rng.hpp"
#include "simmer/ensemble/candidate.hpp"
#include "simmer/ensemble/predictive.hpp"

using namespace simmer;
using namespace simmer::ensemble;

namespace {

Mixture mixture(std::vector<double> mean, std::vector<double> variance, std::vector<double> weight) {
  Mixture m;
  m.mean = std::move(mean);
  m.variance = std::move(variance);
  m.weight = std::move(weight);
  return m;
}

}  // namespace

// The reference values come from scipy (Debian 12's 1.10):
//   w = w / w.sum(); sd = np.sqrt(var + noise)
//   F = lambda y: (w * stats.norm.cdf((y - means) / sd)).sum()
//   optimize.brentq(lambda y: F(y) - level, -100, 100, xtol=1e-14, rtol=1e-15)
TEST_CASE("mixture quantiles equal scipy's: two members with known noise", "[predictive]") {
  const Mixture two = mixture({0.0, 3.0}, {0.0, 0.0}, {1.0, 1.0});
  const std::vector<std::pair<double, double>> expected{{0.025, -1.6448701244045316},  {0.05, -1.281604431258999},
                                                        {0.25, -0.003346706356400563}, {0.5, 1.4999999999999998},
                                                        {0.9, 3.8418393471052985},     {0.975, 4.644870124404534}};
  for (const auto& [level, q] : expected) {
    CHECK(mixture_quantile(two, 1.0, level) == Approx(q).margin(1e-10));
    CHECK(mixture_cdf(two, 1.0, mixture_quantile(two, 1.0, level)) == Approx(level).margin(1e-12));
  }
}

TEST_CASE("mixture quantiles and CDF equal scipy's: weighted components with their own variances", "[predictive]") {
  // means 1, -2, 4; variances 0.5, 0, 2; weights 3, 1, 2; noise 0.25
  const Mixture m = mixture({1.0, -2.0, 4.0}, {0.5, 0.0, 2.0}, {3.0, 1.0, 2.0});
  const std::vector<std::pair<double, double>> quantiles{{0.025, -2.5184025514778865}, {0.05, -2.2625991104371166},
                                                         {0.25, 0.15024918502270576},  {0.5, 1.3154532332845457},
                                                         {0.9, 4.786640524688159},     {0.975, 6.159297226770125}};
  for (const auto& [level, q] : quantiles) CHECK(mixture_quantile(m, 0.25, level) == Approx(q).margin(1e-10));
  const std::vector<std::pair<double, double>> cdf{
      {-3.0, 0.0037931637710512745}, {0.0, 0.22999145139637195}, {1.5, 0.5416710686780316}, {5.0, 0.9158348559135832}};
  for (const auto& [y, F] : cdf) CHECK(mixture_cdf(m, 0.25, y) == Approx(F).epsilon(1e-13));
}

TEST_CASE("mixture edge cases: the levels 0 and 1, no weight, point masses, far tails", "[predictive]") {
  const Mixture two = mixture({0.0, 3.0}, {0.0, 0.0}, {1.0, 1.0});
  CHECK(mixture_quantile(two, 1.0, 0.0) == -std::numeric_limits<double>::infinity());
  CHECK(mixture_quantile(two, 1.0, 1.0) == std::numeric_limits<double>::infinity());
  CHECK(std::isnan(mixture_quantile(two, 1.0, 1.5)));
  CHECK(std::isnan(mixture_quantile(mixture({1.0}, {0.0}, {0.0}), 1.0, 0.5)));
  CHECK(std::isnan(mixture_cdf(mixture({}, {}, {}), 1.0, 0.0)));
  // No noise and no spread: point masses, the CDF a staircase and the quantile its steps.
  CHECK(mixture_cdf(two, 0.0, -1.0) == 0.0);
  CHECK(mixture_cdf(two, 0.0, 0.0) == 0.25);
  CHECK(mixture_cdf(two, 0.0, 1.0) == 0.5);
  CHECK(mixture_quantile(two, 0.0, 0.3) == Approx(0.0).margin(1e-9));  // the smallest y with F(y) >= 0.3
  CHECK(mixture_quantile(two, 0.0, 0.7) == Approx(3.0).margin(1e-9));
  // Levels deep in a tail still bracket and converge.
  const double tail = mixture_quantile(two, 1.0, 1e-30);
  CHECK(mixture_cdf(two, 1.0, tail) == Approx(1e-30).epsilon(1e-6));
}

TEST_CASE("mixture moments: the members' spread and the total with noise", "[predictive]") {
  const Mixture m = mixture({1.0, -2.0, 4.0}, {0.5, 0.0, 2.0}, {3.0, 1.0, 2.0});
  const MixtureMoments mo = mixture_moments(m, 0.25);
  const double mean = (3.0 * 1.0 - 2.0 + 2.0 * 4.0) / 6.0;
  const double model = (3.0 * (0.5 + (1.0 - mean) * (1.0 - mean)) + (-2.0 - mean) * (-2.0 - mean) +
                        2.0 * (2.0 + (4.0 - mean) * (4.0 - mean))) /
                       6.0;
  CHECK(mo.mean == Approx(mean));
  CHECK(mo.model == Approx(model));
  CHECK(mo.total == Approx(model + 0.25));
}

TEST_CASE("mixture_at reads an accumulator per trajectory: weight = members, variance = M2/n", "[predictive]") {
  MeanAccumulator a(1, 1), b(1, 1), none(1, 1);
  for (const double v : {1.0, 2.0, 3.0}) {
    Matrix x(1, 1);
    x << v;
    a.add(view(x));
  }
  Matrix x(1, 1);
  x << 10.0;
  b.add(view(x));
  Mixture m;
  mixture_at({a, b, none}, 0, 0, m);
  CHECK(m.weight == std::vector<double>{3.0, 1.0, 0.0});
  CHECK(m.mean[0] == Approx(2.0));
  CHECK(m.variance[0] == Approx(2.0 / 3.0));
  CHECK(m.variance[1] == 0.0);
}

TEST_CASE("the noise rule: validation residuals where there are any, else training", "[predictive]") {
  Candidate c;
  c.members = 1;
  Matrix train_y(2, 1), test_y(1, 1), val_y(2, 1), pred_train(2, 1), pred_test(1, 1), pred_val(2, 1);
  train_y << 0.0, 0.0;
  pred_train << 1.0, -1.0;  // MSE 1
  test_y << 0.0;
  pred_test << 0.0;
  val_y << 0.0, 0.0;
  pred_val << 2.0, 0.0;  // MSE 2
  for (const Matrix* p : {&pred_train, &pred_test, &pred_val}) {
    MeanAccumulator acc(p->rows(), 1);
    acc.add(view(*p));
    c.means.push_back(acc);
  }
  const std::vector<ScoredSet> two{{&train_y, nullptr}, {&test_y, nullptr}};
  const std::vector<ScoredSet> three{{&train_y, nullptr}, {&test_y, nullptr}, {&val_y, nullptr}};
  const NoiseEstimate trained = estimate_noise(c, two);
  CHECK(trained.source == NoiseSource::training);
  CHECK(trained.variance(0, 0) == Approx(1.0));
  const NoiseEstimate held_out = estimate_noise(c, three);
  CHECK(held_out.source == NoiseSource::validation);
  CHECK(held_out.variance(0, 0) == Approx(2.0));
}

// Known truth: y = 2x + 1 + N(0, 0.5²). A model that knows the mean function up to a small
// posterior spread, with σ² estimated from 2000 validation rows (σ̂ within about 2 %), must cover
// 90 % of 4000 test rows to within 0.03; the members alone (no noise) cover almost nothing.
TEST_CASE("predictive coverage of a linear model with Gaussian noise is nominal", "[predictive]") {
  std::mt19937_64 gen(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const double sigma = 0.5;
  const auto draw = [&](Index rows, Matrix& x, Matrix& y) {
    x.resize(rows, 1);
    y.resize(rows, 1);
    for (Index i = 0; i < rows; ++i) {
      x(i, 0) = uniform(gen);
      y(i, 0) = 2.0 * x(i, 0) + 1.0 + sigma * normal(gen);
    }
  };
  Matrix x_val, y_val, x_test, y_test;
  draw(2000, x_val, y_val);
  draw(4000, x_test, y_test);
  // Eight trajectories, each 50 members with slopes and intercepts scattered by 0.02 about a
  // trajectory-specific offset of 0.03.
  Candidate c;
  c.members = 8 * 50;
  std::vector<MeanAccumulator> val_parts, test_parts;
  MeanAccumulator val_pool(2000, 1), test_pool(4000, 1);
  CoverageCounter members_only(4000, 1);
  for (int t = 0; t < 8; ++t) {
    const double da = 0.03 * normal(gen), db = 0.03 * normal(gen);
    MeanAccumulator& vp = val_parts.emplace_back(2000, 1);
    MeanAccumulator& tp = test_parts.emplace_back(4000, 1);
    for (int m = 0; m < 50; ++m) {
      const double a = 2.0 + da + 0.02 * normal(gen), b = 1.0 + db + 0.02 * normal(gen);
      const Matrix pv = (a * x_val.array() + b).matrix();
      const Matrix pt = (a * x_test.array() + b).matrix();
      vp.add(view(pv));
      tp.add(view(pt));
      val_pool.add(view(pv));
      test_pool.add(view(pt));
      members_only.add(view(pt), view(y_test));
    }
  }
  c.means = {val_pool, test_pool, val_pool};  // train stands in as validation: only set 2 is read
  const std::vector<ScoredSet> scored{{&y_val, nullptr}, {&y_test, nullptr}, {&y_val, nullptr}};
  const NoiseEstimate noise = estimate_noise(c, scored);
  CHECK(std::sqrt(noise.variance(0, 0)) == Approx(sigma).epsilon(0.05));
  const auto coverage = predictive_coverage(test_parts, noise, view(y_test));
  CHECK(coverage[1] == Approx(0.90).margin(0.03));
  CHECK(coverage[0] == Approx(0.50).margin(0.04));
  CHECK(coverage[2] == Approx(0.95).margin(0.02));
  CHECK(members_only.coverage(0.9) < 0.3);
}
