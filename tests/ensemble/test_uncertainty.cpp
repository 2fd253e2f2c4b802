// Uncertainty scores (NLL, Brier, ECE, Gaussian NLL, member-interval coverage) on hand-checked
// values.
#include <catch2/catch.hpp>

#include <cmath>

#include "simmer/core/rng.hpp"
#include "simmer/ensemble/uncertainty.hpp"

using namespace simmer;
using namespace simmer::ensemble;

TEST_CASE("softmax probabilities, and the two columns of a single logit", "[uncertainty]") {
  Matrix logits(2, 3);
  logits << 0, 0, 0, 1000, 0, -1000;  // huge logits must not overflow
  Matrix p;
  class_probabilities(view(logits), p);
  CHECK(p(0, 0) == Approx(1.0 / 3));
  CHECK(p(1, 0) == Approx(1.0));
  CHECK(p.row(1).sum() == Approx(1.0));
  Matrix one(2, 1);
  one << 0.0, -800.0;
  class_probabilities(view(one), p);
  REQUIRE(p.cols() == 2);
  CHECK(p(0, 1) == Approx(0.5));
  CHECK(p(1, 0) == Approx(1.0));
  CHECK(p(1, 1) >= 0.0);
}

TEST_CASE("classification scores: NLL, Brier, ECE and the worst row", "[uncertainty]") {
  Matrix p(4, 2);
  p << 0.9, 0.1,  // y = 0, right, confident
      0.6, 0.4,   // y = 1, wrong
      0.2, 0.8,   // y = 1, right
      1.0, 0.0;   // y = 1, wrong with probability 0 for the truth
  const std::vector<std::int64_t> y{0, 1, 1, 1};
  const SetScores s = score_probabilities(view(p), y);
  CHECK(s.metric == Approx(0.5));
  const double nll = (-std::log(0.9) - std::log(0.4) - std::log(0.8) - std::log(2.2250738585072014e-308)) / 4;
  CHECK(s.nll == Approx(nll));
  const double brier = (2 * 0.01 + 2 * 0.36 + 2 * 0.04 + 2 * 1.0) / 4;
  CHECK(s.brier == Approx(brier));
  CHECK(s.worst_row == 3);
  CHECK(s.worst_share == Approx(2.0 / (4 * brier)));
  // bins [0.9, 1]: 0.9 (right) and 1.0 (wrong); [0.6, 0.7): 0.6 (wrong); [0.8, 0.9): 0.8
  // (right): (|1 - 1.9| + |0 - 0.6| + |1 - 0.8|) / 4 rows.
  CHECK(s.ece == Approx((0.9 + 0.6 + 0.2) / 4));
  CHECK(std::isnan(s.r2));
}

TEST_CASE("Gaussian NLL of a regression prediction", "[uncertainty]") {
  Matrix mean(2, 1), var(2, 1), y(2, 1);
  mean << 0.0, 1.0;
  var << 1.0, 4.0;
  y << 1.0, 1.0;
  const SetScores s = score_gaussian(view(mean), view(var), view(y));
  const double l2p = std::log(2 * M_PI);
  CHECK(s.nll == Approx((0.5 * (l2p + 0 + 1) + 0.5 * (l2p + std::log(4.0) + 0)) / 2));
  CHECK(s.metric == Approx(0.5));
  CHECK(s.worst_row == 0);
  CHECK(s.worst_share == Approx(1.0));
}

TEST_CASE("coverage of the members' central intervals, whose counts merge exactly", "[uncertainty]") {
  // Members drawn from N(0, 1) and truths from the same distribution: the central q interval
  // covers about a fraction q of them.
  Rng rng(123);
  const Index rows = 2000;
  Matrix truth(rows, 1);
  for (Index i = 0; i < rows; ++i) truth(i, 0) = rng.normal();
  CoverageCounter a(rows, 1), b(rows, 1), all(rows, 1);
  Matrix member(rows, 1);
  for (int m = 0; m < 200; ++m) {
    for (Index i = 0; i < rows; ++i) member(i, 0) = rng.normal();
    (m % 2 == 0 ? a : b).add(view(member), view(truth));
    all.add(view(member), view(truth));
  }
  a.merge(b);
  CHECK(a.members() == 200);
  for (const double q : {0.5, 0.9, 0.95}) {
    INFO("seed 123, 2000 points x 200 members, level " << q);
    CHECK(a.coverage(q) == all.coverage(q));  // integer counts: merge order does not matter
    CHECK(a.coverage(q) == Approx(q).margin(0.03));
  }
  // Members all far above the truth: nothing is covered.
  CoverageCounter off(1, 1);
  Matrix one(1, 1), t(1, 1);
  t << 0.0;
  one << 5.0;
  for (int m = 0; m < 10; ++m) off.add(view(one), view(t));
  CHECK(off.coverage(0.95) == 0.0);
  CHECK(std::isnan(CoverageCounter(1, 1).coverage(0.5)));
}
