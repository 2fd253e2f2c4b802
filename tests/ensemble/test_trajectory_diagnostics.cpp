// Drift and stationarity diagnostics of one trajectory: ballistic ratio, rms, verdicts, block
// ensembles, the checkpoint round trip and the trajectory-ordered merge of partials.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "simmer/core/rng.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"

using namespace simmer;
using namespace simmer::ensemble;

namespace {

struct Fixture {
  Matrix y_train, y_test;
  DiagnosticsSetup setup;
  Fixture() {
    y_train.resize(20, 1);
    y_test.resize(10, 1);
    for (Index i = 0; i < 20; ++i) y_train(i, 0) = std::sin(0.3 * static_cast<double>(i));
    for (Index i = 0; i < 10; ++i) y_test(i, 0) = std::cos(0.5 * static_cast<double>(i));
    setup.classification = false;
    setup.outputs = 1;
    setup.parameters = 50;
    setup.window_first_step = 600;
    setup.window_steps = 400;
    setup.blocks = 4;
    setup.time_step = 0.01;
    setup.sets = {{&y_train, nullptr}, {&y_test, nullptr}};
  }
};

/// Runs `steps` steps of a made-up motion x(t) with velocity v(t), taking a member every 10
/// steps of the window with prediction truth + `error(step)`.
template <class Motion>
TrajectoryDiagnostics run(const Fixture& fx, Motion motion, double error_growth) {
  TrajectoryDiagnostics d(fx.setup);
  Vector x = motion(0.0).first;
  d.start(x);
  for (std::int64_t s = 0; s < 1000; ++s) {
    const double t = 0.01 * static_cast<double>(s + 1);
    const auto [pos, vel] = motion(t);
    x = pos;
    d.after_step(s, x, vel.squaredNorm());
    if (s >= fx.setup.window_first_step && s % 10 == 0) {
      d.begin_member(s);
      const double e = error_growth * static_cast<double>(s - fx.setup.window_first_step) / 400.0;
      Matrix train = fx.y_train.array() + e, test = fx.y_test.array() + 0.1 * std::sin(3 * t) + e;
      d.member_predictions(0, view(train));
      d.member_predictions(1, view(test));
      d.member_done(x, 1.0 + e);
    }
  }
  return d;
}

}  // namespace

TEST_CASE("a straight-line drift is called drifting, an orbit around the origin is not", "[drift]") {
  Fixture fx;
  const Index n = fx.setup.parameters;
  Vector direction = Vector::Ones(n) / std::sqrt(static_cast<double>(n));
  const auto line = [&](double t) {
    return std::pair<Vector, Vector>{Vector::Constant(n, 0.1) + 2.0 * t * direction, 2.0 * direction};
  };
  const TrajectoryDiagnostics drift = run(fx, line, 0.5);
  const Vector end_line = line(10.0).first;
  const TrajectorySummary s = drift.summary(end_line, std::nan(""), false, std::nan(""));
  INFO(s.reason);
  CHECK(s.members == 40);
  CHECK(s.window_ballistic_ratio() == Approx(1.0).epsilon(1e-6));
  CHECK(s.ballistic_ratio() == Approx(1.0).epsilon(1e-6));
  CHECK(s.path_length == Approx(20.0).epsilon(1e-9));  // speed 2 for 10 time units
  CHECK(s.rms_end > s.rms_window_start);
  CHECK(s.verdict == Verdict::drifting);
  // the predictions drift too: each block's R² falls
  REQUIRE(s.block_test_metric.size() == 4);
  CHECK(s.block_test_metric[3] < s.block_test_metric[0]);
  CHECK(s.block_train_metric[0] > s.block_train_metric[3]);
  // with a prior whose rms bounds the motion, the same numbers are "not mixed", not drifting
  const TrajectorySummary bounded = drift.summary(end_line, 10.0, false, std::nan(""));
  CHECK(bounded.verdict == Verdict::not_mixed);
  CHECK(drift.summary(end_line, std::nan(""), true, std::nan("")).verdict == Verdict::diverged);

  // A circle of radius 1 in two coordinates, period 2π/3: many turns in the window.
  const auto orbit = [&](double t) {
    Vector x = Vector::Constant(n, 0.1), v = Vector::Zero(n);
    x(0) = std::cos(3 * t);
    x(1) = std::sin(3 * t);
    v(0) = -3 * std::sin(3 * t);
    v(1) = 3 * std::cos(3 * t);
    return std::pair<Vector, Vector>{x, v};
  };
  const TrajectoryDiagnostics circle = run(fx, orbit, 0.0);
  const TrajectorySummary c = circle.summary(orbit(10.0).first, std::nan(""), false, std::nan(""));
  INFO(c.reason);
  CHECK(c.window_ballistic_ratio() < 0.2);
  CHECK(c.verdict == Verdict::stationary);
  CHECK(c.rhat < 1.1);
}

TEST_CASE("diagnostics survive a save/load round trip exactly", "[drift][checkpoint]") {
  Fixture fx;
  const Index n = fx.setup.parameters;
  Rng rng(5);
  TrajectoryDiagnostics a(fx.setup);
  Vector x = Vector::Zero(n);
  a.start(x);
  for (std::int64_t s = 0; s < 700; ++s) {
    for (Index i = 0; i < n; ++i) x(i) += 0.01 * rng.normal();
    a.after_step(s, x, 1.0 + rng.uniform());
    if (s >= 600 && s % 5 == 0) {
      a.begin_member(s);
      Matrix p = fx.y_train.array() + 0.1 * rng.normal(), q = fx.y_test.array() + 0.1 * rng.normal();
      a.member_predictions(0, view(p));
      a.member_predictions(1, view(q));
      a.member_done(x, rng.uniform());
    }
  }
  ByteWriter w;
  a.save(w);
  TrajectoryDiagnostics b(fx.setup);
  ByteReader r(w.bytes().data(), w.bytes().size(), "test state");
  b.load(r);
  CHECK(r.done());
  ByteWriter again;
  b.save(again);
  CHECK(again.bytes() == w.bytes());  // every field saved is restored
  const auto sa = a.summary(x, std::nan(""), false, std::nan("")), sb = b.summary(x, std::nan(""), false, std::nan(""));
  CHECK(sa.reason == sb.reason);
  REQUIRE(sa.block_test_metric.size() == sb.block_test_metric.size());
  for (std::size_t i = 0; i < sa.block_test_metric.size(); ++i) {
    CHECK(((sa.block_test_metric[i] == sb.block_test_metric[i]) ||
           (std::isnan(sa.block_test_metric[i]) && std::isnan(sb.block_test_metric[i]))));
  }
}

TEST_CASE("pooled partials: classification probabilities and block votes merge in trajectory order",
          "[drift][pooled]") {
  const std::vector<std::int64_t> train_labels{0, 1, 2, 1}, test_labels{2, 0};
  DiagnosticsSetup setup;
  setup.classification = true;
  setup.outputs = 3;
  setup.classes = 3;
  setup.parameters = 4;
  setup.window_first_step = 0;
  setup.window_steps = 10;
  setup.blocks = 2;
  setup.time_step = 0.1;
  setup.sets = {{nullptr, &train_labels}, {nullptr, &test_labels}};
  Rng rng(9);
  std::vector<TrajectoryDiagnostics> chains(3, TrajectoryDiagnostics(setup));
  // By hand: every member's softmax summed per set, and the votes of each block of the window.
  Matrix softmax_sum[2] = {Matrix::Zero(4, 3), Matrix::Zero(2, 3)};
  Eigen::MatrixXi block_votes[2][2] = {{Eigen::MatrixXi::Zero(4, 3), Eigen::MatrixXi::Zero(4, 3)},
                                       {Eigen::MatrixXi::Zero(2, 3), Eigen::MatrixXi::Zero(2, 3)}};
  const auto by_hand = [&](int set, std::int64_t step, const Matrix& logits) {
    for (Index i = 0; i < logits.rows(); ++i) {
      const double top = logits.row(i).maxCoeff();
      const Eigen::RowVectorXd e = (logits.row(i).array() - top).exp().matrix();
      softmax_sum[set].row(i) += e / e.sum();
      Index best = 0;
      logits.row(i).maxCoeff(&best);
      block_votes[set][setup.block_of(step)](i, best) += 1;
    }
  };
  for (auto& d : chains) {
    d.start(Vector(Vector::Zero(4)));
    for (std::int64_t s = 0; s < 10; ++s) {
      d.after_step(s, Vector(Vector::Zero(4)), 1.0);
      d.begin_member(s);
      Matrix a(4, 3), b(2, 3);
      for (Index i = 0; i < a.size(); ++i) a.data()[i] = rng.normal();
      for (Index i = 0; i < b.size(); ++i) b.data()[i] = rng.normal();
      d.member_predictions(0, view(a));
      d.member_predictions(1, view(b));
      by_hand(0, s, a);
      by_hand(1, s, b);
      d.member_done(Vector(Vector::Zero(4)), 1.0);
    }
  }
  const auto pooled = [&](const std::vector<std::size_t>& order) {
    PooledDiagnostics p(setup);
    for (const std::size_t c : order) {
      ByteWriter w;
      chains[c].save_partials(w);
      ByteReader r(w.bytes().data(), w.bytes().size(), "partials");
      p.merge(r);
    }
    return p;
  };
  const PooledDiagnostics p1 = pooled({0, 1, 2}), p2 = pooled({0, 1, 2}), reversed = pooled({2, 1, 0});
  for (int set = 0; set < 2; ++set) {
    INFO("set " << set);
    CHECK(p1.probabilities(set) == p2.probabilities(set));  // the same order, the same bits
    // The mean softmax of all 30 members, as summed by hand (Welford's merge rounds differently).
    CHECK((p1.probabilities(set) - softmax_sum[set] / 30.0).cwiseAbs().maxCoeff() < 1e-14);
    // Another order rounds differently: why the run merges in trajectory order, whatever the ranks.
    CHECK((reversed.probabilities(set) - softmax_sum[set] / 30.0).cwiseAbs().maxCoeff() < 1e-14);
  }
  CHECK((p1.probabilities(0) != reversed.probabilities(0) || p1.probabilities(1) != reversed.probabilities(1)));
  // Each block's ensemble metric: the accuracy of that block's pooled vote, counted by hand.
  for (int set = 0; set < 2; ++set) {
    const auto& labels = set == 0 ? train_labels : test_labels;
    const auto blocks = p1.block_metric(set);
    REQUIRE(blocks.size() == 2);
    for (std::size_t b = 0; b < 2; ++b) {
      double correct = 0.0;
      for (Index i = 0; i < block_votes[set][b].rows(); ++i) {
        Index winner = 0;
        block_votes[set][b].row(i).maxCoeff(&winner);  // the first maximum: the lowest class on a tie
        correct += winner == labels[static_cast<std::size_t>(i)] ? 1.0 : 0.0;
      }
      CHECK(blocks[b] == Approx(correct / static_cast<double>(labels.size())));
    }
  }
}

TEST_CASE("an exploded trajectory is judged diverged, never stationary, and a drift is not an explosion",
          "[diagnostics]") {
  const auto base = [] {
    TrajectorySummary s;
    s.members = 10;
    s.rms_start = 0.1;
    s.rms_window_start = 0.1;
    s.rms_end = 0.1;
    s.max_abs_end = 0.5;
    s.mean_member_loss = 0.2;
    s.distance = s.window_distance = 0.01;
    s.path_length = s.window_path_length = 1.0;
    s.rhat = 1.0;
    return s;
  };
  TrajectorySummary calm = base();
  judge(calm, std::nan(""), false, 0.1);
  CHECK(calm.verdict == Verdict::stationary);
  TrajectorySummary frozen = base();  // blown up and frozen: huge, still, "stationary" by the old rule
  frozen.rms_end = 1.3e20;
  frozen.max_abs_end = 1e22;
  frozen.mean_member_loss = 3.5e22;
  judge(frozen, std::nan(""), false, 0.09);
  CHECK(frozen.verdict == Verdict::diverged);
  CHECK_THAT(frozen.reason, Catch::Contains("exploded") && Catch::Contains("rms 1.3e+20 from 0.1"));  // end from start
  TrajectorySummary nan_state = base();
  nan_state.rms_end = std::nan("");
  judge(nan_state, std::nan(""), false, 0.1);
  CHECK(nan_state.verdict == Verdict::diverged);
  TrajectorySummary loss_only = base();
  loss_only.mean_member_loss = 2e5;  // 2e6 x the start loss
  judge(loss_only, std::nan(""), false, 0.1);
  CHECK(loss_only.verdict == Verdict::diverged);
  // An Adam end point overfit to a training loss of 1.7e-8 (Friedman #1, seed 3, trajectory 7),
  // sampled at T = 0.0096: its members' loss 0.032 is thermal, not an explosion. Without a T
  // (no thermometer samples) only the start is the scale.
  TrajectorySummary overfit = base();
  overfit.mean_member_loss = 0.0319;
  overfit.target_temperature = 0.0096;
  judge(overfit, std::nan(""), false, 1.67e-8);
  CHECK(overfit.verdict != Verdict::diverged);
  overfit.target_temperature = std::nan("");
  judge(overfit, std::nan(""), false, 1.67e-8);
  CHECK(overfit.verdict == Verdict::diverged);
  TrajectorySummary beyond_prior = base();
  beyond_prior.rms_end = 200.0;  // 2000 x the start rms, but only 20 x the prior's 10
  judge(beyond_prior, 10.0, false, 0.1);
  CHECK(beyond_prior.verdict != Verdict::diverged);
  TrajectorySummary drift = base();  // the paper's drifts: rms x70 moving one way
  drift.rms_end = 7.0;
  drift.window_distance = 0.99;
  drift.window_path_length = 1.0;
  judge(drift, std::nan(""), false, 0.1);
  CHECK(drift.verdict == Verdict::drifting);
}

TEST_CASE("not equilibrated: a settled series whose T_conf/T is off beyond 5 percent and twice its error",
          "[diagnostics]") {
  const auto settled = [](double conf_ratio, double stderr_ratio, std::int64_t samples) {
    TrajectorySummary s;
    s.members = 10;
    s.rms_start = s.rms_window_start = s.rms_end = 0.1;
    s.max_abs_end = 0.5;
    s.mean_member_loss = 0.2;
    s.distance = s.window_distance = 0.01;
    s.path_length = s.window_path_length = 1.0;
    s.rhat = 1.0;
    s.target_temperature = 0.02;
    s.configurational_temperature = conf_ratio * 0.02;
    s.configurational_stderr = stderr_ratio * 0.02;
    s.configurational_samples = samples;
    judge(s, std::nan(""), false, 0.1);
    return s;
  };
  const TrajectorySummary cold = settled(0.14, 0.02, 60);  // the sine under one global chain
  CHECK(cold.verdict == Verdict::not_equilibrated);
  CHECK_THAT(cold.reason, Catch::Contains("T_conf/T 0.140 +- 0.020 over 60 samples") && Catch::Contains("colder"));
  const TrajectorySummary hot = settled(1.2, 0.02, 60);
  CHECK(hot.verdict == Verdict::not_equilibrated);
  CHECK_THAT(hot.reason, Catch::Contains("hotter"));
  CHECK(settled(1.04, 0.01, 60).verdict == Verdict::stationary);                 // within the tolerance
  CHECK(settled(0.7, 0.2, 60).verdict == Verdict::stationary);                   // off, but within its noise
  CHECK(settled(0.7, 0.05, 9).verdict == Verdict::stationary);                   // too few samples to judge
  CHECK(settled(std::nan(""), std::nan(""), 0).verdict == Verdict::stationary);  // no thermometer
  // The series' verdicts come first: a trajectory not mixed stays not mixed.
  TrajectorySummary moving = settled(0.14, 0.02, 60);
  moving.rhat = 1.5;
  judge(moving, std::nan(""), false, 0.1);
  CHECK(moving.verdict == Verdict::not_mixed);
}

TEST_CASE("the configurational temperature's standard error: the delta method on the samples", "[diagnostics]") {
  train::ThermometerSums sums;
  CHECK(std::isnan(sums.configurational_stderr()));
  // Samples a_k = 2 b_k exactly: the ratio has no error whatever the spread.
  for (const double b : {1.0, 2.0, 3.0, 4.0}) sums.add({2.0 * b, b}, 1.0, 1.0);
  CHECK(sums.configurational_temperature() == Approx(2.0));
  CHECK(sums.configurational_stderr() == Approx(0.0).margin(1e-12));
  // b constant: the error is the sd of a over sqrt(n), divided by b.
  train::ThermometerSums flat;
  for (const double a : {1.0, 2.0, 3.0, 4.0}) flat.add({a, 2.0}, 1.0, 1.0);
  const double sd = std::sqrt(((1.5 * 1.5) * 2 + (0.5 * 0.5) * 2) / 3.0);
  CHECK(flat.configurational_stderr() == Approx(sd / 2.0 / 2.0));
}

TEST_CASE("window_advice: the not-mixed trajectories' window and what keeps the members as many", "[diagnostics]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // A drifting trajectory's R-hat (4) is not a mixing time; stationary and NaN ones are not counted.
  const std::vector<double> rhats{4.0, 2.0, 1.5, 1.05, nan};
  const std::vector<Verdict> verdicts{Verdict::drifting, Verdict::not_mixed, Verdict::not_mixed, Verdict::stationary,
                                      Verdict::not_mixed};
  SamplingOptions s;
  s.window = 3000;
  const std::string line = window_advice(s, rhats, verdicts);
  INFO(line);
  // Median 1.75: 3000 (1.75^2 - 1)/0.21 = 29 464; largest 2: 3000 (4 - 1)/0.21 = 42 857.
  CHECK(line.find("split-R^ above 1.1 in 2 of 5 trajectories (not mixed) over the 3000-step window") !=
        std::string::npos);
  CHECK(line.find("about 29000 steps (10x)") != std::string::npos);
  CHECK(line.find("and 43000 (14x) the slowest") != std::string::npos);
  CHECK(line.find("ensemble.stride multiplied") != std::string::npos);
  s.fraction = 0.5;
  CHECK(window_advice(s, rhats, verdicts).find("ensemble.fraction divided") != std::string::npos);
  s.fraction = 0;
  s.count = 100;
  const std::string counted = window_advice(s, rhats, verdicts);
  CHECK(counted.find("ensemble.stride") == std::string::npos);
  CHECK(counted.find("ensemble.fraction") == std::string::npos);
  // Nothing not mixed above the threshold: no line.
  CHECK(window_advice(s, {1.05, 4.0}, {Verdict::not_mixed, Verdict::drifting}).empty());
  // An absurd R-hat prints a number, not an overflowed integer.
  CHECK(window_advice(s, {1e9}, {Verdict::not_mixed}).find("e+") != std::string::npos);
}
