#pragma once
/// \file
/// One simmering trajectory: a network's parameters moving under the NHC integrator with a
/// temperature schedule. Owns the phase state and the step counter; the parameters are the
/// network's own vector.

#include <cstdint>

#include "simmer/core/names.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/objective.hpp"
#include "simmer/train/schedule.hpp"

namespace simmer::train {

enum class StartMode { retrofit, abinitio };

inline constexpr Names<StartMode, 2> kStartModeNames{
    "mode", {{{StartMode::retrofit, "retrofit"}, {StartMode::abinitio, "abinitio"}}}};
inline StartMode parse_start_mode(const std::string& name) { return kStartModeNames.parse(name); }
inline std::string to_string(StartMode m) { return std::string(kStartModeNames.name(m)); }

/// The particles' velocity when simmering starts (NoseHooverChain::*_start).
enum class StartVelocity {
  adam,    ///< (x_last − x_previous)/h from Adam's last step: the paper's retrofit
  zero,    ///< at rest: the paper's ab initio choice
  thermal  ///< Maxwell–Boltzmann at the schedule's first T > 0
};
inline constexpr Names<StartVelocity, 3> kStartVelocityNames{
    "start velocity",
    {{{StartVelocity::adam, "adam"}, {StartVelocity::zero, "zero"}, {StartVelocity::thermal, "thermal"}}}};
/// One of kStartVelocityNames, or "auto": the paper's choice for the mode (adam for retrofit,
/// zero for ab initio). adam needs retrofit mode.
StartVelocity parse_start_velocity(const std::string& name, StartMode mode);
inline std::string to_string(StartVelocity v) { return std::string(kStartVelocityNames.name(v)); }

/// What one step reports.
struct StepRecord {
  std::int64_t step = 0;     ///< 0-based index of the step just taken
  double temperature = 0.0;  ///< T used during the step
  double force_loss = 0;     ///< L where the step took its force (NoseHooverChain::step)
};

template <class S>
class BasicTrajectory {
 public:
  using PhaseState = BasicPhaseState<S>;
  /// `objective` supplies the loss over the training set; the start state comes from
  /// NoseHooverChain::rest_start or retrofit_start.
  BasicTrajectory(BasicNetworkObjective<S>& objective, const NhcOptions& nhc, Schedule schedule, PhaseState start,
                  std::int64_t first_step = 0);

  /// The random stream of the Langevin thermostat (the trajectory's own; must outlive it).
  void set_noise(Rng* noise) { noise_ = noise; }

  /// Advance one step at T = schedule(step()).
  StepRecord advance();

  [[nodiscard]] std::int64_t step() const { return step_; }
  [[nodiscard]] const PhaseState& phase() const { return phase_; }
  [[nodiscard]] PhaseState& phase() { return phase_; }
  [[nodiscard]] const BasicNoseHooverChain<S>& integrator() const { return nhc_; }
  [[nodiscard]] const VectorOf<S>& parameters() const { return objective_->network().parameters(); }
  [[nodiscard]] double temperature_at(std::int64_t step) const { return schedule_(step); }

 private:
  BasicNetworkObjective<S>* objective_;
  BasicNoseHooverChain<S> nhc_;
  Schedule schedule_;
  PhaseState phase_;
  std::int64_t step_;
  Rng* noise_ = nullptr;
};

using Trajectory = BasicTrajectory<double>;

}  // namespace simmer::train
