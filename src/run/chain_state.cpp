// A trajectory's saved state (run/chain.hpp): its checkpoint as one field list for both
// directions (BasicChain::fields, core/visit.hpp), and its end-of-run report.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "simmer/core/error.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/train/exchange.hpp"

namespace simmer::run {

void ChainReport::save(ByteWriter& w) const { save_fields(w, *this); }

ChainReport ChainReport::load(ByteReader& r) {
  ChainReport c;
  load_fields(r, c, Rest::last);
  return c;
}

template <class S>
ChainReport BasicChain<S>::report() {
  ChainReport r;
  r.index = index_;
  if (baseline_scores_.size() == p_->scored_sets()) {
    r.baseline = baseline_scores_;
  } else {  // a trajectory that stopped before its first member has no baseline
    const std::vector<double> nan(ensemble::SetScores::kFields, std::numeric_limits<double>::quiet_NaN());
    r.baseline.assign(p_->scored_sets(), ensemble::SetScores::from(nan.data()));
  }
  // Stages that ended kept their summary then; the current one ends here; a divergence belongs
  // to the stage it happened in (later stages never started: no members).
  const std::int64_t diverged_stage = diverged_step_ >= 0 ? p_->stage_of(index_, diverged_step_) : -1;
  for (std::size_t k = 0; k < diag_.size(); ++k) {
    StageReport stage;
    stage.summary = k < ended_.size()
                        ? ended_[k]
                        : diag_[k].summary(net_.parameters(), p_->prior_rms,
                                           diverged_stage == static_cast<std::int64_t>(k), start_loss_[k]);
    stage.start_loss = start_loss_[k];
    r.stages.push_back(std::move(stage));
  }
  r.diverged_at = diverged_step_;
  r.slow_to_heat_at = slow_to_heat_step_;
  if (p_->adam.keep == train::AdamKeep::best_validation && adam_best_.size() == net_.parameter_count()) {
    r.adam_kept_epoch = adam_best_epoch_;
  }
  if (masses_.size() > 0) {
    std::vector<double> sorted(masses_.data(), masses_.data() + masses_.size());
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    r.masses = {sorted.front(), n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]), sorted.back()};
  }
  r.curvature_start = curvature_start_;
  r.curvature_end = curvature_end_;
  r.draws_digest = draws_digest_.value;
  r.draws = rows_.draw_first + rows_.draw_count;
  r.trace_digest = trace_digest_.value;
  r.trace_rows = trace_count_;
  r.tracked_digest = tracked_digest_.value;
  r.tracked_rows = tracked_count_;
  return r;
}

template <class S>
template <class Ar>
bool BasicChain<S>::fields(Ar& ar, std::int64_t step, train::BasicPhaseState<S>& loaded) {
  std::int64_t index = index_;
  bool simmering = started();
  ar(index, simmering);
  ar.require(index == index_, "chains out of order");
  const auto has_parameter_count = [&](const VectorOf<S>& x) { return x.size() == net_.parameter_count(); };
  if (!simmering) {
    // During Adam (a retrofit's first phase): everything its remaining epochs depend on.
    ar.require(step == 0, "a trajectory in its Adam phase at simmering step " + std::to_string(step));
    // The network's parameters keep their size (its layers are views into them).
    ar(minibatch_rng_, shaped(net_.parameters()), adam_.m, adam_.v, adam_.t, adam_.epoch, adam_.previous, trace_count_,
       trace_digest_.value, adam_best_, adam_best_previous_, adam_best_epoch_, adam_best_loss_);
    ar.require(has_parameter_count(adam_.m) && has_parameter_count(adam_.v) && has_parameter_count(adam_.previous),
               "Adam's moments have the wrong size");
    ar.require(adam_.epoch >= 0 && adam_.epoch <= p_->adam.epochs, "Adam epoch out of range");
    return false;
  }
  ar(noise_rng_, thermometer_rng_, mass_rng_, shaped(net_.parameters()), masses_, adaptation_, configuration_,
     time_step_, warmup_lambda_);
  ar.require(!adaptation_.active() || adaptation_.mean().size() == net_.parameter_count(),
             "a mass adaptation of the wrong size");
  ar.require(masses_.size() == 0 || masses_.size() == net_.parameter_count(), "parameter masses of the wrong size");
  if constexpr (Ar::loading) {
    ar(loaded);
    ar.require(has_parameter_count(loaded.v), "velocities of the wrong size");
  } else {
    ar(trajectory_->phase());
  }
  ar(next_sample_, members_, fixed(stage_members_), rows_.draw_first, trace_count_, sample_steps_, baseline_,
     baseline_scores_, fixed(start_loss_), curvature_start_, curvature_end_, fixed(diag_), ended_, last_loss_,
     diverged_step_, slow_to_heat_step_, stopped_, diverged_reason_, strikes_, last_energy_, last_check_temperature_,
     last_check_kinetic_, fixed(means_), draws_digest_.value, trace_digest_.value, tracked_digest_.value,
     tracked_count_);
  ar.require(ended_.size() <= diag_.size(), "ended stages out of range");
  ar.require(next_sample_ <= sample_steps_.size(), "next member out of range");
  return true;
}

template <class S>
void BasicChain<S>::save(ByteWriter& w) const {
  if (!rows_.params.empty() || !rows_.params32.empty() || !rows_.trace.empty()) {
    throw Error("internal: a chain is saved with rows not yet written");
  }
  Saver ar(w);
  train::BasicPhaseState<S> unused;
  // `fields` serves both directions, so it is not const; under a Saver it only reads.
  const_cast<BasicChain&>(*this).fields(ar, 0, unused);
}

template <class S>
void BasicChain<S>::load(ByteReader& r, std::int64_t step) {
  rows_ = ChainRows{};
  Loader ar(r);
  train::BasicPhaseState<S> phase;
  const bool simmering = fields(ar, step, phase);
  rows_.trace_first = trace_count_;
  if (!simmering) return;
  // This interval's partial ensemble starts empty (a checkpoint follows a gather); the running
  // means were loaded.
  for (auto& stage : votes_) {
    for (auto& v : stage) v.setZero();
  }
  for (auto& t : tracked_) t.clear();
  std::fill(interval_members_.begin(), interval_members_.end(), 0);
  set_trajectory(std::move(phase), step);
}

template <class S>
double BasicChain<S>::exchange_loss() {
  if (stopped_ || !started()) return std::numeric_limits<double>::quiet_NaN();
  return objective_->evaluate(net_.parameters());
}

template <class S>
void BasicChain<S>::save_configuration(ByteWriter& w) const {
  if (!started()) throw Error("internal: a configuration swap before simmering");
  Saver ar(w);
  VectorOf<S> x = net_.parameters();
  train::BasicPhaseState<S> phase = trajectory_->phase();
  Vector masses = masses_;
  std::int64_t configuration = configuration_;
  ar(x, phase, masses, configuration);
}

template <class S>
void BasicChain<S>::load_configuration(ByteReader& r, double from, double to) {
  if (!started()) throw Error("internal: a configuration swap before simmering");
  Loader ar(r);
  VectorOf<S> x;
  train::BasicPhaseState<S> phase;
  Vector masses;
  std::int64_t configuration = -1;
  ar(x, phase, masses, configuration);
  if (x.size() != net_.parameter_count() || phase.v.size() != x.size() ||
      phase.chain.w.size() != trajectory_->phase().chain.w.size()) {
    throw Error("internal: a swapped configuration of another shape");
  }
  train::rescale_for_temperature(phase, from, to, !train::is_nose_hoover_langevin(p_->nhc.thermostat));
  if (masses.size() > 0 || masses_.size() > 0) {
    // Each trajectory has its own parameter masses: v_i ~ N(0, T/m_i) here needs v_i scaled by
    // sqrt(m_from,i / m_i) as well (a unit mass where one side has none).
    for (Index i = 0; i < phase.v.size(); ++i) {
      const double from_mass = masses.size() > 0 ? masses(i) : 1.0;
      const double to_mass = masses_.size() > 0 ? masses_(i) : 1.0;
      phase.v(i) *= static_cast<S>(std::sqrt(from_mass / to_mass));
    }
    phase.kinetic = trajectory_->integrator().twice_kinetic(phase.v);
  }
  net_.parameters() = x;
  trajectory_->phase() = std::move(phase);
  configuration_ = configuration;
  // The health check compares H_ext between checks at one temperature: a swap is no blow-up.
  last_check_temperature_ = std::numeric_limits<double>::quiet_NaN();
}

#define SIMMER_INSTANTIATE(S)                                           \
  template ChainReport BasicChain<S>::report();                         \
  template void BasicChain<S>::save(ByteWriter& w) const;               \
  template void BasicChain<S>::load(ByteReader& r, std::int64_t step);  \
  template double BasicChain<S>::exchange_loss();                       \
  template void BasicChain<S>::save_configuration(ByteWriter& w) const; \
  template void BasicChain<S>::load_configuration(ByteReader& r, double from, double to);
SIMMER_INSTANTIATE(double)
SIMMER_INSTANTIATE(float)
#undef SIMMER_INSTANTIATE

}  // namespace simmer::run
