#pragma once
// The thermostat tests' potentials and thermometer (test_nhc.cpp, test_parameter_masses.cpp,
// test_configurational.cpp, test_ergodic_thermostats.cpp): the coupled quartic chain of
// docs/METHOD.md §3, the integrator's reference potential, and a (coupled) harmonic one.

#include "simmer/core/rng.hpp"
#include "simmer/train/configurational.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::test {

/// L = Σ x_i⁴/4 + Σ (x_i - x_{i+1})²/2: the coupled quartic chain of docs/METHOD.md §3, computed
/// in S (the float32 cases run the integrator as run.precision = float32 does).
template <class S>
class BasicQuarticChain final : public train::BasicObjective<S> {
 public:
  SIMMER_SCALAR_TYPES(S);
  explicit BasicQuarticChain(Index n) : n_(n) {}
  [[nodiscard]] Index parameter_count() const override { return n_; }
  double evaluate(const Vector& x) override {
    const auto d = x.head(n_ - 1) - x.tail(n_ - 1);
    return static_cast<double>(S(0.25) * x.array().pow(4).sum() + S(0.5) * d.squaredNorm());
  }
  double evaluate_with_gradient(const Vector& x, Vector& g) override {
    g = x.array().cube().matrix();
    const Vector d = x.head(n_ - 1) - x.tail(n_ - 1);
    g.head(n_ - 1) += d;
    g.tail(n_ - 1) -= d;
    return evaluate(x);
  }

 private:
  Index n_;
};
using QuarticChain = BasicQuarticChain<double>;

/// L = Σ k_i x_i² / 2 + c Σ (x_i − x_{i+1})²/2: harmonic, coupled when c > 0.
class Harmonic final : public train::Objective {
 public:
  Harmonic(Vector k, double coupling) : k_(std::move(k)), c_(coupling) {}
  [[nodiscard]] Index parameter_count() const override { return k_.size(); }
  double evaluate(const Vector& x) override {
    const Index n = k_.size();
    const Vector d = x.head(n - 1) - x.tail(n - 1);
    return 0.5 * (k_.array() * x.array().square()).sum() + 0.5 * c_ * d.squaredNorm();
  }
  double evaluate_with_gradient(const Vector& x, Vector& g) override {
    const Index n = k_.size();
    g = (k_.array() * x.array()).matrix();
    const Vector d = x.head(n - 1) - x.tail(n - 1);
    g.head(n - 1) += c_ * d;
    g.tail(n - 1) -= c_ * d;
    return evaluate(x);
  }

 private:
  Vector k_;
  double c_;
};

/// The window's thermometers over `steps` steps of the integrator (every 10th sampled) after
/// `warm` steps from a thermal start at x = 0: T_conf / T and T_kin / T.
struct Temperatures {
  double configurational = 0, kinetic = 0;
};
inline Temperatures thermometer_ratios(train::Objective& f, const train::NhcOptions& opt, double T, int warm, int steps,
                                       std::uint64_t seed) {
  const Index n = f.parameter_count();
  const train::NoseHooverChain nhc(opt, n);
  Rng rng(seed), probes(seed + 1);
  Vector x = Vector::Zero(n), g(n);
  train::PhaseState p = nhc.thermal_start(T, rng);
  for (int s = 0; s < warm; ++s) nhc.step(x, p, T, f, g, &rng);
  train::ThermometerSums sums;
  for (int s = 0; s < steps; ++s) {
    nhc.step(x, p, T, f, g, &rng);
    if (s % 10 == 0) {
      sums.add(train::configurational_sample(f, x, T, &opt.parameter_masses, &opt.prior_precision, probes),
               nhc.kinetic_temperature(p), T);
    }
  }
  return {sums.configurational_temperature() / T, sums.kinetic_temperature() / T};
}

/// The thermometers' small-step reference with `thermostat`: 4000 time units at h = 0.01 and
/// T = 0.5 (seed 7, after 20 000 steps) on a coupled harmonic chain of 40 (k from 1 to 10, coupling 1) and
/// on the quartic chain of 100. An ergodic thermostat gives T_conf/T and T_kin/T near 1 on both.
struct ReferenceTemperatures {
  Temperatures harmonic, quartic;
};
inline ReferenceTemperatures small_step_reference(train::Thermostat thermostat) {
  const Index n = 40;
  Vector k(n);
  for (Index i = 0; i < n; ++i) k(i) = 1.0 + 9.0 * static_cast<double>(i) / (n - 1);
  Harmonic harmonic(k, 1.0);
  QuarticChain quartic(100);
  train::NhcOptions opt;
  opt.time_step = 0.01;
  opt.thermostat = thermostat;
  return {thermometer_ratios(harmonic, opt, 0.5, 20000, 400000, 7),
          thermometer_ratios(quartic, opt, 0.5, 20000, 400000, 7)};
}

}  // namespace simmer::test
