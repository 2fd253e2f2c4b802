// Physics checks of the NHC integrator (OpenMM's set): temperatures on an anharmonic potential,
// H_ext conservation and its h² scaling, cooling at T = 0, bit-identical reruns.
#include <catch2/catch.hpp>

#include "quartic_chain.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/trajectory.hpp"

using namespace simmer;
using namespace simmer::train;

namespace {

using test::BasicQuarticChain;
using test::QuarticChain;

struct RunStats {
  double kinetic_temperature = 0;
  double virial_temperature = 0;
  double max_energy_deviation = 0;
  double final_loss = 0;
  double initial_loss = 0;
};

/// Integrate for `time` time units after `equilibration` steps; averages over the rest.
template <class S = double>
RunStats run_chain(Index n, double temperature, double h, int chain_length, double time, std::int64_t equilibration,
                   std::uint64_t seed) {
  using Vector = VectorOf<S>;
  BasicQuarticChain<S> f(n);
  Rng rng(seed);
  Vector x(n);
  for (Index i = 0; i < n; ++i) x(i) = static_cast<S>(rng.normal());
  NhcOptions opt;
  opt.time_step = h;
  opt.chain_length = chain_length;
  BasicNoseHooverChain<S> nhc(opt, n);
  BasicPhaseState<S> p = nhc.rest_start();
  for (Index i = 0; i < n; ++i) p.v(i) = static_cast<S>(std::sqrt(std::max(temperature, 0.0)) * rng.normal());
  p.kinetic = p.v.template cast<double>().squaredNorm();
  Vector g(n);
  RunStats st;
  st.initial_loss = f.evaluate(x);
  for (std::int64_t s = 0; s < equilibration; ++s) nhc.step(x, p, temperature, f, g);
  const auto steps = static_cast<std::int64_t>(time / h);
  const double h0 = nhc.extended_energy(x, p, f.evaluate(x), temperature);
  double kin = 0, vir = 0;
  for (std::int64_t s = 0; s < steps; ++s) {
    nhc.step(x, p, temperature, f, g);
    const double loss = f.evaluate_with_gradient(x, g);
    kin += nhc.kinetic_temperature(p);
    vir += x.template cast<double>().dot(g.template cast<double>()) / static_cast<double>(n);
    st.max_energy_deviation =
        std::max(st.max_energy_deviation, std::abs(nhc.extended_energy(x, p, loss, temperature) - h0));
  }
  st.kinetic_temperature = kin / static_cast<double>(steps);
  st.virial_temperature = vir / static_cast<double>(steps);
  st.final_loss = f.evaluate(x);
  return st;
}

}  // namespace

TEST_CASE("NHC samples T on the quartic chain: kinetic and virial temperature", "[nhc]") {
  // docs/METHOD.md §3 reference: N = 100, N_c = 3, h = 0.01, T = 0.5, 2e5 steps.
  INFO("seed 2024, N = 100, N_c = 3, h = 0.01, T = 0.5, 2e5 steps after 2e4 equilibration");
  const RunStats st = run_chain(100, 0.5, 0.01, 3, 2000.0, 20000, 2024);
  CHECK(st.kinetic_temperature == Approx(0.5).epsilon(0.02));
  CHECK(st.virial_temperature == Approx(0.5).epsilon(0.02));
  CHECK(st.max_energy_deviation < 0.2);  // over 2e5 steps: no drift beyond the h² band
}

TEST_CASE("NHC with a single thermostat at low T (the reference's second case)", "[nhc]") {
  INFO("seed 7, N = 100, N_c = 1, h = 0.002, T = 0.05");
  const RunStats st = run_chain(100, 0.05, 0.002, 1, 400.0, 20000, 7);
  CHECK(st.kinetic_temperature == Approx(0.05).epsilon(0.02));
  CHECK(st.virial_temperature == Approx(0.05).epsilon(0.02));
}

TEST_CASE("H_ext is conserved and its error shrinks ~h² when h halves", "[nhc]") {
  INFO("seed 5, N = 100, N_c = 3, T = 0.5, 50 time units");
  const RunStats coarse = run_chain(100, 0.5, 0.02, 3, 50.0, 0, 5);
  const RunStats fine = run_chain(100, 0.5, 0.01, 3, 50.0, 0, 5);
  const RunStats finer = run_chain(100, 0.5, 0.005, 3, 50.0, 0, 5);
  INFO("max |H_ext - H_0|: h=0.02 " << coarse.max_energy_deviation << ", h=0.01 " << fine.max_energy_deviation
                                    << ", h=0.005 " << finer.max_energy_deviation);
  // Relative to the scale of H_ext (N·T ≈ 50), the fluctuation is ~1e-3 at h = 0.01.
  CHECK(fine.max_energy_deviation < 2e-3 * 100 * 0.5);
  const double r1 = coarse.max_energy_deviation / fine.max_energy_deviation;
  const double r2 = fine.max_energy_deviation / finer.max_energy_deviation;
  CHECK(r1 == Approx(4.0).epsilon(0.3));
  CHECK(r2 == Approx(4.0).epsilon(0.3));
}

TEST_CASE("at T = 0 the thermostat only cools: the chain settles toward its minimum", "[nhc]") {
  INFO("seed 9, N = 100, T = 0");
  const RunStats st = run_chain(100, 0.0, 0.01, 3, 500.0, 0, 9);
  CHECK(st.final_loss < 1e-3 * st.initial_loss);
  CHECK(st.kinetic_temperature < 0.05 * st.initial_loss / 100.0);
}

TEST_CASE("float32: NHC samples T on the quartic chain: kinetic and virial temperature", "[nhc][float32]") {
  // The same reference as the float64 case, with x, v and the gradient in float32 (the chain,
  // Σ v² and H_ext stay float64, as in a run.precision = float32 run).
  INFO("seed 2024, N = 100, N_c = 3, h = 0.01, T = 0.5, 2e5 steps after 2e4 equilibration, float32");
  const RunStats st = run_chain<float>(100, 0.5, 0.01, 3, 2000.0, 20000, 2024);
  CHECK(st.kinetic_temperature == Approx(0.5).epsilon(0.02));
  CHECK(st.virial_temperature == Approx(0.5).epsilon(0.02));
  CHECK(st.max_energy_deviation < 0.2);
}

TEST_CASE("float32: NHC with a single thermostat at low T", "[nhc][float32]") {
  INFO("seed 7, N = 100, N_c = 1, h = 0.002, T = 0.05, float32");
  const RunStats st = run_chain<float>(100, 0.05, 0.002, 1, 400.0, 20000, 7);
  CHECK(st.kinetic_temperature == Approx(0.05).epsilon(0.02));
  CHECK(st.virial_temperature == Approx(0.05).epsilon(0.02));
}

TEST_CASE("float32: at T = 0 the thermostat only cools", "[nhc][float32]") {
  INFO("seed 9, N = 100, T = 0, float32");
  const RunStats st = run_chain<float>(100, 0.0, 0.01, 3, 500.0, 0, 9);
  CHECK(st.final_loss < 1e-3 * st.initial_loss);
  CHECK(st.kinetic_temperature < 0.05 * st.initial_loss / 100.0);
}

TEST_CASE("a state at rest at a stationary point never heats", "[nhc]") {
  QuarticChain f(10);
  Vector x = Vector::Zero(10);
  NhcOptions opt;
  NoseHooverChain nhc(opt, 10);
  PhaseState p = nhc.rest_start();
  Vector g(10);
  for (int s = 0; s < 1000; ++s) nhc.step(x, p, 1.0, f, g);
  CHECK(x.isZero());
  CHECK(p.kinetic == 0.0);
}

TEST_CASE("same seed, same bits: two simmering trajectories are identical", "[nhc][determinism]") {
  const auto run = [] {
    Rng rng(31);
    model::Network net = model::build_network({"2-8-8-3", model::Activation::tanh, model::Activation::linear});
    net.initialize(model::Init::glorot_normal, rng);
    Matrix x(20, 2), y = Matrix::Zero(20, 3);
    for (Index i = 0; i < 20; ++i) {
      x(i, 0) = rng.uniform(-1, 1);
      x(i, 1) = rng.uniform(-1, 1);
      y(i, static_cast<Index>(rng.below(3))) = 1.0;
    }
    NetworkObjective f(net, model::LossKind::cce, x, y);
    NhcOptions opt;
    opt.time_step = 0.01;
    Trajectory traj(f, opt, constant_schedule(0.01), NoseHooverChain(opt, net.parameter_count()).rest_start());
    for (int s = 0; s < 500; ++s) traj.advance();
    return std::pair{Vector(net.parameters()), Vector(traj.phase().chain.w)};
  };
  const auto a = run();
  const auto b = run();
  CHECK(a.first == b.first);  // exact equality, not approximate
  CHECK(a.second == b.second);
}
