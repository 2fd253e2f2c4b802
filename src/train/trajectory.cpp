#include "simmer/train/trajectory.hpp"

#include "simmer/core/error.hpp"

namespace simmer::train {

StartMode parse_start_mode(const std::string& name) {
  if (name == "retrofit") return StartMode::retrofit;
  if (name == "abinitio" || name == "ab_initio") return StartMode::abinitio;
  throw Error("unknown mode '" + name + "' (choices: retrofit, abinitio)");
}

std::string to_string(StartMode m) { return m == StartMode::retrofit ? "retrofit" : "abinitio"; }

StartVelocity parse_start_velocity(const std::string& name, StartMode mode) {
  if (name == "auto") return mode == StartMode::retrofit ? StartVelocity::adam : StartVelocity::zero;
  if (name == "adam") {
    if (mode != StartMode::retrofit) {
      throw FieldError("StartVelocity", name, "needs retrofit mode (Adam's last step)");
    }
    return StartVelocity::adam;
  }
  if (name == "zero") return StartVelocity::zero;
  if (name == "thermal") return StartVelocity::thermal;
  throw FieldError("StartVelocity", name, "choices: auto, adam, zero, thermal");
}

std::string to_string(StartVelocity v) {
  switch (v) {
    case StartVelocity::adam:
      return "adam";
    case StartVelocity::zero:
      return "zero";
    case StartVelocity::thermal:
      return "thermal";
  }
  return "?";
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
