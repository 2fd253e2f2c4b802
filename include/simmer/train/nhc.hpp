#pragma once
/// \file
/// The Nosé–Hoover chain integrator of docs/METHOD.md §3: unit-mass particles x with velocities v
/// in the potential L(x), thermostatted by a chain of length N_c at temperature T. As options
/// (not the paper's), the same class integrates Langevin dynamics instead of the chain, and gives
/// every parameter its own mass m_i (x' = v, v' = −∇U/m − ξ v, the thermostat on Σ m_i v_i²:
/// docs/MIXING.md).

#include <cstdint>
#include <vector>

#include "simmer/core/names.hpp"
#include "simmer/core/rng.hpp"
#include "simmer/core/types.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::train {

/// Which thermostat couples the particles to T.
enum class Thermostat {
  nose_hoover_chain,            ///< the paper: one chain on the total kinetic energy (deterministic)
  langevin,                     ///< friction γ and noise on every velocity (stochastic, ergodic)
  massive_nose_hoover_langevin  ///< one Nosé–Hoover variable per parameter, with noise on it
};
inline constexpr Names<Thermostat, 3> kThermostatNames{
    "thermostat",
    {{{Thermostat::nose_hoover_chain, "nose_hoover"},
      {Thermostat::langevin, "langevin"},
      {Thermostat::massive_nose_hoover_langevin, "massive_nose_hoover_langevin"}}}};
/// Whether `t` keeps Nosé–Hoover–Langevin variables (NhcOptions::thermostat_steps).
inline bool is_nose_hoover_langevin(Thermostat t) { return t == Thermostat::massive_nose_hoover_langevin; }
/// Whether the integrator with `t` conserves H_ext (extended_energy) at constant T: only the
/// deterministic chain; the others' heat leaves through friction and noise.
inline bool conserves_extended_energy(Thermostat t) { return t == Thermostat::nose_hoover_chain; }
inline Thermostat parse_thermostat(const std::string& name) { return kThermostatNames.parse(name); }
inline std::string to_string(Thermostat t) { return std::string(kThermostatNames.name(t)); }

/// Where one step of the Langevin and massive Nosé–Hoover–Langevin thermostats takes its force
/// and applies its thermostat (A: half a drift of x, B: a kick of v by the force, O: the
/// thermostat; the Nosé–Hoover chain keeps the paper's nine-update order whatever this says).
enum class Splitting {
  /// A O B O A (massive Nosé–Hoover–Langevin) and A B O B A (Langevin): the force at the
  /// half-step position. Under the massive thermostat the positions of a harmonic direction of
  /// frequency ω run cold by a factor 1 − (hω/2)²; under Langevin they are within 1 % at hω = 1
  /// (tests/train/test_ergodic_thermostats.cpp).
  midpoint,
  /// A O A B, which is Leimkuhler & Matthews's (2013) B A O A B shifted by half a kick: the force
  /// at the new position, the thermostat between the two half drifts, one gradient a step. In a
  /// harmonic well the positions are distributed exactly at any stable step (the velocities after
  /// the kick carry the step's bias instead). On the sine posterior it runs as warm as midpoint runs
  /// cold (docs/MIXING.md, "The splitting").
  baoab
};
inline constexpr Names<Splitting, 2> kSplittingNames{
    "splitting", {{{Splitting::midpoint, "midpoint"}, {Splitting::baoab, "baoab"}}}};

struct NhcOptions {
  double time_step = 0.002;    ///< h (the paper's "learning rate")
  int chain_length = 3;        ///< N_c (choice, docs/METHOD.md §2)
  std::vector<double> masses;  ///< Q_1..Q_Nc; empty means all 1 (the paper)
  double dof_offset = 0.0;     ///< N_f = N - dof_offset (choice; paper's N_e + N_ine)
  /// Gaussian prior N(x; 0, diag σ_i²) as precisions 1/σ_i², one per parameter; empty means no
  /// prior (the paper). The sampled density becomes exp(−L/T)·N(x; 0, σ²), i.e. the potential
  /// U = L + T Σ x_i²/(2σ_i²) with force −∇L − T x/σ²; H_ext counts U instead of L. The prior
  /// term scales with T, so the prior's own distribution does not change while T ramps; at
  /// T = 0 it exerts no force (the dynamics then only cool in L).
  Vector prior_precision;
  /// Langevin instead of the chain (and the Nosé–Hoover–Langevin thermostats): one gradient per step at the half-step
  /// position, as the chain's step ("ABOBA"): x += h/2 v; v -= h/2 ∇U; v = e^{−γh} v + sqrt((1 − e^{−2γh}) T) ξ; v -=
  /// h/2 ∇U; x += h/2 v. The chain's masses and length are then unused. A single global Nosé–Hoover chain only rescales
  /// all velocities by one factor, so it does not equilibrate directions of the potential that are decoupled from the
  /// rest (measured: flat directions under a Gaussian prior, docs/STATIONARITY.md); Langevin's per-velocity noise does.
  Thermostat thermostat = Thermostat::nose_hoover_chain;
  double friction = 1.0;  ///< Langevin γ (per time unit)
  /// The massive Nosé–Hoover–Langevin thermostat (Leimkuhler, Noorizadeh & Theil 2009, one per
  /// parameter as massive Nosé–Hoover chains thermostat every degree of freedom): a variable ξ_i
  /// for each parameter with
  ///   v_i' = −∇U_i/m_i − ξ_i v_i,   ξ_i' = (m_i v_i² / T − 1)/τ² − γ ξ_i + sqrt(2γ/τ²) η_i:
  /// Nosé–Hoover with the Martyna mass Q = T τ² at the current T, plus an Ornstein–Uhlenbeck
  /// process on ξ alone. The invariant law is exp(−U/T) × Maxwell–Boltzmann × N(ξ_i; 0, 1/τ²),
  /// ergodic where one deterministic global thermostat is not (nearly harmonic directions: a stiff
  /// pair is off by 8 % under the chain, tests/train/test_ergodic_thermostats.cpp). The particles
  /// get no noise of their own. τ = thermostat_steps · h and γ = 1/τ, so the thermostat's time
  /// scale follows the step (simmer.time_step = auto). One global such variable (Leimkuhler et
  /// al.'s own) was tried and left out: T_conf/T 0.948 on the coupled harmonic chain and 0.969 on
  /// the quartic chain at h = 0.01 (4000 time units), where the massive one gives 1.002 and 1.007.
  /// 10, not 100: at τ = 100 h the regression rungs stayed cold (T_conf/T 0.17–0.43 on the sine,
  /// 0.29–0.43 on Auto-MPG M); at 10 h they sit at 0.97–1.17 (docs/MIXING.md, "The thermostat's
  /// time scale").
  double thermostat_steps = 10.0;
  /// The Langevin and massive Nosé–Hoover–Langevin thermostats' order of updates (Splitting).
  Splitting splitting = Splitting::midpoint;
  /// Per-parameter masses m_i (finite, > 0), one per parameter; empty means all 1 (the paper,
  /// and bit for bit today's arithmetic). With masses the step's kick is −h ∇U_i / m_i, the
  /// kinetic energy Σ ½ m_i v_i² (which G_1, the kinetic temperature and H_ext use), Langevin's
  /// noise on v_i has variance (1 − e^{−2γh}) T/m_i and a thermal start draws v_i ~ N(0, T/m_i).
  /// The sampled distribution of x does not change (exp(−U/T)); its time scales do: a direction
  /// of curvature k oscillates with period 2π sqrt(m/k), so the stability limit is
  /// h < 2/sqrt(λ_max(M^(−1/2) H M^(−1/2))).
  Vector parameter_masses;
  void validate() const;
};

/// Thermostat chain state: positions s_k and velocities w_k, k = 1..N_c (stored 0-based). The
/// massive Nosé–Hoover–Langevin thermostat keeps its variables ξ_i in w (one per parameter) and
/// no s.
struct NhcState {
  Vector s;
  Vector w;
  static NhcState zeros(int chain_length);
  /// Checkpoint fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(s, w);
  }
};

/// Particle + chain state of one trajectory, apart from x (which is the network's own
/// parameter vector, updated in place).
template <class S>
struct BasicPhaseState {
  VectorOf<S> v;   ///< particle velocities, in the compute precision
  NhcState chain;  ///< always float64
  /// Σ m_i v_i², summed in float64 (kept current so G_1 needs no extra pass). With
  /// Splitting::baoab it is taken at the thermostat's update, between the two drifts, where the
  /// velocities are the thermostat's (Maxwell–Boltzmann in a harmonic well), not after the kick.
  double kinetic = 0;
  /// Checkpoint fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(v, chain, kinetic);
  }
};
using PhaseState = BasicPhaseState<double>;

/// The integrator in scalar S: the particle update x, v and the gradient are in S; the chain's
/// s, w, masses, Σ v², the kinetic temperature and H_ext are float64 whatever S is.
template <class S>
class BasicNoseHooverChain {
 public:
  SIMMER_SCALAR_TYPES(S);
  using PhaseState = BasicPhaseState<S>;
  BasicNoseHooverChain(const NhcOptions& options, Index parameter_count);

  /// One step of length h at temperature T, in the nine-update order of docs/METHOD.md §3, with
  /// one gradient at the half-step position (the Langevin thermostats: in NhcOptions::splitting's
  /// order, the gradient at the half-step or at the new position). `grad` is scratch (size N;
  /// pass the network's gradient vector to avoid copies). Returns L where the gradient was taken.
  /// `noise` supplies the Langevin thermostats' normal draws (required for them, unused by the
  /// chain).
  double step(Vector& x, PhaseState& phase, double temperature, BasicObjective<S>& objective, Vector& grad,
              Rng* noise = nullptr) const;

  /// Σ m_i v_i² / N_f.
  [[nodiscard]] double kinetic_temperature(const PhaseState& phase) const;

  /// Σ m_i v_i² in float64 (Σ v_i² with unit masses): twice the kinetic energy of `v`.
  [[nodiscard]] double twice_kinetic(const VectorOf<S>& v) const;
  [[nodiscard]] bool has_parameter_masses() const { return inverse_mass_.size() > 0; }

  /// H_ext = Σ ½ v² + U + Σ ½ Q_k w_k² + N_f T s_1 + Σ_{k≥2} T s_k (conserved at constant T),
  /// U = L + prior_energy(x, T): `loss` is L at the position `x`.
  [[nodiscard]] double extended_energy(const Vector& x, const PhaseState& phase, double loss, double temperature) const;

  /// T Σ x_i²/(2σ_i²): the prior's part of the potential (0 without a prior).
  [[nodiscard]] double prior_energy(const Vector& x, double temperature) const;
  [[nodiscard]] bool has_prior() const { return options_.prior_precision.size() > 0; }

  [[nodiscard]] double degrees_of_freedom() const { return dof_; }
  [[nodiscard]] const NhcOptions& options() const { return options_; }

  /// Start states: at rest (v = 0; the paper's ab initio choice), from Adam's last step
  /// (v = (x_last - x_previous) / h; the paper's retrofit), or thermal: every v_i drawn from the
  /// Maxwell–Boltzmann distribution N(0, T/m_i) at `temperature`.
  [[nodiscard]] PhaseState rest_start() const;
  [[nodiscard]] PhaseState retrofit_start(const Vector& x_last, const Vector& x_previous) const;
  [[nodiscard]] PhaseState thermal_start(double temperature, Rng& rng) const;

 private:
  /// G_k (1-based k) from the current state.
  [[nodiscard]] double chain_force(const PhaseState& p, int k, double temperature) const;
  /// Splitting::baoab's step, A O A B, whichever thermostat: `thermostat()` updates the velocities
  /// over the whole step h (and sets p.kinetic). Returns L at the new position.
  template <class Update>
  double baoab_step(Vector& x, PhaseState& p, double temperature, BasicObjective<S>& objective, Vector& grad,
                    const Update& thermostat) const;
  /// ∇U/m at x into `grad` (the loss's gradient, the prior's force at T, the masses); returns L.
  double acceleration(const Vector& x, double temperature, BasicObjective<S>& objective, Vector& grad) const;
  /// The massive Nosé–Hoover–Langevin step (NhcOptions::thermostat_steps).
  double nose_hoover_langevin_step(Vector& x, PhaseState& p, double temperature, BasicObjective<S>& objective,
                                   Vector& grad, Rng& noise) const;
  /// A thermostat update of length dt (half of a step's with Splitting::midpoint, all of it with
  /// baoab): ξ_i kicked by dt/2, v_i scaled by e^{−ξ_i dt}, ξ_i kicked by dt/2 again (from the
  /// scaled v_i), for every parameter.
  void nose_hoover_langevin_update(PhaseState& p, double temperature, double dt) const;
  /// The thermostat state a start has: the chain's N_c zeros, or every ξ_i = 0.
  [[nodiscard]] NhcState zero_thermostat() const;

  NhcOptions options_;
  VectorOf<S> prior_;             ///< the prior precisions in S (empty without a prior)
  VectorOf<S> inverse_mass_;      ///< 1/m_i in S (empty: unit masses)
  ::simmer::Vector velocity_sd_;  ///< 1/sqrt(m_i): v_i's Maxwell–Boltzmann sd at T = 1
  ::simmer::Vector mass_;
  // The massive Nosé–Hoover–Langevin step's scratch (sized once, empty for the other thermostats;
  // a chain belongs to one trajectory): the exp(−ξ_i dt) factors and ξ's normal draws.
  mutable ::simmer::Vector decay_;
  mutable VectorOf<float> normals_;
  Index n_;
  double dof_;
};

using NoseHooverChain = BasicNoseHooverChain<double>;

/// Martyna–Tuckerman–Klein thermostat masses for a chain of `chain_length` at temperature T
/// with characteristic time τ (time units of h): Q_1 = N_f T τ², Q_k = T τ² for k ≥ 2. They
/// make each link's natural period about τ at T; for a ramp they are set at its target T.
/// Throws simmer::Error when T or τ is not > 0.
std::vector<double> martyna_masses(int chain_length, double degrees_of_freedom, double temperature, double tau);

}  // namespace simmer::train
