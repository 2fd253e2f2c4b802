#pragma once
/// \file
/// The Nosé–Hoover chain integrator of SIMMERING.md §3: unit-mass particles x with velocities v
/// in the potential L(x), thermostatted by a chain of length N_c at temperature T.

#include <cstdint>
#include <vector>

#include "simmer/core/types.hpp"
#include "simmer/train/objective.hpp"

namespace simmer::train {

struct NhcOptions {
  double time_step = 0.002;          ///< h (the paper's "learning rate")
  int chain_length = 3;              ///< N_c (choice, SIMMERING.md §2)
  std::vector<double> masses;        ///< Q_1..Q_Nc; empty means all 1 (the paper)
  double dof_offset = 0.0;           ///< N_f = N - dof_offset (choice; paper's N_e + N_ine)
  void validate() const;
};

/// Thermostat chain state: positions s_k and velocities w_k, k = 1..N_c (stored 0-based).
struct NhcState {
  Vector s;
  Vector w;
  static NhcState zeros(int chain_length);
};

/// Particle + chain state of one trajectory, apart from x (which is the network's own
/// parameter vector, updated in place).
struct PhaseState {
  Vector v;            ///< particle velocities
  NhcState chain;
  double kinetic = 0;  ///< Σ v² (kept current so G_1 needs no extra pass)
};

class NoseHooverChain {
 public:
  NoseHooverChain(const NhcOptions& options, Index parameter_count);

  /// One step of length h at temperature T, in the nine-update order of SIMMERING.md §3, with
  /// one gradient at the half-step position. `grad` is scratch (size N; pass the network's
  /// gradient vector to avoid copies). Returns L at the half-step position.
  double step(Vector& x, PhaseState& phase, double temperature, Objective& objective,
              Vector& grad) const;

  /// Σ v² / N_f.
  [[nodiscard]] double kinetic_temperature(const PhaseState& phase) const;

  /// H_ext = Σ ½ v² + L + Σ ½ Q_k w_k² + N_f T s_1 + Σ_{k≥2} T s_k (conserved at constant T).
  [[nodiscard]] double extended_energy(const PhaseState& phase, double loss,
                                       double temperature) const;

  [[nodiscard]] double degrees_of_freedom() const { return dof_; }
  [[nodiscard]] const NhcOptions& options() const { return options_; }

  /// Start states: ab initio (v = 0) and retrofit (v = (x_last - x_previous) / h).
  [[nodiscard]] PhaseState rest_start() const;
  [[nodiscard]] PhaseState retrofit_start(const Vector& x_last, const Vector& x_previous) const;

 private:
  /// G_k (1-based k) from the current state.
  [[nodiscard]] double chain_force(const PhaseState& p, int k, double temperature) const;

  NhcOptions options_;
  Vector mass_;
  Index n_;
  double dof_;
};

}  // namespace simmer::train
