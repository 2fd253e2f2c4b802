// Per-parameter masses in the integrator (NhcOptions::parameter_masses, issue 21): the sampled
// positions keep exp(-U/T) whatever the masses, the thermostat holds Σ m_i v_i² / N_f at T, the
// velocities are Maxwell–Boltzmann with variance T/m_i, and H_ext is conserved.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "quartic_chain.hpp"
#include "simmer/train/masses.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/stability.hpp"

using namespace simmer;
using namespace simmer::train;
using simmer::test::QuarticChain;

namespace {

/// L = Σ k_i x_i² / 2: independent harmonic directions, Var(x_i) = T/k_i exactly.
class Quadratic final : public Objective {
 public:
  explicit Quadratic(Vector k) : k_(std::move(k)) {}
  [[nodiscard]] Index parameter_count() const override { return k_.size(); }
  double evaluate(const Vector& x) override { return 0.5 * (k_.array() * x.array().square()).sum(); }
  double evaluate_with_gradient(const Vector& x, Vector& g) override {
    g = (k_.array() * x.array()).matrix();
    return evaluate(x);
  }

 private:
  Vector k_;
};

}  // namespace

TEST_CASE("masses: on a quadratic potential each coordinate's variance is T/k_i, each m_i v_i² averages T",
          "[nhc][masses]") {
  // Curvatures over four decades, in 4 groups of 10; masses m_i = k_i (every direction then has
  // period 2 pi) except the last group, which keeps m = 1: the positions' law must not depend on
  // the masses either way. Langevin (ergodic per coordinate), gamma 1, T = 0.5.
  const Index n = 40;
  Vector k(n), m(n);
  for (Index i = 0; i < n; ++i) {
    k(i) = std::pow(10.0, static_cast<double>(i / 10) * 4.0 / 3.0 - 2.0);  // 1e-2, 0.215, 4.64, 100
    m(i) = i < 30 ? k(i) : 1.0;
  }
  Quadratic f(k);
  NhcOptions opt;
  // The step's velocities (not its positions) carry a bias ~ (omega h / 2)^2 for a harmonic
  // direction of angular frequency omega = sqrt(k/m): 7% for the k = 100, m = 1 group at h = 0.05
  // (measured), 1% at h = 0.02. Every other direction has omega = 1.
  opt.time_step = 0.02;
  opt.thermostat = Thermostat::langevin;
  opt.friction = 1.0;
  opt.parameter_masses = m;
  const NoseHooverChain nhc(opt, n);
  const double T = 0.5;
  Rng rng(2611);
  Vector x = Vector::Zero(n), g(n);
  PhaseState p = nhc.thermal_start(T, rng);
  for (int s = 0; s < 20000; ++s) nhc.step(x, p, T, f, g, &rng);
  const int steps = 500000;
  Vector xx = Vector::Zero(n), mvv = Vector::Zero(n);
  double kinetic = 0.0;
  for (int s = 0; s < steps; ++s) {
    nhc.step(x, p, T, f, g, &rng);
    xx.array() += x.array().square();
    mvv.array() += m.array() * p.v.array().square();
    kinetic += nhc.kinetic_temperature(p);
  }
  xx /= steps;
  mvv /= steps;
  // Each group's mean over its 10 coordinates. Monte-Carlo error: with masses = k every
  // direction decorrelates in ~1/gamma + its period, about 10 time units = 500 steps, so 5e5
  // steps are ~1000 independent draws per coordinate and 1e4 per group: a relative error of
  // about sqrt(2/1e4) = 1.4%. The m = 1, k = 100 group is faster still. (Without the masses, the
  // k = 0.01 group's period would be 63 time units and the step bounded by k = 100 alike.)
  for (Index group = 0; group < 4; ++group) {
    const double variance_ratio = (xx.segment(group * 10, 10).array() * k.segment(group * 10, 10).array()).mean() / T;
    const double kinetic_ratio = mvv.segment(group * 10, 10).mean() / T;
    INFO("group " << group << " (k = " << k(group * 10) << ", m = " << m(group * 10)
                  << "): k <x^2> / T = " << variance_ratio << ", m <v^2> / T = " << kinetic_ratio);
    CHECK(variance_ratio == Approx(1.0).epsilon(0.05));
    CHECK(kinetic_ratio == Approx(1.0).epsilon(0.05));
  }
  CHECK(kinetic / steps == Approx(T).epsilon(0.01));
}

TEST_CASE("masses: the Nose-Hoover chain holds sum m_i v_i^2 / N at T on the quartic chain and conserves H_ext",
          "[nhc][masses]") {
  const Index n = 100;
  Rng rng(99);
  Vector m(n);
  for (Index i = 0; i < n; ++i) m(i) = 0.25 + 3.75 * rng.uniform();  // masses in [0.25, 4]
  QuarticChain f(n);
  NhcOptions opt;
  opt.time_step = 0.005;
  opt.chain_length = 3;
  opt.parameter_masses = m;
  const NoseHooverChain nhc(opt, n);
  const double T = 0.5;
  Vector x(n), g(n);
  for (Index i = 0; i < n; ++i) x(i) = rng.normal();
  PhaseState p = nhc.thermal_start(T, rng);
  CHECK(p.kinetic == Approx((m.array() * p.v.array().square()).sum()));
  for (int s = 0; s < 20000; ++s) nhc.step(x, p, T, f, g);
  const double h0 = nhc.extended_energy(x, p, f.evaluate(x), T);
  double kin = 0, vir = 0, drift = 0;
  const int steps = 200000;
  for (int s = 0; s < steps; ++s) {
    nhc.step(x, p, T, f, g);
    const double loss = f.evaluate_with_gradient(x, g);
    kin += nhc.kinetic_temperature(p);
    vir += x.dot(g) / static_cast<double>(n);
    drift = std::max(drift, std::abs(nhc.extended_energy(x, p, loss, T) - h0));
  }
  INFO("seed 99, N = 100, masses in [0.25, 4], N_c = 3, h = 0.005, T = 0.5, 2e5 steps: T_kin "
       << kin / steps << ", T_virial " << vir / steps << ", max |H_ext - H_0| " << drift);
  CHECK(kin / steps == Approx(T).epsilon(0.02));
  CHECK(vir / steps == Approx(T).epsilon(0.02));
  CHECK(drift < 0.05);  // H_ext ~ N T = 50: conserved to 1e-3 of its scale
}

TEST_CASE("masses: a mass vector of the wrong size or with a non-positive mass is refused", "[nhc][masses]") {
  NhcOptions opt;
  opt.parameter_masses = Vector::Ones(3);
  CHECK_THROWS_WITH(NoseHooverChain(opt, 4), Catch::Contains("3 parameter masses for 4 parameters"));
  opt.parameter_masses(1) = 0.0;
  CHECK_THROWS_WITH(NoseHooverChain(opt, 3), Catch::Contains("finite number > 0"));
}

TEST_CASE("masses: the mass-weighted curvature is max k_i/m_i on a quadratic, and scaling keeps lambda_max",
          "[nhc][masses][stability]") {
  const Index n = 30;
  Vector k(n);
  for (Index i = 0; i < n; ++i) k(i) = std::pow(10.0, -2.0 + 4.0 * static_cast<double>(i) / (n - 1));
  Quadratic f(k);
  Vector x = Vector::Zero(n);
  Rng rng(5);
  const double plain = estimate_curvature(f, x, rng, 200).lambda_max;
  CHECK(plain == Approx(100.0).epsilon(1e-3));
  // m = k: every weighted direction has curvature 1.
  const double weighted = estimate_curvature(f, x, rng, 200, &k).lambda_max;
  CHECK(weighted == Approx(1.0).epsilon(1e-3));
  const Vector m = scaled_masses(k, weighted, plain);  // m = k / 100
  CHECK(m(n - 1) == Approx(1.0).epsilon(1e-3));
  CHECK(estimate_curvature(f, x, rng, 200, &m).lambda_max == Approx(plain).epsilon(1e-3));
  CHECK_THROWS(scaled_masses(k, 0.0, plain));
}

TEST_CASE("masses: Adam's are its bias-corrected denominators and adaptation's the inverse variances",
          "[nhc][masses]") {
  Vector v(3);
  v << 0.0, 1e-4, 4.0;
  const Vector a = adam_masses(v, 10, 0.999, 1e-7);
  const double c = 1.0 - std::pow(0.999, 10.0);
  CHECK(a(0) == Approx(1e-7));
  CHECK(a(1) == Approx(std::sqrt(1e-4 / c) + 1e-7));
  CHECK(a(2) == Approx(std::sqrt(4.0 / c) + 1e-7));
  CHECK_THROWS(adam_masses(v, 0, 0.999, 1e-7));

  // Draws with standard deviations 0.1, 1 and 10: masses 100, 1 and 0.01 (within sampling error
  // and the regularisation's 5/(n+5) pull towards the mean variance).
  MassAdaptation adapt(3);
  CHECK_THROWS(adapt.masses());
  Rng rng(8);
  const int draws = 200000;
  for (int s = 0; s < draws; ++s) {
    Vector x(3);
    x << 5.0 + 0.1 * rng.normal(), -3.0 + rng.normal(), 10.0 * rng.normal();
    adapt.add(x);
  }
  const Vector m = adapt.masses();
  const double pull = 5.0 / (draws + 5.0) * (0.01 + 1.0 + 100.0) / 3.0;  // added to each variance
  CHECK(m(0) == Approx(1.0 / (0.01 + pull)).epsilon(0.02));
  CHECK(m(1) == Approx(1.0).epsilon(0.02));
  CHECK(m(2) == Approx(0.01).epsilon(0.02));
  CHECK(adapt.mean()(0) == Approx(5.0).epsilon(1e-3));
  MassAdaptation again(3);
  again.restore(adapt.count(), adapt.mean(), adapt.sum_of_squares());
  CHECK(again.masses() == m);
}

TEST_CASE("masses: a mass vector of ones agrees with no masses to rounding", "[nhc][masses]") {
  // simmer.parameter_masses = unit runs without a mass vector: the paper's arithmetic, bit for
  // bit (the mpi and stationarity tests compare archives). A vector of ones is the same dynamics
  // but not the same bits: Σ m_i v_i² is summed in another order than |v|², so the two agree only
  // to rounding, which the chaotic dynamics then grow; over 100 steps they agree to 1e-9.
  const Index n = 50;
  QuarticChain f(n);
  NhcOptions plain;
  plain.time_step = 0.01;
  plain.chain_length = 3;
  NhcOptions ones = plain;
  ones.parameter_masses = Vector::Ones(n);
  const NoseHooverChain a(plain, n), b(ones, n);
  Rng ra(5), rb(5);
  Vector xa(n), xb(n), ga(n), gb(n);
  for (Index i = 0; i < n; ++i) xa(i) = xb(i) = std::sin(static_cast<double>(i));
  PhaseState pa = a.thermal_start(0.3, ra), pb = b.thermal_start(0.3, rb);
  CHECK(pa.v == pb.v);  // sd * 1 * normal: the same draws
  for (int s = 0; s < 100; ++s) {
    a.step(xa, pa, 0.3, f, ga);
    b.step(xb, pb, 0.3, f, gb);
  }
  CHECK((xa - xb).norm() <= 1e-9 * xa.norm());
  CHECK((pa.v - pb.v).norm() <= 1e-9 * pa.v.norm());
  CHECK(pa.kinetic == Approx(pb.kinetic).epsilon(1e-9));
  CHECK((pa.chain.w - pb.chain.w).norm() <= 1e-9 * pa.chain.w.norm());
}

namespace {

/// L = x'Ax/2 for a symmetric A: Hessian A everywhere.
class FullQuadratic final : public Objective {
 public:
  explicit FullQuadratic(Matrix a) : a_(std::move(a)) {}
  [[nodiscard]] Index parameter_count() const override { return a_.rows(); }
  double evaluate(const Vector& x) override { return 0.5 * x.dot(a_ * x); }
  double evaluate_with_gradient(const Vector& x, Vector& g) override {
    g = a_ * x;
    return evaluate(x);
  }

 private:
  Matrix a_;
};

}  // namespace

TEST_CASE("curvature masses: Hutchinson's diagonal is exact for a diagonal Hessian and unbiased for a full one",
          "[masses]") {
  const Index n = 6;
  Vector k(n), x(n);
  k << 0.01, 0.5, 2, 30, 400, 5000;
  x << 0.3, -0.2, 0.1, 0.7, -1.1, 0.05;
  Quadratic diagonal_only(k);
  Rng rng(11);
  Vector d;
  const Vector keep = x;
  hessian_diagonal(diagonal_only, x, rng, 1, d);
  CHECK(x == keep);  // the position is put back
  for (Index i = 0; i < n; ++i) CHECK(d(i) == Approx(k(i)).epsilon(1e-6));
  // Off the diagonal the error is Σ_{j≠i} z_i z_j A_ij: mean 0, variance Σ_{j≠i} A_ij² per probe.
  Matrix a = Matrix::Zero(n, n);
  a.diagonal() = k;
  for (Index i = 0; i + 1 < n; ++i) a(i, i + 1) = a(i + 1, i) = 0.3;
  FullQuadratic full(a);
  hessian_diagonal(full, x, rng, 4000, d);
  for (Index i = 0; i < n; ++i) CHECK(std::abs(d(i) - k(i)) < 4.0 * 0.3 * std::sqrt(2.0 / 4000.0));
  CHECK_THROWS(hessian_diagonal(full, x, rng, 0, d));
}

TEST_CASE("curvature masses: the diagonal's positive part plus the prior, floored at 1e-3 of the mean", "[masses]") {
  Vector d(4), prior(4);
  d << 10, -3, 0, 1e-9;
  prior << 0.5, 0.5, 0.5, 0.5;
  const Vector m = curvature_masses(d, prior);
  CHECK(m(0) == Approx(10.5));
  CHECK(m(1) == Approx(0.5));  // negative curvature cut off: the prior's alone
  CHECK(m(2) == Approx(0.5));
  // Without a prior a flat direction gets 1e-3 of the mean mass, not 0.
  const Vector bare = curvature_masses(d, Vector());
  const double mean = (10.0 + 1e-9) / 4.0;
  CHECK(bare(0) == Approx(10.0));
  CHECK(bare(1) == Approx(1e-3 * mean));
  CHECK(bare(3) == Approx(1e-3 * mean));
  CHECK_THROWS_WITH(curvature_masses(Vector::Constant(3, -1.0), Vector()), Catch::Contains("no positive curvature"));
  CHECK_THROWS(curvature_masses(d, Vector::Ones(3)));
}

TEST_CASE("curvature masses: on a quadratic every mass-weighted frequency is one, the step bound follows them",
          "[masses]") {
  // m_i = k_i makes M^(-1/2) H M^(-1/2) the identity: λ_max falls from max k to 1, so with these
  // masses the stability limit 2/sqrt(λ_max) is the one of the best-conditioned problem.
  Vector k(5), x = Vector::Zero(5);
  k << 1, 10, 100, 1000, 10000;
  Quadratic f(k);
  Rng rng(2), probe(3), again(3);
  Vector d;
  hessian_diagonal(f, x, rng, 1, d);
  const Vector m = curvature_masses(d, Vector());
  const double plain = estimate_curvature(f, x, probe, 200).lambda_max;
  const double weighted = estimate_curvature(f, x, again, 200, &m).lambda_max;
  CHECK(plain == Approx(10000).epsilon(1e-3));
  CHECK(weighted == Approx(1.0).epsilon(1e-3));
  // Scaled to keep the plain stability limit, the stiffest direction's mass is 10000 / 10000 = 1
  // and the next softest 1e-3, 1e-2, 0.1; the softest's is floored at 1e-3 of the mean mass
  // (2222.2), so 2.2222e-4: it moves 67x faster than with unit masses.
  const Vector scaled = scaled_masses(m, weighted, plain);
  CHECK(scaled(4) == Approx(1.0).epsilon(1e-3));
  CHECK(scaled(1) == Approx(1e-3).epsilon(1e-3));
  CHECK(scaled(0) == Approx(1e-3 * 11111.0 / 5.0 / 1e4).epsilon(1e-3));
}
