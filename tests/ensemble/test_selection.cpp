// Candidate ensembles (the deep ensemble, a stage's members) and the choice among them on the
// validation set (issue 17): scores against hand-computed values, per-row losses whose means
// are the scores, the selection rules, and stacking (one mixture of the candidates whose weights
// maximise the validation likelihood).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/core/rng.hpp"
#include "simmer/ensemble/candidate.hpp"
#include "simmer/ensemble/selection.hpp"

using namespace simmer;
using namespace simmer::ensemble;

namespace {

double mean(const std::vector<double>& v) {
  double s = 0.0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST_CASE("the deep ensemble of two classifiers: votes, mean softmax and scores by hand", "[selection][deep]") {
  // Three rows, three classes; truth 0, 1, 2.
  const std::vector<std::int64_t> labels{0, 1, 2};
  Matrix a(3, 3), b(3, 3);
  a << 2, 0, 0,  //
      0, 1, 0,   //
      1, 0, 0;   // votes 0 (wrong)
  b << 0, 0, 3,  // votes 2 (wrong)
      0, 2, 0,   //
      0, 0, 1;
  std::vector<ScoredSet> scored{{nullptr, &labels}};
  DeepEnsembleBuilder deep(true, 3, 3, {3}, scored);
  deep.add(0, view(a));
  deep.done();
  deep.add(0, view(b));
  deep.done();
  const Candidate& c = deep.candidate();
  CHECK(c.name == "deep_ensemble");
  CHECK(c.members == 2);
  CHECK(c.votes[0].votes()(0, 0) == 1);
  CHECK(c.votes[0].votes()(0, 2) == 1);
  // Row 0 ties between classes 0 and 2: the lowest class wins (docs/METHOD.md §5).
  CHECK(c.votes[0].majority() == std::vector<std::int64_t>{0, 1, 0});
  // The mean of the two softmaxes, by hand.
  const auto softmax = [](double x0, double x1, double x2) {
    const double z = std::exp(x0) + std::exp(x1) + std::exp(x2);
    return std::vector<double>{std::exp(x0) / z, std::exp(x1) / z, std::exp(x2) / z};
  };
  const auto pa = softmax(1, 0, 0), pb = softmax(0, 0, 1);  // row 2
  for (int k = 0; k < 3; ++k) CHECK(c.probability[0](2, k) == Approx(0.5 * (pa[k] + pb[k])));
  const CandidateScores s = score(c, scored);
  CHECK(s.sets[0].metric == Approx(2.0 / 3.0));  // the vote's accuracy: rows 0 and 1
  double nll = 0.0;
  for (int i = 0; i < 3; ++i) nll -= std::log(c.probability[0](i, labels[static_cast<std::size_t>(i)]));
  CHECK(s.sets[0].nll == Approx(nll / 3.0));
  // Per-row losses average to the scores.
  const RowLosses rows = row_losses(c, scored, 0);
  CHECK(mean(rows.nll) == Approx(s.sets[0].nll));
  CHECK(mean(rows.metric) == Approx(1.0 - s.sets[0].metric));
  CHECK(rows.metric == std::vector<double>{0.0, 0.0, 1.0});
}

TEST_CASE("a regression candidate's per-row losses average to its Gaussian NLL and MSE", "[selection]") {
  Matrix train_y(4, 1), valid_y(3, 1);
  train_y << 0.0, 1.0, 2.0, 3.0;
  valid_y << 0.5, 1.5, 4.0;
  std::vector<ScoredSet> scored{{&train_y, nullptr}, {&valid_y, nullptr}};
  DeepEnsembleBuilder deep(false, 0, 1, {4, 3}, scored);
  Matrix n1(4, 1), n2(4, 1), v1(3, 1), v2(3, 1);
  n1 << 0.1, 1.2, 1.9, 2.7;
  n2 << -0.1, 0.9, 2.2, 3.1;
  v1 << 0.4, 1.0, 3.0;
  v2 << 0.8, 1.6, 3.5;
  deep.add(0, view(n1));
  deep.add(1, view(v1));
  deep.done();
  deep.add(0, view(n2));
  deep.add(1, view(v2));
  deep.done();
  const Candidate& c = deep.candidate();
  const CandidateScores s = score(c, scored);
  const RowLosses rows = row_losses(c, scored, 1);
  CHECK(mean(rows.nll) == Approx(s.sets[1].nll));
  CHECK(mean(rows.metric) == Approx(s.sets[1].metric));  // MSE of the mean
  // The mean of the validation row 2: (3.0 + 3.5) / 2; its squared error by hand.
  CHECK(rows.metric[2] == Approx((4.0 - 3.25) * (4.0 - 3.25)));
  // Two networks: coverage of their central 50 % interval, counted per value.
  CHECK(c.coverage[1].members() == 2);
}

TEST_CASE("select: the lowest loss, or the first within one standard error of the paired differences", "[selection]") {
  // Candidate 0 (the deep ensemble, say) is slightly worse than 2 on the same rows; 1 is much worse.
  const std::vector<double> best{0.10, 0.20, 0.30, 0.40, 0.50, 0.60};
  std::vector<double> close(best), far(best);
  for (std::size_t i = 0; i < best.size(); ++i) {
    close[i] += i % 2 == 0 ? 0.02 : -0.01;  // mean +0.005, paired sd ~0.016
    far[i] += 0.3;
  }
  const Selection plain = select({close, far, best}, SelectRule::best);
  CHECK(plain.best == 2);
  CHECK(plain.selected == 2);
  CHECK(plain.loss[1] == Approx(0.65));
  CHECK(plain.stderr_difference[2] == 0.0);
  CHECK(plain.stderr_difference[1] == Approx(0.0).margin(1e-12));  // a constant shift has no spread
  const Selection one_se = select({close, far, best}, SelectRule::one_se);
  CHECK(one_se.best == 2);
  CHECK(one_se.one_se == 0);  // 0.005 above the best, within its paired standard error
  CHECK(one_se.selected == 0);
  // A constant +0.3 is never within one standard error (which is 0 for it).
  const Selection two = select({far, best}, SelectRule::one_se);
  CHECK(two.selected == 1);
}

TEST_CASE("select: a candidate without members (NaN losses) is never chosen", "[selection]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> none{nan, nan, nan}, some{1.0, 2.0, 3.0};
  CHECK(select({none, some}, SelectRule::best).selected == 1);
  CHECK(select({none, some}, SelectRule::one_se).selected == 1);
  CHECK(std::isnan(select({none, some}, SelectRule::best).loss[0]));
  CHECK_THROWS_AS(select({}, SelectRule::best), Error);
  CHECK_THROWS_AS(select({some, {1.0}}, SelectRule::best), Error);  // different rows
}

TEST_CASE("select_by and select_rule names round-trip and unknown names are refused", "[selection]") {
  for (const auto by : {SelectBy::nll, SelectBy::metric, SelectBy::none}) CHECK(parse_select_by(to_string(by)) == by);
  for (const auto rule : {SelectRule::best, SelectRule::one_se}) CHECK(parse_select_rule(to_string(rule)) == rule);
  CHECK_THROWS_WITH(parse_select_by("accuracy"), Catch::Contains("ensemble.select_by"));
  CHECK_THROWS_WITH(parse_select_rule("two_se"), Catch::Contains("ensemble.select_rule"));
}

namespace {

constexpr double kLogSqrt2Pi = 0.91893853320467274;  // log sqrt(2π)

/// log N(y; mu, sd²) of every row.
std::vector<double> gaussian_log_density(const std::vector<double>& y, double mu, double sd) {
  std::vector<double> out;
  for (const double v : y) out.push_back(-kLogSqrt2Pi - std::log(sd) - 0.5 * (v - mu) * (v - mu) / (sd * sd));
  return out;
}

double mean_log_likelihood(const std::vector<std::vector<double>>& log_density, const std::vector<double>& w) {
  return mean(mixture_log_density(log_density, w));
}

}  // namespace

TEST_CASE("stack: EM recovers the weights of the mixture the rows were drawn from", "[selection][stacking]") {
  // 20 000 rows from 0.3 N(0, 1) + 0.7 N(4, 1); the candidates are the two components. The
  // maximum-likelihood weight is the drawn share ± its sampling error sqrt(0.21 / n) = 0.003.
  Rng rng(7);
  std::vector<double> y;
  double drawn = 0.0;
  for (int i = 0; i < 20000; ++i) {
    const bool first = rng.uniform() < 0.3;
    drawn += first ? 1.0 : 0.0;
    y.push_back((first ? 0.0 : 4.0) + rng.normal());
  }
  drawn /= static_cast<double>(y.size());
  const std::vector<std::vector<double>> log_density{gaussian_log_density(y, 0.0, 1.0),
                                                     gaussian_log_density(y, 4.0, 1.0)};
  const Stacking s = stack(log_density);
  REQUIRE(s.weights.size() == 2);
  CHECK(s.weights[0] == Approx(drawn).margin(0.01));
  CHECK(s.weights[0] == Approx(0.3).margin(0.02));
  CHECK(s.weights[0] + s.weights[1] == Approx(1.0).margin(1e-12));
  CHECK(s.sweeps > 1);
  CHECK(s.sweeps < 1000);  // converged, not stopped
  CHECK(s.gap <= 1e-10);
  // The maximum: no other weight gives the rows a higher likelihood.
  const double at_max = mean_log_likelihood(log_density, s.weights);
  for (const double w : {0.0, 0.1, 0.25, 0.5, 0.9, 1.0})
    CHECK(mean_log_likelihood(log_density, {w, 1.0 - w}) <= at_max);
  CHECK(mean_log_likelihood(log_density, {s.weights[0] + 0.01, s.weights[1] - 0.01}) < at_max);
  CHECK(mean_log_likelihood(log_density, {s.weights[0] - 0.01, s.weights[1] + 0.01}) < at_max);
}

TEST_CASE("stack: the rows' own law takes the weight, and a candidate without a finite density takes none",
          "[selection][stacking]") {
  Rng rng(11);
  std::vector<double> y;
  for (int i = 0; i < 5000; ++i) y.push_back(rng.normal());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> none(y.size(), nan);
  const std::vector<std::vector<double>> log_density{gaussian_log_density(y, 0.0, 3.0), none,
                                                     gaussian_log_density(y, 0.0, 1.0)};
  const Stacking s = stack(log_density);
  CHECK(s.weights[1] == 0.0);
  CHECK(s.weights[2] > 0.9);
  CHECK(s.weights[0] + s.weights[2] == Approx(1.0).margin(1e-12));
  // The mixture is never worse on these rows than the best single candidate.
  CHECK(mean_log_likelihood(log_density, s.weights) >= mean_log_likelihood(log_density, {0.0, 0.0, 1.0}) - 1e-12);
  // No candidate with a finite density: no weights; no candidates, or different rows: refused.
  const Stacking empty = stack({none, none});
  CHECK(std::isnan(empty.weights[0]));
  CHECK(std::isnan(empty.weights[1]));
  CHECK_THROWS_AS(stack({}), Error);
  CHECK_THROWS_AS(stack({y, {1.0}}), Error);
}

TEST_CASE(
    "stacked_candidate: each candidate's share of the members is its weight, and a weight of 1 is that "
    "candidate",
    "[selection][stacking]") {
  Matrix train_y(3, 1), test_y(2, 1);
  train_y << 0.0, 1.0, 2.0;
  test_y << 0.5, 1.5;
  std::vector<ScoredSet> scored{{&train_y, nullptr}, {&test_y, nullptr}};
  // Candidate a: 2 networks, b: 3 networks (so equal weights are not equal member counts).
  const auto networks = [&](const std::vector<double>& shifts) {
    DeepEnsembleBuilder b(false, 0, 1, {3, 2}, scored);
    for (const double shift : shifts) {
      Matrix v(3, 1), t(2, 1);
      v << 0.1 + shift, 1.2 + shift, 1.7 + shift;
      t << 0.4 + shift, 1.9 + shift;
      b.add(0, view(v));
      b.add(1, view(t));
      b.done();
    }
    return b.candidate();
  };
  const std::vector<Candidate> candidates{networks({0.0, 0.2}), networks({0.5, 0.6, 1.0})};
  const Candidate half = stacked_candidate(candidates, {0.3, 0.7}, scored, "stacked");
  CHECK(half.name == "stacked");
  CHECK(half.members == 5);
  CHECK(std::isnan(half.temperature));
  // Weighted mean, and spread Σ w_c (v_c + (m_c − m)²) with each candidate's own variance v_c, of
  // test row 0: a's predictions 0.4, 0.6 (v 0.02); b's 0.9, 1.0, 1.4 (v 0.07).
  const double mean_a = 0.5, mean_b = 1.1;
  const double mean = 0.3 * mean_a + 0.7 * mean_b;
  const double spread =
      0.3 * (0.02 + (mean_a - mean) * (mean_a - mean)) + 0.7 * (0.07 + (mean_b - mean) * (mean_b - mean));
  CHECK(half.means[1].mean()(0, 0) == Approx(mean).epsilon(1e-9));
  CHECK(half.means[1].variance()(0, 0) == Approx(spread).epsilon(1e-8));
  // Its own σ²: the mean squared residual of its mean on the training rows (no validation set).
  double residual = 0.0;
  for (Index i = 0; i < 3; ++i) {
    const double m = 0.3 * candidates[0].means[0].mean()(i, 0) + 0.7 * candidates[1].means[0].mean()(i, 0);
    residual += (train_y(i, 0) - m) * (train_y(i, 0) - m) / 3.0;
  }
  CHECK(half.noise.variance(0, 0) == Approx(residual).epsilon(1e-8));
  // The mixture's components: trajectory t's networks of both candidates, weighted.
  REQUIRE(half.components[1].size() == 3);
  CHECK(half.components[1][0].mean()(0, 0) == Approx((0.3 / 2.0 * 0.4 + 0.7 / 3.0 * 0.9) / (0.3 / 2.0 + 0.7 / 3.0)));
  CHECK(half.components[1][2].mean()(0, 0) == Approx(1.4));  // only b has a third network
  // The members' coverage counts, weighted: of test row 0's predictions only a's 0.4 lies below the
  // truth 0.5, one of five networks but 0.3 / 2 of the weight.
  REQUIRE(half.coverage[1].members() > 0);
  CHECK(static_cast<double>(half.coverage[1].below()[0]) / static_cast<double>(half.coverage[1].members()) ==
        Approx(0.15).epsilon(1e-9));
  // A weight of 1: that candidate's mean and scores.
  const Candidate only_b = stacked_candidate(candidates, {0.0, 1.0}, scored, "stacked");
  CHECK(only_b.members == 3);
  CHECK(only_b.means[1].mean()(1, 0) == candidates[1].means[1].mean()(1, 0));
  CHECK(score(only_b, scored).sets[1].metric == Approx(score(candidates[1], scored).sets[1].metric));
  CHECK(score(only_b, scored).sets[1].nll == Approx(score(candidates[1], scored).sets[1].nll).epsilon(1e-6));
  // The log densities stacking uses are the rows' negative NLL.
  CHECK(row_log_densities(candidates, scored, 1)[1][1] == Approx(-row_losses(candidates[1], scored, 1).nll[1]));
  // No weight: no members, NaN scores.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Candidate none = stacked_candidate(candidates, {nan, nan}, scored, "stacked");
  CHECK(none.members == 0);
  CHECK(std::isnan(score(none, scored).sets[1].nll));
  CHECK_THROWS_AS(stacked_candidate(candidates, {1.0}, scored, "stacked"), Error);
}

TEST_CASE("stacked_candidate: the weighted members vote, and their probabilities are the weighted mean",
          "[selection][stacking]") {
  const std::vector<std::int64_t> labels{0, 1};
  std::vector<ScoredSet> scored{{nullptr, &labels}};
  // Candidate a: one network for class 0 on both rows; b: two networks for class 1.
  const auto networks = [&](double logit_1, int count) {
    DeepEnsembleBuilder b(true, 2, 2, {2}, scored);
    for (int n = 0; n < count; ++n) {
      Matrix logits(2, 2);
      logits << 0.0, logit_1, 0.0, logit_1;
      b.add(0, view(logits));
      b.done();
    }
    return b.candidate();
  };
  const std::vector<Candidate> candidates{networks(-1.0, 1), networks(2.0, 2)};
  // b has two of three networks but 0.4 of the weight: class 0 wins the weighted vote.
  const Candidate a_wins = stacked_candidate(candidates, {0.6, 0.4}, scored, "stacked");
  CHECK(a_wins.votes[0].majority() == std::vector<std::int64_t>{0, 0});
  CHECK(a_wins.votes[0].fractions()(0, 0) == Approx(0.6).epsilon(1e-9));
  const Candidate b_wins = stacked_candidate(candidates, {0.4, 0.6}, scored, "stacked");
  CHECK(b_wins.votes[0].majority() == std::vector<std::int64_t>{1, 1});
  const double p_a = 1.0 / (1.0 + std::exp(-1.0)), p_b = 1.0 / (1.0 + std::exp(-2.0));  // P(class 0), P(class 1)
  CHECK(a_wins.probability[0](0, 0) == Approx(0.6 * p_a + 0.4 * (1.0 - p_b)).epsilon(1e-9));
  CHECK(score(a_wins, scored).sets[0].metric == Approx(0.5));
  CHECK(score(b_wins, scored).sets[0].metric == Approx(0.5));
  CHECK(
      a_wins.member_entropy[0](0, 0) ==
      Approx(0.6 * candidates[0].member_entropy[0](0, 0) + 0.4 * candidates[1].member_entropy[0](0, 0)).epsilon(1e-9));
}

TEST_CASE("stack: near-copies of one law converge to the maximum, where plain EM crawls", "[selection][stacking]") {
  // Rows from N(0.03, 1); candidates N(0, 1), N(0.05, 1) and N(0.1, 1.2): their densities differ
  // by a few per cent, so plain EM moves the weights by tiny steps.
  Rng rng(5);
  std::vector<double> y;
  for (int i = 0; i < 400; ++i) y.push_back(0.03 + rng.normal());
  const std::vector<std::vector<double>> log_density{
      gaussian_log_density(y, 0.0, 1.0), gaussian_log_density(y, 0.05, 1.0), gaussian_log_density(y, 0.1, 1.2)};
  const Stacking s = stack(log_density);
  CHECK(s.gap <= 1e-10);
  // Plain EM (the extrapolation left out) took 12 501 sweeps to this gap; SQUAREM 219.
  CHECK(s.sweeps < 2000);
  const Stacking plain = stack(log_density, 1000, 0.0);  // 1000 sweeps: no better than the maximum
  const double at_max = mean_log_likelihood(log_density, s.weights);
  // No point of a grid on the simplex is higher, nor the candidates alone.
  for (int a = 0; a <= 20; ++a) {
    for (int b = 0; a + b <= 20; ++b) {
      const double wa = a / 20.0, wb = b / 20.0;
      CHECK(mean_log_likelihood(log_density, {wa, wb, 1.0 - wa - wb}) <= at_max + 1e-12);
    }
  }
  CHECK(mean_log_likelihood(log_density, plain.weights) <= at_max + 1e-12);
}
