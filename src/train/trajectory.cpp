#include "simmer/train/trajectory.hpp"

#include "simmer/core/error.hpp"

namespace simmer::train {

StartVelocity parse_start_velocity(const std::string& name, StartMode mode) {
  if (name == "auto") return mode == StartMode::retrofit ? StartVelocity::adam : StartVelocity::zero;
  if (!kStartVelocityNames.contains(name)) {
    throw FieldError("StartVelocity", name, "choices: auto, " + kStartVelocityNames.choices());
  }
  const StartVelocity v = kStartVelocityNames.parse(name);
  if (v == StartVelocity::adam && mode != StartMode::retrofit) {
    throw FieldError("StartVelocity", name, "needs retrofit mode (Adam's last step)");
  }
  return v;
}

template <class S>
BasicTrajectory<S>::BasicTrajectory(BasicNetworkObjective<S>& objective, const NhcOptions& nhc, Schedule schedule,
                                    PhaseState start, std::int64_t first_step)
    : objective_(&objective),
      nhc_(nhc, objective.parameter_count()),
      schedule_(std::move(schedule)),
      phase_(std::move(start)),
      step_(first_step) {
  if (phase_.v.size() != objective.parameter_count()) {
    throw Error("trajectory: start velocity has the wrong size");
  }
}

template <class S>
StepRecord BasicTrajectory<S>::advance() {
  auto& net = objective_->network();
  const double temperature = schedule_(step_);
  const double loss = nhc_.step(net.parameters(), phase_, temperature, *objective_, net.gradient(), noise_);
  return {step_++, temperature, loss};
}

template class BasicTrajectory<double>;
template class BasicTrajectory<float>;

}  // namespace simmer::train
