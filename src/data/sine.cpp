#include "simmer/data/sine.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::data {

double sine_truth(double x) { return std::sin(2.0 * std::numbers::pi * x); }

Dataset make_noisy_sine(const SineSpec& spec, Rng& rng) {
  if (spec.points < 2) {
    throw Error("sine: points = " + std::to_string(spec.points) + ": need at least 2");
  }
  if (!(std::isfinite(spec.x_min) && std::isfinite(spec.x_max) && spec.x_min < spec.x_max)) {
    throw Error("sine: x range [" + std::to_string(spec.x_min) + ", " + std::to_string(spec.x_max) +
                "]: need finite x_min < x_max");
  }
  if (!(std::isfinite(spec.noise) && spec.noise >= 0.0)) {
    throw Error("sine: noise = " + std::to_string(spec.noise) + ": must be finite and >= 0");
  }

  const auto points = static_cast<Index>(spec.points);
  const double step_count = static_cast<double>(points - 1);
  Dataset d;
  d.task = Task::regression;
  d.feature_names = {"x"};
  d.target_names = {"y"};
  d.x.resize(points, 1);
  d.y.resize(points, 1);
  for (Index i = 0; i < points; ++i) {
    // i / (points - 1) rather than accumulated steps, so the grid has no drift; the last
    // point is set exactly so the ends are the range the user asked for.
    const double t = static_cast<double>(i) / step_count;
    const double x = (i == points - 1) ? spec.x_max : spec.x_min + t * (spec.x_max - spec.x_min);
    d.x(i, 0) = x;
    // One draw per point even when noise == 0, so the generator ends in the same state.
    d.y(i, 0) = sine_truth(x) + spec.noise * rng.normal();
  }
  return d;
}

}  // namespace simmer::data
