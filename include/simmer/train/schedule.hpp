#pragma once
/// \file
/// Temperature schedules: callables of the step (HOOMD's Variant), docs/METHOD.md §4.

#include <cstdint>
#include <functional>

namespace simmer::train {

using Schedule = std::function<double(std::int64_t step)>;

/// T(step) = min(T_target, T_initial + ΔT · floor(step / every)). With ΔT = 0 (or T_initial ==
/// T_target) it is constant.
struct StepRamp {
  double initial = 0.0;
  double target = 0.0;
  double increment = 0.0;
  std::int64_t every = 1;
  double operator()(std::int64_t step) const;
  /// Throws simmer::Error naming "simmer.<key>" and the value when inconsistent.
  void validate() const;
  /// First step at which T reaches the target.
  [[nodiscard]] std::int64_t steps_to_target() const;
  /// The first temperature > 0 of the schedule (0 when it stays at 0).
  [[nodiscard]] double first_positive() const;
  /// The same schedule with every temperature multiplied by `factor` (a change of units).
  [[nodiscard]] StepRamp scaled(double factor) const;
};

Schedule constant_schedule(double temperature);
Schedule ramp_schedule(const StepRamp& ramp);

}  // namespace simmer::train
