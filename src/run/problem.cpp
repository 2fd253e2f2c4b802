#include "simmer/run/problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "simmer/train/posterior.hpp"
#include "simmer/train/stability.hpp"

namespace simmer::run {

StabilityVerdict judge_stability(double lambda_max, int trajectory, double time_step,
                                 HealthOptions::StabilityCheck check) {
  StabilityVerdict v;
  v.lambda_max = lambda_max;
  v.trajectory = trajectory;
  v.limit = train::CurvatureEstimate{lambda_max, 0}.time_step_limit();
  v.time_step = time_step;
  v.stable = time_step < v.limit;
  v.proceed = v.stable || check != HealthOptions::StabilityCheck::refuse;
  return v;
}

std::string StabilityVerdict::report() const {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "stability: largest loss-Hessian eigenvalue at the start %.4g (trajectory %d): leapfrog "
                "limit 2/sqrt(lambda) = %.4g, time step h = %.4g%s: h sqrt(lambda)/2 = %.3g, the step at "
                "%.3g%% of its limit\n",
                lambda_max, trajectory, limit, time_step, stable ? " (stable)" : " (ABOVE the limit)",
                time_step / limit, 100.0 * time_step / limit);
  return buf;
}

std::string StabilityVerdict::problem() const {
  if (stable) return "";
  char buf[512];
  if (proceed) {
    std::snprintf(buf, sizeof buf,
                  "simmer_mpi: warning: simmer.time_step = %g is above the stability limit %.4g; "
                  "continuing (simmer.stability_check = warn)\n",
                  time_step, limit);
  } else {
    std::snprintf(buf, sizeof buf,
                  "simmer_mpi: error: option 'simmer.time_step' = '%g': above the leapfrog stability "
                  "limit 2/sqrt(lambda_max) = %.4g at the start point (lambda_max = %.4g, trajectory %d); "
                  "use simmer.time_step < %.3g, or simmer.stability_check = warn to run anyway\n",
                  time_step, limit, lambda_max, trajectory, 0.9 * limit);
  }
  return buf;
}

std::string too_hot(const Problem& p, double h, const std::string& step) {
  const double unit_scale = p.posterior_units ? p.bayes_temperature : 1.0;
  const std::string unit = p.posterior_units ? " x T_Bayes" : "";
  const double hottest = hottest_temperature(p);
  const double dof = static_cast<double>(p.parameters) - p.nhc.dof_offset;
  const auto text = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  // T in loss units, and in the user's when they are multiples of T_Bayes.
  const std::string at =
      "at T = " + text(hottest) + (p.posterior_units ? " (" + text(hottest / unit_scale) + unit + ")" : "");
  if (!std::isfinite(2.0 * std::max(dof, 1.0) * hottest)) {
    return "is too hot: " + at + " the kinetic energy's scale N_f T (N_f = " + text(dof) +
           ") is not a finite number, so no step can integrate it; the hottest T is below " +
           text(std::numeric_limits<double>::max() / (2.0 * std::max(dof, 1.0)) / unit_scale) + unit;
  }
  const double displacement = h * std::sqrt(hottest);
  if (!(displacement > kMaxThermalDisplacement)) return "";
  const double limit = std::pow(kMaxThermalDisplacement / h, 2.0);
  return "is too hot for " + step + ": " + at + " one step moves a parameter by h sqrt(T) = " + text(displacement) +
         " (more than " + text(kMaxThermalDisplacement) +
         "), so the trajectory blows up at its first step; the hottest T this step allows is " +
         text(limit / unit_scale) + unit;
}

void Problem::set_noise_sd(double sd, std::string source) {
  noise_sd = sd;
  noise_sd_source = std::move(source);
  bayes_temperature = train::bayes_temperature(loss, train.rows(), outputs, sd);
  if (posterior_pending) {
    ramp = ramp.scaled(bayes_temperature);
    for (auto& t : ladder.rungs) t *= bayes_temperature;
  }
  noise_pending = false;
  posterior_pending = false;
}

void Problem::fill_prior_precision() {
  if (prior_sigma <= 0.0) return;
  nhc.prior_precision =
      train::gaussian_prior_precision(model::network_layout(architecture), parameters, prior_sigma, prior_scaling);
}

train::Schedule Problem::schedule(std::int64_t index) const {
  if (ladder.rungs.empty()) return train::ramp_schedule(ramp);
  if (parallel_rungs()) return train::constant_schedule(stage_temperature(stage_of(index, 0)));
  const std::vector<double> rungs = ladder.rungs;
  const std::int64_t steps = std::max<std::int64_t>(run.steps, 1);
  return [rungs, steps](std::int64_t step) {
    const auto k = static_cast<std::size_t>(std::max<std::int64_t>(step, 0) / steps);
    return rungs[std::min(k, rungs.size() - 1)];
  };
}

}  // namespace simmer::run
