#include "simmer/train/schedule.hpp"

#include <algorithm>
#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::train {

double StepRamp::operator()(std::int64_t step) const {
  if (increment == 0.0) return target;
  const auto stages = static_cast<double>(step / every);
  return std::min(target, initial + increment * stages);
}

void StepRamp::validate() const {
  const auto str = [](double v) { return std::to_string(v); };
  if (!(initial >= 0.0) || !std::isfinite(initial)) {
    throw FieldError("StepRamp.initial", str(initial), "must be a finite temperature >= 0");
  }
  if (!(target >= 0.0) || !std::isfinite(target)) {
    throw FieldError("StepRamp.target", str(target), "must be a finite temperature >= 0");
  }
  if (target < initial) {
    throw FieldError("StepRamp.target", str(target),
                     "is below the initial temperature " + str(initial) + " (the ramp only rises)");
  }
  if (!(increment >= 0.0) || !std::isfinite(increment)) {
    throw FieldError("StepRamp.increment", str(increment), "must be >= 0 (0: constant temperature)");
  }
  if (increment == 0.0 && target != initial) {
    throw FieldError("StepRamp.increment", str(increment),
                     "is 0 but T_initial != T_target: give a step or set them equal");
  }
  if (every <= 0) throw FieldError("StepRamp.every", std::to_string(every), "must be > 0");
}

std::int64_t StepRamp::steps_to_target() const {
  if (increment == 0.0 || target <= initial) return 0;
  const auto stages = static_cast<std::int64_t>(std::ceil((target - initial) / increment - 1e-9));
  return stages * every;
}

double StepRamp::first_positive() const {
  if (initial > 0.0 || increment == 0.0) return (*this)(0) > 0.0 ? (*this)(0) : 0.0;
  return std::min(target, initial + increment);
}

StepRamp StepRamp::scaled(double factor) const {
  return {initial * factor, target * factor, increment * factor, every};
}

Schedule constant_schedule(double temperature) {
  return [temperature](std::int64_t) { return temperature; };
}

Schedule ramp_schedule(const StepRamp& ramp) {
  ramp.validate();
  return ramp;
}

}  // namespace simmer::train
