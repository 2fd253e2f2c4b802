// A trajectory's step and its thermometers (chain.hpp; issue 29): simmer.time_step = auto chooses h
// from the measured stability limit over each stage's warm-up and fixes it for the window; the
// configurational temperature is sampled through the window.
#include <algorithm>
#include <cmath>
#include <string>

#include "simmer/core/error.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/train/configurational.hpp"
#include "simmer/train/stability.hpp"

namespace simmer::run {

template <class S>
double BasicChain<S>::measure_curvature() {
  const double lambda = stability_probe().lambda_max;
  warmup_lambda_ = std::max(warmup_lambda_, lambda);
  return lambda;
}

template <class S>
double BasicChain<S>::step_limit(double lambda_max, std::int64_t stage) const {
  const double dof = static_cast<double>(net_.parameter_count()) - p_->nhc.dof_offset;  // N_f, as the integrator's
  return std::min(train::CurvatureEstimate{lambda_max, 0}.time_step_limit(),
                  train::thermostat_step_limit(p_->nhc, dof, p_->stage_temperature(stage)));
}

template <class S>
void BasicChain<S>::auto_step(std::int64_t next) {
  const Problem& p = *p_;
  const std::int64_t stage = p.stage_of(index_, next);
  const std::int64_t first = p.stage_first_step(stage);
  const std::int64_t window = first + p.run.steps - p.sampling.window;
  const std::int64_t warmup = window - first;
  if (next == window) {
    // Fixed for the window from the warm-up's stiffest point (the start's alone without a warm-up).
    if (next == first) {
      warmup_lambda_ = 0.0;
      measure_curvature();
    }
    set_time_step(p.auto_step.fraction * step_limit(warmup_lambda_, stage), stage);
    return;
  }
  if (next > window) return;
  bool estimate = next == first;  // a stage's start always measures (stage 0's from start())
  for (int j = 1; j < p.auto_step.estimates && !estimate; ++j) {
    estimate = next == first + j * warmup / p.auto_step.estimates;
  }
  if (!estimate) return;
  if (next == first) warmup_lambda_ = 0.0;  // a new stage's warm-up
  set_time_step(p.auto_step.fraction * step_limit(measure_curvature(), stage), stage);
}

template <class S>
void BasicChain<S>::set_time_step(double h, std::int64_t stage) {
  if (!(h > 0.0) || !std::isfinite(h)) {
    throw Error("trajectory " + std::to_string(index_) + ": simmer.time_step = auto found no finite step (h = " +
                std::to_string(h) + "): the loss's curvature here is not finite");
  }
  time_step_ = h;
  diag_.at(static_cast<std::size_t>(stage)).set_time_step(h);
  if (!started()) return;
  set_trajectory(trajectory_->phase(), trajectory_->step());
}

template <class S>
void BasicChain<S>::sample_thermometers(const train::StepRecord& rec) {
  const std::int64_t every = p_->diagnostics.configurational_every;
  ensemble::TrajectoryDiagnostics& diag = diag_[static_cast<std::size_t>(p_->stage_of(index_, rec.step))];
  const std::int64_t into = rec.step + 1 - diag.window_first_step();
  if (every <= 0 || into <= 0 || into % every != 0) return;
  const double t0 = cpu_seconds();
  const auto sample =
      train::configurational_sample(*objective_, net_.parameters(), rec.temperature, &masses_, &p_->nhc.prior_precision,
                                    thermometer_rng_, p_->diagnostics.configurational_probes);
  diag.add_thermometers(sample, trajectory_->integrator().kinetic_temperature(trajectory_->phase()), rec.temperature);
  eval_seconds_ += cpu_seconds() - t0;
}

#define SIMMER_INSTANTIATE(S)                                                             \
  template double BasicChain<S>::measure_curvature();                                     \
  template double BasicChain<S>::step_limit(double lambda_max, std::int64_t stage) const; \
  template void BasicChain<S>::auto_step(std::int64_t next);                              \
  template void BasicChain<S>::set_time_step(double h, std::int64_t stage);               \
  template void BasicChain<S>::sample_thermometers(const train::StepRecord& rec);
SIMMER_INSTANTIATE(double)
SIMMER_INSTANTIATE(float)
#undef SIMMER_INSTANTIATE

}  // namespace simmer::run
