// One trajectory, serially: a chain saved and loaded mid-run continues bit-identically (every
// field that is saved is restored), and its partials pool to the same ensemble whatever the
// gather boundaries.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "chain_fixtures.hpp"
#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/cli/problem.hpp"
#include "simmer/ensemble/partial.hpp"
#include "simmer/run/archive_layout.hpp"
#include "simmer/run/chain.hpp"
#include "temp_dir.hpp"

using namespace simmer;

using test::check_resume;
using test::small_sine;
using test::state_of;

TEST_CASE("a chain saved and loaded mid-run continues bit-identically", "[chain][checkpoint]") {
  check_resume<double>();
}

TEST_CASE("with Adam's parameter masses, a chain saved and loaded mid-run continues bit-identically",
          "[chain][checkpoint][masses]") {
  check_resume<double>(train::ParameterMasses::adam);
  check_resume<float>(train::ParameterMasses::adam);
}

TEST_CASE("with adapted parameter masses, a chain saved mid-warm-up or after it continues bit-identically",
          "[chain][checkpoint][masses]") {
  check_resume<double>(train::ParameterMasses::adapt, 300);  // the warm-up's variances are saved
  check_resume<double>(train::ParameterMasses::adapt, 900);  // the masses are saved
  check_resume<float>(train::ParameterMasses::adapt, 300);
}

TEST_CASE("with curvature masses, a chain saved mid-warm-up or after it continues bit-identically",
          "[chain][checkpoint][masses]") {
  check_resume<double>(train::ParameterMasses::curvature, 300);  // the warm-up's diagonals and probes are saved
  check_resume<double>(train::ParameterMasses::curvature, 900);  // the masses are saved
  check_resume<float>(train::ParameterMasses::curvature, 300);
}

TEST_CASE("with the massive Nose-Hoover-Langevin thermostat, a chain saved mid-run continues bit-identically",
          "[chain][checkpoint][nhl]") {
  check_resume<double>(train::ParameterMasses::unit, 900, false, train::Thermostat::massive_nose_hoover_langevin);
  check_resume<float>(train::ParameterMasses::curvature, 300, true, train::Thermostat::massive_nose_hoover_langevin);
}

TEST_CASE(
    "Adam's parameter masses: spread over the parameters, the start point's stability margin kept, and the "
    "trajectory differs from unit masses",
    "[chain][masses]") {
  const run::Problem p = small_sine(true);  // a chain keeps a pointer to its problem: one each
  run::Problem q = small_sine(true);
  q.parameter_masses.kind = train::ParameterMasses::adam;
  run::BasicChain<double> unit(p, 0), massive(q, 0);
  for (run::BasicChain<double>* ch : {&unit, &massive}) {
    ch->train_adam();
    ch->advance_to(10);
  }
  // The same Adam run: the start points agree; the weighted curvature equals the plain one (the
  // scale's purpose), up to the power iteration's convergence.
  const double plain = unit.stability_probe().lambda_max, weighted = massive.stability_probe().lambda_max;
  INFO("lambda_max " << plain << ", mass-weighted " << weighted);
  CHECK(weighted == Approx(plain).epsilon(0.05));
  CHECK(unit.parameters() != massive.parameters());
  massive.advance_to(1200);
  CHECK(massive.parameters().allFinite());
  CHECK(!massive.stopped());
}

TEST_CASE("float32: a chain saved and loaded mid-run continues bit-identically", "[chain][checkpoint][float32]") {
  check_resume<float>();
}

TEST_CASE("make_chain computes in run.precision, and the float32 chain stays near the float64 one",
          "[chain][float32]") {
  const run::Problem p64 = small_sine(true, Precision::float64), p32 = small_sine(true, Precision::float32);
  const auto c64 = run::make_chain(p64, 0), c32 = run::make_chain(p32, 0);
  CHECK(dynamic_cast<run::Chain64*>(c64.get()) != nullptr);
  CHECK(dynamic_cast<run::Chain32*>(c32.get()) != nullptr);
  // Initial networks: the float64 draws rounded once.
  CHECK(c32->parameters_f64() == c64->parameters_f64().cast<float>().cast<double>());
  c64->train_adam();
  c32->train_adam();
  c64->advance_to(1200);
  c32->advance_to(1200);
  const auto r64 = c64->report(), r32 = c32->report();
  INFO("mean member loss float64 " << r64.stages.front().summary.mean_member_loss << ", float32 "
                                   << r32.stages.front().summary.mean_member_loss);
  CHECK(r32.stages.front().summary.mean_member_loss ==
        Approx(r64.stages.front().summary.mean_member_loss).epsilon(0.05));
}

TEST_CASE("a chain saved and loaded mid-Adam continues bit-identically", "[chain][checkpoint][adam]") {
  // Full batch, mini-batches (the shuffle stream is state), and early stopping (the best iterate
  // so far is state: adam.keep = best_validation, its patience running across the checkpoint).
  for (const std::int64_t batch : {0, 16, -1}) {
    INFO("adam.batch = " << batch);
    cli::Config c = test::paper_defaults();
    c.adam.epochs = 100;
    c.adam.batch_size = std::max<std::int64_t>(batch, 0);
    if (batch < 0) {
      c.adam.learning_rate = 0.05;
      c.adam.keep = train::AdamKeep::best_validation;
      c.adam.patience = 40;
      c.data.validation_fraction = 0.25;
    }
    c.run.steps = 300;
    c.ensemble.window = 100;
    c.simmer.diagnostics.curvature_report = run::DiagnosticsOptions::CurvatureReport::off;
    c.run.trace_every = 7;
    c.run.trajectories = 2;
    const run::Problem p = cli::build_problem(cli::validated(c, 1));
    run::Chain64 straight(p, 1), interrupted(p, 1);
    straight.train_adam();
    interrupted.adam_to(45);
    CHECK(interrupted.adam_epoch() == 45);
    const auto before = interrupted.take_rows();     // what the run writes before it checkpoints
    if (batch >= 0) CHECK(before.trace_count == 6);  // epochs 7, 14, ..., 42 (early stopping may end sooner)
    const auto saved = state_of(interrupted);
    run::Chain64 restored(p, 1);
    ByteReader r(saved.data(), saved.size(), "test state");
    restored.load(r, 0);
    CHECK(r.done());
    CHECK_FALSE(restored.started());
    CHECK(state_of(restored) == saved);
    restored.adam_to(100);
    restored.finish_adam();
    restored.start();
    CHECK(straight.parameters() == restored.parameters());
    CHECK(straight.baseline() == restored.baseline());
    CHECK(straight.phase().v == restored.phase().v);  // the retrofit start velocity: Adam's last step
    const auto all = straight.take_rows(), after = restored.take_rows();
    std::vector<double> joined = before.trace;
    joined.insert(joined.end(), after.trace.begin(), after.trace.end());
    CHECK(after.trace_first == before.trace_count);
    REQUIRE(joined.size() == all.trace.size());  // bits: the Adam rows hold NaN (no start point yet)
    CHECK(std::memcmp(joined.data(), all.trace.data(), joined.size() * sizeof(double)) == 0);
    straight.advance_to(300);
    restored.advance_to(300);
    CHECK(straight.parameters() == restored.parameters());
    ByteReader bad(saved.data(), saved.size(), "test state");
    run::Chain64 other(p, 1);
    CHECK_THROWS(other.load(bad, 10));  // an Adam-phase state at a simmering step
  }
}

namespace {
// A stop signal's flag as the chains see it: true from the `stop_after`-th question on.
int questions = 0;
int stop_after = 0;
bool stop_at_question() { return ++questions >= stop_after; }
}  // namespace

TEST_CASE("a stop check ends a chain's block at a step or epoch boundary, and continuing gives the same bits",
          "[chain][signal]") {
  // What parallel::Run does at a stop signal: the chain ends its block where its check says so,
  // reports where, and a later call (after the ranks agree on a step) continues from there.
  const run::Problem p = small_sine();
  run::Chain64 straight(p, 1), stopped(p, 1);
  straight.train_adam();
  questions = 0;
  stop_after = 30;  // asked after each epoch: Adam ends after its 30th
  stopped.adam_to(100, {}, stop_at_question);
  CHECK(stopped.adam_epoch() == 30);
  stopped.adam_to(100);
  CHECK(stopped.adam_epoch() == 100);
  stopped.finish_adam();
  stopped.start();
  CHECK(straight.parameters() == stopped.parameters());
  CHECK(straight.advance_to(500) == 500);
  questions = 0;
  stop_after = 123;  // asked before each step: the 123rd question comes before step 122
  CHECK(stopped.advance_to(500, stop_at_question) == 122);
  CHECK(stopped.advance_to(500) == 500);
  CHECK(straight.parameters() == stopped.parameters());
  CHECK(straight.phase().v == stopped.phase().v);
  const auto a = straight.take_rows().trace, b = stopped.take_rows().trace;
  REQUIRE(a.size() == b.size());  // bits: the Adam rows hold NaN (no start point yet)
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

TEST_CASE("pooled regression ensemble: the same bits whatever the gather boundaries", "[chain][pooled]") {
  const run::Problem p = small_sine();
  const auto pooled_with = [&](std::int64_t every) {
    ensemble::PooledEnsemble pooled(run::ensemble_shape(p), 2);
    run::Chain64 a(p, 0), b(p, 1);
    a.train_adam();
    b.train_adam();
    for (std::int64_t end = every; end <= 1200; end += every) {
      a.advance_to(end);
      b.advance_to(end);
      pooled.merge({a.take_partials().front(), b.take_partials().front()});
    }
    return pooled;
  };
  const auto once = pooled_with(1200), often = pooled_with(100);
  CHECK(once.members(1) == 800);
  CHECK(once.means(1).mean() == often.means(1).mean());  // exact: per-trajectory totals, merged in order
  CHECK(once.means(1).m2() == often.means(1).m2());
  CHECK(once.mean_train_loss() == often.mean_train_loss());
}

namespace {

/// The Iris retrofit job shortened, from a copy of data/iris.csv (or `csv`), with a validation
/// split and a three-rung ladder in posterior units (Gaussian prior, thermal start).
cli::Config iris_ladder(const std::string& csv) {
  cli::Config c = test::paper_defaults();
  c.data.source = cli::DataSource::csv;
  c.data.path = csv;
  c.data.features = {"sepal_width", "petal_width"};
  c.data.target = "species";
  c.data.task = data::Task::classification;
  c.data.train = 112;
  c.data.test = 38;
  c.data.validation_fraction = 0.25;
  c.model.architecture = "2-16-16-3";
  c.model.loss = model::LossKind::cce;
  c.adam.epochs = 60;
  c.run.steps = 300;
  c.simmer.ladder.rungs = {0.01, 0.1, 1.0};
  c.simmer.temperature_unit = cli::TemperatureUnit::posterior;
  c.simmer.prior = cli::Prior::gaussian;
  c.simmer.prior_scaling = train::PriorScaling::fan_in;
  c.simmer.start_velocity = train::StartVelocity::thermal;
  c.simmer.diagnostics.curvature_report = run::DiagnosticsOptions::CurvatureReport::off;
  c.ensemble.window = 100;
  c.ensemble.stride = 2;
  c.simmer.diagnostics.blocks = 2;
  c.ensemble.store.every = 3;
  c.run.trace_every = 7;
  c.run.trajectories = 2;
  return c;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("a ladder: one stage per rung, each with its members, draws and diagnostics, resumed mid-rung",
          "[chain][ladder][checkpoint]") {
  const run::Problem p = cli::build_problem(cli::validated(iris_ladder(std::string(SIMMER_DATA_DIR) + "/iris.csv"), 1));
  REQUIRE(p.stages() == 3);
  CHECK(p.total_steps() == 900);
  CHECK(p.members_per_stage() == 50);
  CHECK(p.draws_per_stage() == 17);  // every 3rd of 50, from each rung's first
  CHECK(p.stage_temperature(1) == Approx(0.1 * p.bayes_temperature));
  const auto schedule = p.schedule();
  CHECK(schedule(0) == p.ladder.rungs[0]);
  CHECK(schedule(299) == p.ladder.rungs[0]);
  CHECK(schedule(300) == p.ladder.rungs[1]);
  CHECK(schedule(899) == p.ladder.rungs[2]);
  run::Chain64 straight(p, 1), interrupted(p, 1);
  for (run::Chain64* ch : {&straight, &interrupted}) {
    ch->train_adam();
    ch->advance_to(450);  // rung 1 under way: rung 0 ended, its summary kept
    ch->take_partials();
    ch->take_rows();
  }
  const auto saved = state_of(interrupted);
  run::Chain64 restored(p, 1);
  ByteReader r(saved.data(), saved.size(), "test state");
  restored.load(r, 450);
  CHECK(r.done());
  CHECK(state_of(restored) == saved);
  straight.advance_to(900);
  restored.advance_to(900);
  CHECK(straight.parameters() == restored.parameters());
  CHECK(straight.members() == 150);
  const auto a = straight.take_partials(), b = restored.take_partials();
  REQUIRE(a.size() == 3);
  CHECK(a[0].members == 0);  // taken before the interruption
  CHECK(a[1].members == b[1].members);
  CHECK(a[2].members == 50);
  CHECK(a[2].votes[2] == b[2].votes[2]);  // the validation set's votes of the last rung
  const auto ra = straight.take_rows(), rb = restored.take_rows();
  CHECK(ra.params == rb.params);
  CHECK(ra.draw_first + ra.draw_count == 3 * p.draws_per_stage());
  CHECK(ra.stats == rb.stats);
  // Each stored draw's temperature is its rung's.
  const std::size_t fields = run::layout::sample_stat_fields().size();
  for (std::int64_t d = 0; d < ra.draw_count; ++d) {
    const std::int64_t draw = ra.draw_first + d;
    CHECK(ra.stats[static_cast<std::size_t>(d) * fields + 1] == p.ladder.rungs[static_cast<std::size_t>(draw / 17)]);
  }
  const auto sa = straight.report(), sb = restored.report();
  REQUIRE(sa.stages.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    INFO("rung " << k);
    CHECK(sa.stages[k].summary.members == 50);
    CHECK(sa.stages[k].summary.reason == sb.stages[k].summary.reason);
    CHECK(sa.stages[k].start_loss == sb.stages[k].start_loss);
    CHECK(std::isfinite(sa.stages[k].start_loss));
  }
  CHECK(sa.baseline.size() == 3);  // train, test, validation
}

TEST_CASE("validation rows never reach a gradient: changing only them leaves every parameter as it was",
          "[chain][validation]") {
  test::TempDir dir("validation");
  const std::string original = std::string(SIMMER_DATA_DIR) + "/iris.csv";
  const cli::Config c = cli::validated(iris_ladder(original), 1);
  const run::Problem p = cli::build_problem(c);
  REQUIRE(p.validation.rows() == 28);  // 25 % of the 112 training rows
  CHECK(p.train.rows() == 84);
  CHECK(p.test.rows() == 38);
  // The same file with every validation row's features and class changed.
  std::vector<std::string> lines;
  {
    std::istringstream in(read_text(original));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  for (const auto line : p.validation.origin.lines) {
    lines[static_cast<std::size_t>(line - 1)] = "7.7,0.1,6.9,2.5,Iris-setosa";
  }
  std::string edited;
  for (const auto& line : lines) edited += line + "\n";
  cli::Config c2 = c;
  c2.data.path = dir.write("iris_edited.csv", edited);
  const run::Problem q = cli::build_problem(c2);
  REQUIRE(q.validation.rows() == p.validation.rows());
  CHECK(q.validation.x != p.validation.x);  // the validation set did change...
  CHECK(q.train.x == p.train.x);            // ...and nothing else
  CHECK(q.test.x == p.test.x);
  CHECK(q.x_scaler.min() == p.x_scaler.min());
  run::Chain64 before(p, 0), after(q, 0);
  for (run::Chain64* ch : {&before, &after}) {
    ch->train_adam();
    ch->advance_to(900);
  }
  CHECK(before.baseline() == after.baseline());      // Adam's end point
  CHECK(before.parameters() == after.parameters());  // and every rung after it
  CHECK(before.phase().v == after.phase().v);
  const auto ra = before.report(), rb = after.report();
  CHECK(ra.baseline[0].nll == rb.baseline[0].nll);  // training scores alike
  CHECK(ra.baseline[2].nll != rb.baseline[2].nll);  // validation scores not
}

namespace {

/// Chain `from` (trajectory 0 at T_from) gives its configuration to chain `to` (trajectory 1,
/// about to simmer at T_to), as replica exchange does; checks what `to` holds after.
template <class S>
void check_swap(train::ParameterMasses masses, bool nhl = false) {
  run::Problem p = small_sine(!nhl, sizeof(S) == 4 ? Precision::float32 : Precision::float64,
                              train::Thermostat::massive_nose_hoover_langevin);
  p.parameter_masses.kind = masses;
  p.parameter_masses.warmup = 300;
  run::BasicChain<S> from(p, 0), to(p, 1);
  for (run::BasicChain<S>* ch : {&from, &to}) {
    ch->train_adam();
    ch->advance_to(700);
  }
  REQUIRE(from.parameters() != to.parameters());
  const double t_from = 0.05, t_to = 0.2;
  ByteWriter w;
  from.save_configuration(w);
  const train::BasicPhaseState<S> given = from.phase();
  const ::simmer::Vector m_from = from.parameter_masses(), m_to = to.parameter_masses();
  if (masses == train::ParameterMasses::adapt) {
    REQUIRE(m_from.size() == p.parameters);
    REQUIRE(m_from != m_to);  // each trajectory adapted its own
  }
  ByteReader r(w.bytes().data(), w.bytes().size(), "swap");
  to.load_configuration(r, t_from, t_to);
  CHECK(r.done());
  // The position is carried exactly.
  CHECK(to.parameters() == from.parameters());
  // Velocities: v ~ N(0, T/m) at either end, so scaled by sqrt(T_to/T_from) and sqrt(m_from/m_to).
  const double scale = std::sqrt(t_to / t_from);
  const double tol = sizeof(S) == 4 ? 1e-6 : 1e-14;
  double worst = 0.0;
  for (Index i = 0; i < given.v.size(); ++i) {
    const double mass_ratio = m_from.size() > 0 ? std::sqrt(m_from(i) / m_to(i)) : 1.0;
    const double expected = static_cast<double>(given.v(i)) * scale * mass_ratio;
    worst = std::max(worst, std::abs(static_cast<double>(to.phase().v(i)) - expected) / (std::abs(expected) + 1e-30));
  }
  CHECK(worst < tol);
  // The thermostat's velocities w ~ N(0, T/Q): scaled by sqrt(T_to/T_from); its positions kept.
  // The Nosé–Hoover–Langevin variables ξ ~ N(0, 1/τ²) at any T: kept.
  REQUIRE(to.phase().chain.w.size() == given.chain.w.size());
  if (nhl) {
    CHECK(to.phase().chain.w == given.chain.w);
    CHECK(given.chain.w.size() == p.parameters);
  }
  for (Index k = 0; k < (nhl ? 0 : given.chain.w.size()); ++k) {
    CHECK(to.phase().chain.w(k) == Approx(given.chain.w(k) * scale).epsilon(1e-12));
    CHECK(to.phase().chain.s(k) == given.chain.s(k));
  }
  // The kinetic sum kept current: Σ m_i v_i² of the new velocities.
  double twice_kinetic = 0.0;
  for (Index i = 0; i < to.phase().v.size(); ++i) {
    const double m = m_to.size() > 0 ? m_to(i) : 1.0;
    twice_kinetic += m * static_cast<double>(to.phase().v(i)) * static_cast<double>(to.phase().v(i));
  }
  CHECK(to.phase().kinetic == Approx(twice_kinetic).epsilon(sizeof(S) == 4 ? 1e-5 : 1e-10));
}

}  // namespace

TEST_CASE("a configuration swap carries x and rescales v and the thermostat's velocities by sqrt(T_to/T_from)",
          "[chain][exchange]") {
  SECTION("unit masses, float64") { check_swap<double>(train::ParameterMasses::unit); }
  SECTION("unit masses, float32") { check_swap<float>(train::ParameterMasses::unit); }
  SECTION("adapted masses, each trajectory its own: v also by sqrt(m_from/m_to)") {
    check_swap<double>(train::ParameterMasses::adapt);
  }
  SECTION("massive Nose-Hoover-Langevin, curvature masses: the xi kept") {
    check_swap<double>(train::ParameterMasses::curvature, true);
  }
}

/// Σ m_i v_i² of a chain's velocities with its own masses (1 without), which the integrator keeps
/// as its kinetic sum when it applies the masses.
double twice_kinetic_with_masses(const run::Chain64& ch) {
  const auto& v = ch.phase().v;
  const auto& m = ch.parameter_masses();
  double sum = 0.0;
  for (Index i = 0; i < v.size(); ++i) sum += (m.size() > 0 ? m(i) : 1.0) * v(i) * v(i);
  return sum;
}

TEST_CASE("adapted masses are 1/variance of the warm-up's positions (regularised, one scale), and change the path",
          "[chain][masses]") {
  run::Problem p = small_sine(true);
  p.parameter_masses.warmup = 300;
  run::Problem unit_p = p;
  p.parameter_masses.kind = train::ParameterMasses::adapt;
  unit_p.parameter_masses.kind = train::ParameterMasses::unit;
  run::Chain64 adapt(p, 1), unit(unit_p, 1);
  adapt.train_adam();
  unit.train_adam();
  // The warm-up runs with unit masses: the same path as the unit-mass chain, step for step. The
  // positions after each of its steps are what the masses come from.
  const Index n = adapt.parameters().size();
  Vector sum = Vector::Zero(n), sum_sq = Vector::Zero(n);
  std::vector<Vector> positions;
  for (std::int64_t s = 1; s <= p.parameter_masses.warmup; ++s) {
    adapt.advance_to(s);
    unit.advance_to(s);
    if (s < p.parameter_masses.warmup) REQUIRE(adapt.parameters() == unit.parameters());
    positions.push_back(adapt.parameters());
  }
  REQUIRE(adapt.parameter_masses().size() == n);
  CHECK(unit.parameter_masses().size() == 0);
  // Two-pass variance, Stan's regularisation towards the mean variance, the inverse.
  const auto w = static_cast<double>(positions.size());
  Vector mean = Vector::Zero(n);
  for (const auto& x : positions) mean += x;
  mean /= w;
  Vector variance = Vector::Zero(n);
  for (const auto& x : positions) variance.array() += (x - mean).array().square();
  variance /= w - 1.0;
  const double mean_variance = variance.mean();
  const Vector expected = ((w / (w + 5.0)) * variance.array() + (5.0 / (w + 5.0)) * mean_variance).inverse().matrix();
  // One common scale (set by the stability limit): every ratio the same.
  const Vector ratio = adapt.parameter_masses().cwiseQuotient(expected);
  CHECK(ratio.maxCoeff() / ratio.minCoeff() - 1.0 < 1e-8);
  CHECK(ratio.minCoeff() > 0.0);
  // From there the masses change the path.
  adapt.advance_to(p.parameter_masses.warmup + 50);
  unit.advance_to(p.parameter_masses.warmup + 50);
  CHECK((adapt.parameters() - unit.parameters()).norm() > 1e-3 * unit.parameters().norm());
  // ... through the integrator: its kinetic sum is the mass-weighted one (not Σ v²).
  CHECK(adapt.phase().kinetic == Approx(twice_kinetic_with_masses(adapt)).epsilon(1e-9));
  CHECK(std::abs(adapt.phase().kinetic - adapt.phase().v.squaredNorm()) > 1e-3 * adapt.phase().kinetic);
}

TEST_CASE("Adam's masses change the path from the first step", "[chain][masses]") {
  run::Problem p = small_sine(true);
  run::Problem unit_p = p;
  p.parameter_masses.kind = train::ParameterMasses::adam;
  run::Chain64 adam(p, 1), unit(unit_p, 1);
  adam.train_adam();
  unit.train_adam();
  REQUIRE(adam.parameters() == unit.parameters());
  adam.advance_to(20);
  unit.advance_to(20);
  REQUIRE(adam.parameter_masses().size() == adam.parameters().size());
  CHECK(adam.parameter_masses().maxCoeff() > adam.parameter_masses().minCoeff());
  CHECK((adam.parameters() - unit.parameters()).norm() > 1e-6);
  CHECK(adam.phase().kinetic == Approx(twice_kinetic_with_masses(adam)).epsilon(1e-9));
}

namespace {

/// The sine job with a validation split, a fast noisy Adam (so the validation loss has ups and
/// downs) and adam.keep as given.
run::Problem sine_with_validation(std::int64_t epochs, train::AdamKeep keep, std::int64_t patience) {
  cli::Config c = test::paper_defaults();
  c.adam.epochs = epochs;
  c.adam.learning_rate = 0.05;
  c.adam.keep = keep;
  c.adam.patience = patience;
  c.data.validation_fraction = 0.25;
  c.run.steps = 100;
  c.simmer.every = 100;
  c.ensemble.window = 50;
  c.simmer.diagnostics.curvature_report = run::DiagnosticsOptions::CurvatureReport::off;
  c.run.trajectories = 1;
  return cli::build_problem(cli::validated(c, 1));
}

/// Mean squared error of a chain's baseline network on the validation rows.
double validation_mse(run::Chain64& ch, const run::Problem& p) {
  const auto pred = ch.baseline_prediction(run::Problem::kValidation);
  const auto& y = p.sets[run::Problem::kValidation].y;
  double sum = 0.0;
  for (Index r = 0; r < y.rows(); ++r) {
    for (Index o = 0; o < y.cols(); ++o) sum += std::pow(pred(r, o) - y(r, o), 2);
  }
  return sum / static_cast<double>(y.size());
}

}  // namespace

TEST_CASE("adam.keep = best_validation keeps the epoch of the lowest validation loss, and patience stops Adam",
          "[chain][adam]") {
  const std::int64_t epochs = 60;
  // Adam stopped after e epochs, e = 2..60: the same updates as the first e of a longer run.
  std::vector<double> mse(static_cast<std::size_t>(epochs + 1), std::numeric_limits<double>::infinity());
  std::vector<Vector> at(static_cast<std::size_t>(epochs + 1));
  for (std::int64_t e = 2; e <= epochs; ++e) {
    const run::Problem p = sine_with_validation(e, train::AdamKeep::last, 0);
    run::Chain64 ch(p, 0);
    ch.train_adam();
    mse[static_cast<std::size_t>(e)] = validation_mse(ch, p);
    at[static_cast<std::size_t>(e)] = ch.baseline();
  }
  const auto kept_by = [&](std::int64_t patience) {  // the rule, transcribed: (epoch kept, stop epoch)
    std::int64_t best = 2;
    for (std::int64_t e = 2; e <= epochs; ++e) {
      if (mse[static_cast<std::size_t>(e)] < mse[static_cast<std::size_t>(best)]) best = e;
      if (patience > 0 && e - best >= patience) return std::make_pair(best, e);
    }
    return std::make_pair(best, epochs);
  };
  for (const std::int64_t patience : {std::int64_t{0}, std::int64_t{4}}) {
    INFO("patience " << patience);
    const auto [kept, stop] = kept_by(patience);
    INFO("kept epoch " << kept << ", stopped after " << stop << " of " << epochs);
    REQUIRE(kept > 2);
    if (patience > 0) REQUIRE(stop < epochs);  // the data make early stopping happen
    const run::Problem p = sine_with_validation(epochs, train::AdamKeep::best_validation, patience);
    run::Chain64 ch(p, 0);
    std::int64_t last_run = 0;  // the last epoch Adam computed
    ch.train_adam([&](std::int64_t e, double) { last_run = e; });
    CHECK(last_run == stop);           // patience ended Adam there: no epoch after it ran
    CHECK(ch.adam_epoch() == epochs);  // skipped epochs still count
    CHECK(ch.baseline() == at[static_cast<std::size_t>(kept)]);
    CHECK(validation_mse(ch, p) == mse[static_cast<std::size_t>(kept)]);
    CHECK(ch.report().adam_kept_epoch == kept);  // what the run's last lines say
  }
  // keep = last keeps the last epoch's, which is not the best here.
  CHECK(kept_by(0).first != epochs);
}

TEST_CASE(
    "a regression baseline's Gaussian NLL takes its noise variance from its validation residuals, or its "
    "training residuals without validation rows",
    "[chain][uncertainty]") {
  for (const double fraction : {0.25, 0.0}) {
    INFO("validation_fraction " << fraction);
    cli::Config c = test::paper_defaults();
    c.adam.epochs = 40;
    c.adam.learning_rate = 0.05;
    c.data.validation_fraction = fraction;
    c.run.steps = 100;
    c.simmer.every = 100;
    c.ensemble.window = 50;
    c.simmer.diagnostics.curvature_report = run::DiagnosticsOptions::CurvatureReport::off;
    c.run.trajectories = 1;
    const run::Problem p = cli::build_problem(cli::validated(c, 1));
    REQUIRE(p.has_validation() == (fraction > 0.0));
    run::Chain64 ch(p, 0);
    ch.train_adam();
    ch.advance_to(100);
    const auto r = ch.report();
    const double noise = r.baseline.at(p.noise_set()).metric;  // that set's MSE (one output)
    REQUIRE(noise > 0.0);
    // N(prediction, noise) per value: the mean NLL is log(2 pi noise)/2 + MSE/(2 noise).
    for (std::size_t s = 0; s < p.scored_sets(); ++s) {
      INFO("set " << p.sets[s].name);
      CHECK(r.baseline[s].nll ==
            Approx(0.5 * std::log(2.0 * M_PI * noise) + 0.5 * r.baseline[s].metric / noise).epsilon(1e-12));
    }
  }
}

TEST_CASE("a stochastic thermostat's trajectory that cools while it descends is not called diverged",
          "[chain][health]") {
  // Ab initio at a small T the network falls down the loss from its random start and the
  // thermostat carries the heat away: H_ext, conserved only by the deterministic chain, drops by
  // far more than 10 N_f T between checks. With Langevin or the massive Nose-Hoover-Langevin
  // thermostat that is no divergence (Auto-MPG ab initio's 0.01 T_Bayes rung was stopped at step
  // 399 on every trajectory by it); non-finite values and a kinetic temperature 100x hot still are.
  for (const auto thermostat : {train::Thermostat::langevin, train::Thermostat::massive_nose_hoover_langevin}) {
    INFO(train::to_string(thermostat));
    run::Problem p = test::small_sine(false, Precision::float64, thermostat);
    p.mode = train::StartMode::abinitio;
    p.adam.epochs = 0;
    p.ramp = {1e-4, 1e-4, 0.0, 1};
    p.nhc.time_step = 0.005;
    run::BasicChain<double> chain(p, 0);
    chain.train_adam();
    chain.advance_to(1200);
    // Still cooling at the end (T_kin/T measured 2187 with Langevin's friction 1, 4.1 massive), and
    // finite: the H_ext rule removed (or applied to these thermostats) stops both at step 399.
    CHECK(std::isfinite(chain.phase().kinetic));
    CHECK(chain.diverged_step() == -1);
  }
}
