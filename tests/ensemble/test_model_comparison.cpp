// WAIC and PSIS-LOO against a hand computation: tests/analysis/loo_reference.py, numpy transcribed
// from ArviZ's arviz/stats/stats.py, prints these numbers for the same synthetic case.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "simmer/ensemble/model_comparison.hpp"

using namespace simmer;

namespace {

/// 300 draws of a Gaussian mean scored on six observations (loo_reference.py's synthetic()).
Matrix synthetic() {
  const std::vector<double> y{-2.0, -0.5, 0.0, 0.4, 1.5, 4.0};
  Matrix ll(300, 6);
  for (Index s = 0; s < 300; ++s) {
    const auto t = static_cast<double>(s);
    const double mu = 0.4 * std::sin(0.7 * t) + 0.2 * std::cos(0.13 * t) + 2.0 * std::pow(std::sin(0.05 * t), 16);
    for (Index i = 0; i < 6; ++i) {
      const double r = y[static_cast<std::size_t>(i)] - mu;
      ll(s, i) = -0.5 * std::log(2.0 * M_PI) - 0.5 * r * r;
    }
  }
  return ll;
}

}  // namespace

TEST_CASE("WAIC equals the hand computation on a synthetic case", "[comparison]") {
  const ensemble::Elpd w = ensemble::waic(synthetic());
  CHECK(w.elpd == Approx(-24.50921755509396).epsilon(1e-10));
  CHECK(w.se == Approx(8.43133432836041).epsilon(1e-10));
  CHECK(w.p == Approx(11.210843233197506).epsilon(1e-10));
  CHECK(w.variance_warning);  // p_waic 11 on six observations
}

TEST_CASE("PSIS-LOO equals the hand computation on a synthetic case, k-hat per observation", "[comparison]") {
  const ensemble::Elpd l = ensemble::psis_loo(synthetic());
  CHECK(l.elpd == Approx(-23.31141164062665).epsilon(1e-10));
  CHECK(l.se == Approx(7.517651399246256).epsilon(1e-10));
  CHECK(l.p == Approx(10.01303731873019).epsilon(1e-10));
  const std::vector<double> pointwise{-6.964399960481639,  -2.334059381629543,  -1.5614561181038615,
                                      -1.2737787455982357, -1.9417118663679789, -9.236005568445389};
  const std::vector<double> k{1.0691984900207014, 0.5331684875429242,   0.3867463789220424,
                              0.4714513509693193, -0.28381371947284667, -0.05648598305997338};
  REQUIRE(l.pointwise.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    INFO("observation " << i);
    CHECK(l.pointwise[i] == Approx(pointwise[i]).epsilon(1e-10));
    CHECK(l.pareto_k[i] == Approx(k[i]).margin(1e-10));
  }
  // ArviZ's threshold for 300 draws: min(1 - 1/log10(300), 0.7) = 0.596; one observation above it.
  CHECK(l.good_k == Approx(1.0 - 1.0 / std::log10(300.0)));
  CHECK(l.k_above == 1);
}

TEST_CASE("PSIS: equal ratios are left alone, a short tail gives k = inf", "[comparison]") {
  // Equal log ratios: every weight 1/S, no tail to fit (ArviZ: k = inf).
  const auto [flat, k_flat] = ensemble::psis_log_weights(std::vector<double>(100, 1.0));
  for (const double w : flat) CHECK(w == Approx(-std::log(100.0)));
  CHECK(std::isinf(k_flat));
  // 12 draws: a tail of ceil(min(2.4, 10.4)) = 3 draws, too few for the fit.
  std::vector<double> r(12);
  for (std::size_t s = 0; s < r.size(); ++s) r[s] = 0.1 * static_cast<double>(s);
  const auto [w, k] = ensemble::psis_log_weights(r);
  CHECK(std::isinf(k));
  double total = 0.0;
  for (const double v : w) total += std::exp(v);
  CHECK(total == Approx(1.0));
}

TEST_CASE("the standard error of an elpd difference is over the paired pointwise differences", "[comparison]") {
  const std::vector<double> a{1.0, 2.0, 3.0, 4.0}, b{0.5, 2.5, 2.0, 4.0};
  // d = 0.5, -0.5, 1, 0: mean 0.25, sum of squares 0.0625 + 0.5625 + 0.5625 + 0.0625 = 1.25.
  CHECK(ensemble::difference_se(a, b) == Approx(std::sqrt(1.25)));
  CHECK(ensemble::difference_se(a, a) == 0.0);
}
