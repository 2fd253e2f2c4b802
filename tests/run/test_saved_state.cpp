// Every struct that is checkpointed or sent between ranks round-trips through its one field
// list (core/visit.hpp): save -> load -> save gives the same bytes, the fields compare equal,
// and a load that needs a shape refuses another one. (The chain itself, the trajectory
// diagnostics and the run checkpoint have their own tests: tests/run/test_chain.cpp,
// tests/ensemble/test_trajectory_diagnostics.cpp, tests/io/test_checkpoint_state.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/core/visit.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/partial.hpp"
#include "simmer/ensemble/selection.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/parallel/report.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/spectrum.hpp"

using namespace simmer;

namespace {

/// `a` saved, loaded into `b` (constructed as a resume or merge would), saved again: the same
/// bytes. Returns the loaded copy for field checks.
template <class T>
T round_trip(const T& a, T b) {
  const auto bytes = save_bytes(a);
  REQUIRE_FALSE(bytes.empty());
  load_bytes(bytes, "test", b);
  CHECK(save_bytes(b) == bytes);
  return b;
}

ensemble::SetScores scores(double base) {
  ensemble::SetScores s;
  s.metric = base;
  s.r2 = base + 0.1;
  s.nll = base + 0.2;
  s.brier = std::nan("");
  s.ece = base + 0.4;
  s.worst_row = 17;
  s.worst_share = 0.25;
  return s;
}

ensemble::TrajectorySummary summary(double base) {
  ensemble::TrajectorySummary s;
  s.members = 12;
  s.distance = base;
  s.path_length = base + 1;
  s.window_distance = base + 2;
  s.window_path_length = base + 3;
  s.rms_start = base + 4;
  s.rms_window_start = base + 5;
  s.rms_end = base + 6;
  s.max_abs_end = base + 7;
  s.block_train_metric = {0.5, std::nan("")};
  s.block_test_metric = {0.25};
  s.member_train_median = base + 8;
  s.member_test_median = base + 9;
  s.member_test_q25 = base + 10;
  s.member_test_q75 = base + 11;
  s.mean_member_loss = base + 12;
  s.rhat = base + 13;
  s.verdict = ensemble::Verdict::not_mixed;
  s.reason = "ratio 0.9";
  return s;
}

void check_same(const ensemble::TrajectorySummary& a, const ensemble::TrajectorySummary& b) {
  CHECK(b.members == a.members);
  CHECK(b.distance == a.distance);
  CHECK(b.path_length == a.path_length);
  CHECK(b.window_distance == a.window_distance);
  CHECK(b.window_path_length == a.window_path_length);
  CHECK(b.rms_start == a.rms_start);
  CHECK(b.rms_window_start == a.rms_window_start);
  CHECK(b.rms_end == a.rms_end);
  CHECK(b.max_abs_end == a.max_abs_end);
  CHECK(b.block_train_metric.size() == a.block_train_metric.size());
  CHECK(b.block_test_metric == a.block_test_metric);
  CHECK(b.member_train_median == a.member_train_median);
  CHECK(b.member_test_median == a.member_test_median);
  CHECK(b.member_test_q25 == a.member_test_q25);
  CHECK(b.member_test_q75 == a.member_test_q75);
  CHECK(b.mean_member_loss == a.mean_member_loss);
  CHECK(b.rhat == a.rhat);
  CHECK(b.verdict == a.verdict);
  CHECK(b.reason == a.reason);
}

ensemble::MeanAccumulator means(Index rows, Index cols, int members) {
  ensemble::MeanAccumulator m(rows, cols);
  for (int k = 0; k < members; ++k) m.add(view(Matrix(Matrix::Random(rows, cols))));
  return m;
}

}  // namespace

TEST_CASE("saved state: small structs round-trip field for field", "[visit][checkpoint]") {
  train::SpectrumEstimate s{12.5, 0.5, 3, 40.0, 20, 2, 80};
  const auto t = round_trip(s, {});
  CHECK((t.count_above == 12.5 && t.count_stderr == 0.5 && t.ritz_above == 3 && t.lambda_max == 40.0 && t.steps == 20 &&
         t.probes == 2 && t.gradients == 80));

  const auto sc = round_trip(scores(1.0), {});
  CHECK(sc.to_vector().size() == 7);
  CHECK(sc.metric == 1.0);
  CHECK(sc.worst_row == 17);
  CHECK(std::isnan(sc.brier));

  check_same(summary(3.0), round_trip(summary(3.0), {}));
  {  // an unknown verdict code is refused
    ensemble::TrajectorySummary bad = summary(3.0);
    bad.verdict = static_cast<ensemble::Verdict>(9);
    CHECK_THROWS_WITH(load_bytes(save_bytes(bad), "test", bad), Catch::Contains("verdict"));
  }

  ensemble::Selection sel;
  sel.loss = {1.0, 0.5};
  sel.stderr_loss = {0.1, 0.2};
  sel.stderr_difference = {0.0, 0.3};
  sel.best = 1;
  sel.one_se = 0;
  sel.selected = 1;
  const auto sel2 = round_trip(sel, {});
  CHECK((sel2.loss == sel.loss && sel2.stderr_loss == sel.stderr_loss &&
         sel2.stderr_difference == sel.stderr_difference && sel2.best == 1 && sel2.one_se == 0 && sel2.selected == 1));

  train::BasicPhaseState<float> phase;
  phase.v = VectorOf<float>::LinSpaced(6, -1.0f, 1.0f);
  phase.chain.s = Vector::Constant(3, 0.5);
  phase.chain.w = Vector::Constant(3, -0.5);
  phase.kinetic = 2.5;
  const auto phase2 = round_trip(phase, {});
  CHECK((phase2.v == phase.v && phase2.chain.s == phase.chain.s && phase2.chain.w == phase.chain.w &&
         phase2.kinetic == 2.5));
}

TEST_CASE("saved state: accumulators keep their constructed shape", "[visit][checkpoint]") {
  const auto m = means(4, 2, 3);
  const auto m2 = round_trip(m, ensemble::MeanAccumulator(4, 2));
  CHECK(m2.members() == 3);
  CHECK(m2.mean() == m.mean());
  CHECK(m2.m2() == m.m2());
  ensemble::MeanAccumulator other(2, 4);
  CHECK_THROWS_WITH(load_bytes(save_bytes(m), "test", other), Catch::Contains("wrong shape"));

  ensemble::VoteAccumulator v(3, 2);
  v.add(view(Matrix(Matrix::Random(3, 2))));
  v.add(view(Matrix(Matrix::Random(3, 2))));
  const auto v2 = round_trip(v, ensemble::VoteAccumulator(3, 2));
  CHECK(v2.members() == 2);
  CHECK(v2.votes() == v.votes());
  ensemble::VoteAccumulator fewer(2, 2);
  CHECK_THROWS(load_bytes(save_bytes(v), "test", fewer));

  ensemble::CoverageCounter c(3, 1);
  const Matrix truth = Matrix::Zero(3, 1);
  c.add(view(Matrix(Matrix::Random(3, 1))), view(truth));
  const auto c2 = round_trip(c, ensemble::CoverageCounter(3, 1));
  CHECK(c2.members() == 1);
  CHECK(c2.below() == c.below());
  CHECK(c2.equal() == c.equal());
  ensemble::CoverageCounter longer(4, 1);
  CHECK_THROWS_WITH(load_bytes(save_bytes(c), "test", longer), Catch::Contains("coverage counts"));
}

TEST_CASE("saved state: partial and pooled ensembles round-trip and check shapes", "[visit][checkpoint]") {
  ensemble::EnsembleShape regression;
  regression.rows = {4, 2};
  regression.outputs = 2;
  regression.tracked = 4;
  ensemble::EnsemblePartial p;
  p.trajectory = 1;
  p.last_loss = 0.75;
  p.members = 2;
  p.diverged_step = 30;
  p.means = {means(4, 2, 2), means(2, 2, 2)};
  p.tracked = std::vector<double>(8, 0.5);
  ByteWriter w;
  p.save(w);
  ByteReader r(w.bytes().data(), w.bytes().size(), "partial");
  const auto q = ensemble::EnsemblePartial::load(r, regression);
  CHECK(r.done());
  CHECK((q.trajectory == 1 && q.last_loss == 0.75 && q.members == 2 && q.diverged_step == 30));
  REQUIRE(q.means.size() == 2);
  CHECK(q.means[1].mean() == p.means[1].mean());
  CHECK(q.tracked == p.tracked);
  CHECK(save_bytes(q) == w.bytes());
  ensemble::EnsembleShape other = regression;
  other.rows = {4, 3};
  ByteReader again(w.bytes().data(), w.bytes().size(), "partial");
  CHECK_THROWS_WITH(ensemble::EnsemblePartial::load(again, other), Catch::Contains("wrong shape"));

  ensemble::EnsembleShape voting;
  voting.classification = true;
  voting.rows = {3, 2};
  voting.classes = 3;
  ensemble::PooledEnsemble pooled(voting, 2, 5);
  std::vector<ensemble::EnsemblePartial> partials(2);
  for (std::int64_t t = 0; t < 2; ++t) {
    auto& part = partials[static_cast<std::size_t>(t)];
    part.trajectory = t;
    part.members = 1;
    part.last_loss = 0.5 + static_cast<double>(t);
    part.diverged_step = t == 1 ? 40 : -1;
    part.votes = {ensemble::VoteAccumulator::Votes::Constant(3, 3, t + 1),
                  ensemble::VoteAccumulator::Votes::Constant(2, 3, t)};
  }
  pooled.merge(partials);
  const auto loaded = round_trip(pooled, ensemble::PooledEnsemble(voting, 2));
  CHECK(loaded.votes(0).votes() == pooled.votes(0).votes());
  CHECK(loaded.members(1) == pooled.members(1));
  CHECK(loaded.diverged_at() == pooled.diverged_at());
  CHECK(loaded.mean_train_loss() == pooled.mean_train_loss());
  ensemble::PooledEnsemble three(voting, 3);
  CHECK_THROWS_WITH(load_bytes(save_bytes(pooled), "test", three), Catch::Contains("expected 3 entries, found 2"));
}

TEST_CASE("saved state: reports round-trip", "[visit][checkpoint]") {
  run::ChainReport c;
  c.index = 3;
  c.baseline = {scores(0.5), scores(0.7)};
  c.stages.resize(2);
  c.stages[0].summary = summary(1.0);
  c.stages[0].start_loss = 0.125;
  c.stages[1].summary = summary(2.0);
  c.diverged_at = 77;
  c.slow_to_heat_at = 12;
  c.curvature_start = {1, 2, 3, 4, 5, 6, 7};
  c.curvature_end = {7, 6, 5, 4, 3, 2, 1};
  ByteWriter w;
  c.save(w);
  ByteReader r(w.bytes().data(), w.bytes().size(), "report");
  const run::ChainReport d = run::ChainReport::load(r);
  CHECK(save_bytes(d) == w.bytes());
  CHECK((d.index == 3 && d.diverged_at == 77 && d.slow_to_heat_at == 12));
  REQUIRE(d.baseline.size() == 2);
  CHECK(d.baseline[1].metric == 0.7);
  REQUIRE(d.stages.size() == 2);
  check_same(c.stages[1].summary, d.stages[1].summary);
  CHECK(d.stages[0].start_loss == 0.125);
  CHECK(std::isnan(d.stages[1].start_loss));
  CHECK(d.curvature_end.ritz_above == 5);

  parallel::EnsembleReport e;
  e.name = "rung_1";
  e.temperature = 0.01;
  e.stage = 1;
  e.scores = {scores(0.1), scores(0.2)};
  e.coverage = {{0.5, 0.8, 0.9}, {0.4, 0.7, 0.95}};
  e.block_metric = {std::vector<double>{0.1, 0.2}, std::vector<double>{0.3}};
  e.members = 40;
  parallel::RunReport report;
  report.candidates = {e, e};
  report.candidates[0].stage = -1;
  report.compared = true;
  report.selection.loss = {0.3, 0.2};
  report.selection.selected = 1;
  report.selected = 1;
  report.diagnostics_stage = 1;
  const auto back = round_trip(report, {});
  REQUIRE(back.candidates.size() == 2);
  const auto& f = back.candidates[1];
  CHECK((f.name == e.name && f.temperature == e.temperature && f.stage == 1 && f.members == 40));
  CHECK(f.coverage == e.coverage);
  CHECK(f.block_metric == e.block_metric);
  CHECK(f.scores[1].nll == e.scores[1].nll);
  CHECK((back.compared && back.selection.loss == report.selection.loss && back.selected == 1 &&
         back.diagnostics_stage == 1));
  report.selected = 2;  // no such candidate
  parallel::RunReport refused;
  CHECK_THROWS_WITH(load_bytes(save_bytes(report), "test", refused), Catch::Contains("out of range"));
}
