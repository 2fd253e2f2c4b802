// One trajectory (run/chain.hpp): every phase of its life that must agree bit for bit between a
// run and its resume: Adam, the start, the steps with their health check, members and rows. Its
// saved state (the checkpoint's field list) and its report are in run/chain_state.cpp.
#include "simmer/run/chain.hpp"

#include <ctime>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "simmer/core/error.hpp"
#include "simmer/train/adam.hpp"

namespace simmer::run {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string text(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace

Index activation_rows(const Problem& p) {
  Index rows = 0;
  for (const auto& s : p.sets) rows = std::max(rows, s.rows());
  const Index chunks = std::max<Index>(1, p.run.gradient_chunks);
  if (chunks > 1) rows = (rows + chunks - 1) / chunks;  // one block of any set
  const Index batch = p.adam.batch_size;
  if (p.mode == train::StartMode::retrofit && batch > 0 && batch < p.sets[0].rows()) rows = std::max(rows, batch);
  return std::max<Index>(rows, 1);
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<ensemble::ScoredSet> scored_sets(const Problem& p) {
  std::vector<ensemble::ScoredSet> out;
  for (std::size_t s = 0; s < p.scored_sets(); ++s) {
    const EvalSet& set = p.sets[s];
    out.push_back(p.classification ? ensemble::ScoredSet{nullptr, &set.labels} : ensemble::ScoredSet{&set.y, nullptr});
  }
  return out;
}

ensemble::DiagnosticsSetup diagnostics_setup(const Problem& p, std::int64_t stage) {
  ensemble::DiagnosticsSetup d;
  d.classification = p.classification;
  d.outputs = p.outputs;
  d.classes = p.classes;
  d.parameters = p.parameters;
  // Stage k runs steps [k S, (k + 1) S) (parallel rungs: [0, S)); its window is the last W of them.
  d.window_first_step = p.stage_first_step(stage) + p.run.steps - p.sampling.window;
  d.window_steps = p.sampling.window;
  d.blocks = p.diagnostics.blocks;
  d.time_step = p.nhc.time_step;
  d.sets = scored_sets(p);
  return d;
}

ensemble::EnsembleShape ensemble_shape(const Problem& p) {
  ensemble::EnsembleShape shape;
  shape.classification = p.classification;
  for (const auto& s : p.sets) shape.rows.push_back(s.rows());
  shape.classes = p.classes;
  shape.outputs = p.outputs;
  shape.tracked = p.classification ? 0 : static_cast<Index>(p.store.track.size()) * p.outputs;
  return shape;
}

std::unique_ptr<Chain> make_chain(const Problem& problem, std::int64_t index) {
  return with_scalar(problem.run.precision, [&](auto zero) -> std::unique_ptr<Chain> {
    return std::make_unique<BasicChain<decltype(zero)>>(problem, index);
  });
}

template <class S>
BasicChain<S>::BasicChain(const Problem& problem, std::int64_t index)
    : p_(&problem),
      index_(index),
      net_(model::build_network<S>(problem.architecture)),
      minibatch_rng_(stream(RngPurpose::minibatch)),
      noise_rng_(stream(RngPurpose::thermostat)),
      thermometer_rng_(stream(RngPurpose::configurational)),
      mass_rng_(stream(RngPurpose::mass_curvature)),
      time_step_(problem.nhc.time_step) {
  const Problem& p = problem;
  Rng init = stream(RngPurpose::initialization);
  net_.initialize(p.architecture.init, init);
  net_.reserve(activation_rows(p));
  if (inputs<S>(p.sets[0]).rows() != p.sets[0].rows())
    throw Error("internal: no " + to_string(p.run.precision) + " data");
  objective_ = std::make_unique<train::BasicNetworkObjective<S>>(
      net_, p.loss, inputs<S>(p.sets[0]), targets<S>(p.sets[0]), p.output_scale, p.output_offset);
  if (p.run.gradient_chunks > 1) objective_->set_gradient_chunks(p.run.gradient_chunks);
  // Every stage's members from the one sampling stream, stage after stage (one stage draws what
  // a run without stages drew).
  Rng sampling = stream(RngPurpose::sampling);
  // Parallel rungs: one stage in time (the trajectory's rung), but a slot for every rung's
  // ensemble and diagnostics, the others left empty.
  for (std::int64_t k = 0; k < p.chain_stages(); ++k) {
    for (const auto step : ensemble::select_sample_steps(p.run.steps, p.sampling, sampling)) {
      sample_steps_.push_back(k * p.run.steps + step);
    }
  }
  const auto stages = static_cast<std::size_t>(p.stages());
  for (std::size_t k = 0; k < stages; ++k) diag_.emplace_back(diagnostics_setup(p, static_cast<std::int64_t>(k)));
  votes_.resize(stages);
  means_.resize(stages);
  for (std::size_t k = 0; k < stages; ++k) {
    for (const auto& s : p.sets) {
      if (p.classification)
        votes_[k].push_back(ensemble::VoteAccumulator::Votes::Zero(s.rows(), p.classes));
      else
        means_[k].emplace_back(s.rows(), p.outputs);
    }
  }
  stage_members_.assign(stages, 0);
  interval_members_.assign(stages, 0);
  tracked_.resize(stages);
  start_loss_.assign(stages, kNaN);
}

template <class S>
Rng BasicChain<S>::stream(RngPurpose purpose) const {
  return Rng::named(p_->run.seed, static_cast<std::uint64_t>(index_), purpose);
}

template <class S>
void BasicChain<S>::adam_to(std::int64_t epoch_end, const EpochReport& on_epoch, StopCheck stop) {
  const Problem& p = *p_;
  const std::int64_t epochs = p.adam.epochs;
  if (adam_.m.size() != net_.parameter_count()) adam_ = train::BasicAdamState<S>::zeros(net_.parameter_count());
  train::AdamOptions until = p.adam;  // the same updates; only where this call stops differs
  until.epochs = std::min(epoch_end, epochs);
  train::BasicAdamState<S>& state = adam_;
  const double t0 = cpu_seconds();
  const double eval_before = eval_seconds_;
  const bool keep_best = p.adam.keep == train::AdamKeep::best_validation;
  bool signalled = false;  // `stop` ended the call: the epochs after it are still owed
  // adam.patience: early stopping ends Adam after any epoch; the skipped epochs still count, so
  // every trajectory reaches the end together (and a later call, after a checkpoint, skips too).
  const auto stopped_early = [&] {
    return keep_best && p.adam.patience > 0 && state.epoch - adam_best_epoch_ >= p.adam.patience;
  };
  const auto each_epoch = [&](std::int64_t epoch, double loss) {
    if (epoch % p.run.trace_every == 0) {
      // Full batch: the epoch's loss belongs to the parameters before its update, so the test
      // loss is taken there too (mini-batch: the epoch's mean loss, test loss after it).
      const bool full_batch = p.adam.batch_size == 0 || p.adam.batch_size >= p.sets[0].rows();
      if (full_batch) {
        const VectorOf<S> keep = net_.parameters();
        net_.parameters() = state.previous;
        record_trace(0, epoch - epochs, 0.0, loss);
        net_.parameters() = keep;
      } else {
        record_trace(0, epoch - epochs, 0.0, loss);
      }
    }
    if (keep_best) keep_if_best(epoch);
    if (on_epoch) on_epoch(epoch, loss);
    if (stopped_early()) return true;
    signalled = stop != nullptr && stop();
    return signalled;
  };
  if (!stopped_early()) train::train_adam(until, state, *objective_, minibatch_rng_, each_epoch);
  if (!signalled) state.epoch = std::max(state.epoch, until.epochs);  // stopped early: the rest are skipped
  step_seconds_ += cpu_seconds() - t0 - (eval_seconds_ - eval_before);
}

template <class S>
double BasicChain<S>::validation_loss() {
  const EvalSet& set = p_->sets[Problem::kValidation];
  const ConstBatchViewOf<double> pred = wide(objective_->predict(view(inputs<S>(set))));
  if (p_->classification) {
    Matrix probabilities;
    ensemble::class_probabilities(pred, probabilities);
    return ensemble::score_probabilities(view(probabilities), set.labels).nll;
  }
  // Squared error: it ranks networks as the Gaussian NLL with one noise variance does.
  return ensemble::residual_variance(pred, view(set.y)).mean();
}

template <class S>
void BasicChain<S>::keep_if_best(std::int64_t epoch) {
  const double loss = validation_loss();
  if (!(loss < adam_best_loss_)) return;  // a NaN never becomes the best
  adam_best_loss_ = loss;
  adam_best_epoch_ = epoch;
  adam_best_ = net_.parameters();
  adam_best_previous_ = adam_.previous;
}

template <class S>
void BasicChain<S>::finish_adam() {
  const Problem& p = *p_;
  if (adam_.epoch != p.adam.epochs) throw Error("internal: Adam finished before its last epoch");
  if (p.adam.keep == train::AdamKeep::best_validation && adam_best_.size() == net_.parameter_count()) {
    net_.parameters() = adam_best_;
    adam_.previous = adam_best_previous_;
  }
  baseline_ = net_.parameters();
  score_baseline();
  if (p.parameter_masses.kind == train::ParameterMasses::adam) set_adam_masses();
}

template <class S>
void BasicChain<S>::start() {
  if (started()) return;
  const Problem& p = *p_;
  // (After Adam and before this, the run may set the noise sd, and so the temperatures:
  // simmer.noise_sd = auto. Nothing below may be computed earlier.) Adam alone has no stage to
  // choose a step for.
  if (p.auto_step.on && !p.adam_only) auto_step(0);
  const train::BasicNoseHooverChain<S> nhc(integrator_options(), net_.parameter_count());
  train::BasicPhaseState<S> start = nhc.rest_start();
  switch (p.start_velocity) {
    case train::StartVelocity::adam:  // the retrofit start: the last two Adam iterates
      start = nhc.retrofit_start(net_.parameters(), adam_.previous);
      break;
    case train::StartVelocity::zero:
      break;
    case train::StartVelocity::thermal: {
      Rng thermal = stream(RngPurpose::start_velocity);
      start = nhc.thermal_start(p.first_temperature(index_), thermal);
      break;
    }
  }
  begin_trajectory(std::move(start), 0);
  adam_.m.resize(0);  // Adam's moments are not needed any more (the epoch count stays)
  adam_.v.resize(0);
  adam_.previous.resize(0);
}

template <class S>
void BasicChain<S>::begin_trajectory(train::BasicPhaseState<S> start, std::int64_t first_step) {
  if (p_->diagnostics.start_jitter != 0.0) {
    // A chaos check: v_i (1 + eps xi_i), from a stream of its own so nothing else changes.
    Rng jitter = stream(RngPurpose::jitter);
    for (Index i = 0; i < start.v.size(); ++i)
      start.v(i) *= static_cast<S>(1.0 + p_->diagnostics.start_jitter * jitter.normal());
    start.kinetic = train::BasicNoseHooverChain<S>(integrator_options(), net_.parameter_count()).twice_kinetic(start.v);
  }
  set_trajectory(std::move(start), first_step);
  if (train::masses_from_warmup(p_->parameter_masses.kind) && first_step == 0) {
    adaptation_ = train::MassAdaptation(net_.parameter_count());
  }
  if (diag_.empty()) return;  // Adam alone (simmer.mode = adam): no stage
  const auto first = static_cast<std::size_t>(p_->stage_of(index_, 0));
  diag_[first].start(net_.parameters());
  start_loss_[first] = objective_->evaluate(net_.parameters());
}

template <class S>
void BasicChain<S>::begin_stage(std::int64_t stage) {
  const auto k = static_cast<std::size_t>(stage);
  if (k == 0 || ended_.size() != k - 1) throw Error("internal: stages out of order");
  ended_.push_back(diag_[k - 1].summary(net_.parameters(), p_->prior_rms, false, start_loss_[k - 1]));
  diag_[k].start(net_.parameters());
  start_loss_[k] = objective_->evaluate(net_.parameters());
}

template <class S>
train::CurvatureEstimate BasicChain<S>::stability_probe() {
  Rng rng = stream(RngPurpose::stability);
  // With masses, the step is bounded by the mass-weighted Hessian's largest eigenvalue.
  return train::estimate_curvature(*objective_, net_.parameters(), rng, 20, masses_.size() > 0 ? &masses_ : nullptr);
}

template <class S>
void BasicChain<S>::set_trajectory(train::BasicPhaseState<S> phase, std::int64_t step) {
  trajectory_ = std::make_unique<train::BasicTrajectory<S>>(*objective_, integrator_options(), p_->schedule(index_),
                                                            std::move(phase), step);
  trajectory_->set_noise(&noise_rng_);
}

template <class S>
train::NhcOptions BasicChain<S>::integrator_options() const {
  train::NhcOptions options = p_->nhc;
  options.time_step = time_step_;
  options.parameter_masses = masses_;
  return options;
}

template <class S>
void BasicChain<S>::set_adam_masses() {
  const Problem& p = *p_;
  if (adam_.t < 1 || adam_.v.size() != net_.parameter_count()) {
    throw Error("internal: Adam masses without Adam's second moment");
  }
  masses_ =
      scaled_to_stability(train::adam_masses(adam_.v.template cast<double>(), adam_.t, p.adam.beta2, p.adam.epsilon));
}

template <class S>
Vector BasicChain<S>::scaled_to_stability(const Vector& unscaled) {
  // Both power iterations from the same start vector (the stability stream), here.
  Rng plain_rng = stream(RngPurpose::stability), weighted_rng = stream(RngPurpose::stability);
  const double plain = train::estimate_curvature(*objective_, net_.parameters(), plain_rng).lambda_max;
  const double weighted =
      train::estimate_curvature(*objective_, net_.parameters(), weighted_rng, 20, &unscaled).lambda_max;
  return train::scaled_masses(unscaled, weighted, plain);
}

template <class S>
void BasicChain<S>::sample_curvature(std::int64_t step) {
  const std::int64_t samples = std::min<std::int64_t>(p_->parameter_masses.warmup, train::kCurvatureMassProbes);
  const std::int64_t stride = p_->parameter_masses.warmup / samples;
  if (step % stride != 0 || step / stride >= samples) return;
  const auto probes = static_cast<int>((train::kCurvatureMassProbes + samples - 1) / samples);
  train::hessian_diagonal(*objective_, net_.parameters(), mass_rng_, probes, diagonal_);
  adaptation_.add(diagonal_);
}

template <class S>
void BasicChain<S>::finish_adaptation() {
  const Problem& p = *p_;
  const Vector prior_curvature = p.first_temperature(index_) * p.nhc.prior_precision;
  masses_ = scaled_to_stability(p.parameter_masses.kind == train::ParameterMasses::curvature
                                    ? train::curvature_masses(adaptation_.mean(), prior_curvature)
                                    : adaptation_.masses());
  adaptation_ = train::MassAdaptation();
  train::BasicPhaseState<S> phase = trajectory_->phase();
  phase.v.array() *= masses_.cwiseInverse().cwiseSqrt().template cast<S>().array();
  set_trajectory(std::move(phase), trajectory_->step());
}

template <class S>
const train::SpectrumEstimate& BasicChain<S>::estimate_curvature(bool at_end) {
  Rng rng = stream(RngPurpose::curvature);
  auto& out = at_end ? curvature_end_ : curvature_start_;
  out = train::estimate_spectrum(*objective_, net_.parameters(), p_->ramp.target, p_->diagnostics.lanczos_steps,
                                 p_->diagnostics.lanczos_probes, rng);
  return out;
}

template <class S>
void BasicChain<S>::record_trace(int phase, std::int64_t step, double temperature, double train_loss) {
  const double t0 = cpu_seconds();
  const Problem& p = *p_;
  const auto& test = p.sets[1];
  const double test_loss =
      model::loss_value(p.loss, objective_->predict(view(inputs<S>(test))), view(targets<S>(test)));
  // Where the parameters are: from the simmering start point once simmering runs.
  const VectorOf<S>& x = net_.parameters();
  const ensemble::Position at =
      phase == 1 ? diag_[static_cast<std::size_t>(p.stage_of(index_, step - 1))].position(x)
                 : ensemble::Position{
                       kNaN, kNaN, std::sqrt(x.template cast<double>().squaredNorm() / static_cast<double>(x.size())),
                       static_cast<double>(x.cwiseAbs().maxCoeff())};
  const std::size_t before = rows_.trace.size();
  rows_.trace.insert(rows_.trace.end(), {static_cast<double>(phase), static_cast<double>(step), temperature, train_loss,
                                         test_loss, at.distance, at.path_length, at.rms, at.max_abs});
  // The row just added, its fields in /trace's order (/checksums/trace).
  trace_digest_.add(rows_.trace.data() + before, (rows_.trace.size() - before) * sizeof(double));
  rows_.trace_count += 1;
  trace_count_ += 1;
  eval_seconds_ += cpu_seconds() - t0;
}

template <class S>
std::int64_t BasicChain<S>::advance_to(std::int64_t end, StopCheck stop) {
  if (stopped_ || !started()) return end;
  const Problem& p = *p_;
  // One CPU clock pair per call: the steps' time is the block's minus the evaluations'.
  const double t0 = cpu_seconds();
  const double eval_before = eval_seconds_;
  std::int64_t reached = end;
  while (!stopped_ && trajectory_->step() < end) {
    const std::int64_t next = trajectory_->step();
    if (stop != nullptr && stop()) {
      reached = next;
      break;
    }
    if (next > 0 && next % p.run.steps == 0) begin_stage(next / p.run.steps);  // never with parallel rungs
    if (p.auto_step.on && next > 0) auto_step(next);
    const train::StepRecord rec = trajectory_->advance();
    last_loss_ = rec.force_loss;
    diag_[static_cast<std::size_t>(p.stage_of(index_, rec.step))].after_step(rec.step, net_.parameters(),
                                                                             trajectory_->phase().kinetic);
    check_health(rec);
    if (stopped_) break;
    sample_thermometers(rec);
    const std::int64_t s = rec.step;
    if ((s + 1) % p.run.trace_every == 0) record_trace(1, s + 1, rec.temperature, rec.force_loss);
    if (next_sample_ < sample_steps_.size() && sample_steps_[next_sample_] == s) {
      take_member(rec);
      ++next_sample_;
    }
    if (adaptation_.active()) {
      if (p.parameter_masses.kind == train::ParameterMasses::curvature) {
        sample_curvature(s);
      } else {
        adaptation_.add(net_.parameters());
      }
      if (s + 1 == p.parameter_masses.warmup) finish_adaptation();
    }
  }
  step_seconds_ += cpu_seconds() - t0 - (eval_seconds_ - eval_before);
  return reached;
}

template <class S>
void BasicChain<S>::score_baseline() {
  // The single network's scores, uncertainty included: its own softmax (classification), or a
  // Gaussian whose noise variance is its mean squared residual on the validation rows, or on the
  // training rows without a validation set (regression; the candidates' rule, estimate_noise).
  const Problem& p = *p_;
  baseline_scores_.clear();
  const VectorOf<S> keep = net_.parameters();
  net_.parameters() = baseline_;
  std::vector<Matrix> predictions;
  for (std::size_t s = 0; s < p.scored_sets(); ++s) {
    predictions.push_back(wide(objective_->predict(view(inputs<S>(p.sets[s])))));
  }
  Matrix noise;
  if (!p.classification) {
    const std::size_t from = p.noise_set();
    noise = ensemble::residual_variance(view(predictions[from]), view(p.sets[from].y));
  }
  for (std::size_t s = 0; s < p.scored_sets(); ++s) {
    const auto& set = p.sets[s];
    const ConstBatchViewOf<double> pred = view(predictions[s]);
    if (p.classification) {
      Matrix probabilities;
      ensemble::class_probabilities(pred, probabilities);
      baseline_scores_.push_back(ensemble::score_probabilities(view(probabilities), set.labels));
      baseline_scores_.back().metric = ensemble::accuracy(ensemble::predicted_classes(pred), set.labels);
    } else {
      baseline_scores_.push_back(ensemble::score_with_noise(pred, Matrix(), noise, view(set.y)));
    }
  }
  net_.parameters() = keep;
}

template <class S>
void BasicChain<S>::take_member(const train::StepRecord& rec) {
  const double t0 = cpu_seconds();
  const Problem& p = *p_;
  const auto k = static_cast<std::size_t>(p.stage_of(index_, rec.step));
  ensemble::TrajectoryDiagnostics& diag = diag_[k];
  double train_loss = 0.0;
  diag.begin_member(rec.step);
  for (std::size_t s = 0; s < p.sets.size(); ++s) {
    const auto& set = p.sets[s];
    const ConstBatchViewOf<S> pred_s = objective_->predict_shared(view(inputs<S>(set)));  // split over a group
    if (s == 0) train_loss = model::loss_value(p.loss, pred_s, view(targets<S>(set)));
    const ConstBatchViewOf<double> pred = wide(pred_s);
    if (s < p.scored_sets()) diag.member_predictions(static_cast<int>(s), pred);
    if (p.classification) {
      const auto winners = ensemble::predicted_classes(pred);
      for (Index i = 0; i < set.rows(); ++i) votes_[k][s](i, winners[static_cast<std::size_t>(i)]) += 1;
    } else {
      means_[k][s].add(pred);
      if (s == 1 && !p.store.track.empty()) {
        const std::size_t before = tracked_[k].size();
        for (const auto row : p.store.track) {
          for (Index o = 0; o < p.outputs; ++o) tracked_[k].push_back(pred(row, o));
        }
        // This member's row of /ensemble/test/tracked (/checksums/tracked). A trajectory's
        // members are that dataset's rows in the order they are drawn (a rung's follow the
        // earlier rungs' M each; a diverged trajectory draws no more).
        tracked_digest_.add(tracked_[k].data() + before, (tracked_[k].size() - before) * sizeof(double));
        tracked_count_ += 1;
      }
    }
  }
  diag.member_done(net_.parameters(), train_loss);
  if (members_ == 0 && p.mode == train::StartMode::abinitio) {
    baseline_ = net_.parameters();  // ab initio baseline: the first member
    score_baseline();
  }
  if (stage_members_[k] % p.store.every == 0) {
    const auto& phase = trajectory_->phase();
    const auto& nhc = trajectory_->integrator();
    // Kept in the archive's precision until the rows are taken.
    const VectorOf<S>& x = net_.parameters();
    // The digest follows the bytes as the archive stores them (/checksums/draws).
    const auto n = static_cast<std::size_t>(x.size());
    if (p.store.float32) {
      for (const S v : x) rows_.params32.push_back(static_cast<float>(v));
      draws_digest_.add(rows_.params32.data() + rows_.params32.size() - n, n * sizeof(float));
    } else {
      for (const S v : x) rows_.params.push_back(static_cast<double>(v));
      draws_digest_.add(rows_.params.data() + rows_.params.size() - n, n * sizeof(double));
    }
    const double stats[] = {static_cast<double>(rec.step), rec.temperature, train_loss, nhc.kinetic_temperature(phase),
                            nhc.extended_energy(x, phase, train_loss, rec.temperature)};
    rows_.stats.insert(rows_.stats.end(), std::begin(stats), std::end(stats));
    draws_digest_.add(stats, sizeof stats);
    rows_.draw_count += 1;
  }
  members_ += 1;
  stage_members_[k] += 1;
  interval_members_[k] += 1;
  eval_seconds_ += cpu_seconds() - t0;
}

template <class S>
void BasicChain<S>::check_health(const train::StepRecord& rec) {
  // Thresholds (documented in docs/STATIONARITY.md): NaN/inf loss or velocities at once;
  // otherwise, at constant T > 0, a kinetic temperature 100x above the target and not falling,
  // or (where the thermostat conserves H_ext: the Nose-Hoover chain) a jump of H_ext larger than
  // 10 N_f T between checks, on `kStrikes` consecutive checks. 100x below is "slow to heat": a warning, not a
  // divergence.
  constexpr int kStrikes = 3;
  const auto& nhc = trajectory_->integrator();
  const auto& phase = trajectory_->phase();
  std::string reason;
  if (!std::isfinite(rec.force_loss) || !std::isfinite(phase.kinetic)) {
    reason = "loss or velocities are not finite";
  } else if ((rec.step + 1) % p_->health.every == 0) {
    const double t = rec.temperature;
    const double t_kin = nhc.kinetic_temperature(phase);
    const double energy = nhc.extended_energy(net_.parameters(), phase, rec.force_loss, t);
    const bool conserved = train::conserves_extended_energy(nhc.options().thermostat);
    bool strike = false;
    std::string why;
    if (t > 0.0 && t == last_check_temperature_) {
      if (t_kin > 100.0 * t && !(t_kin < last_check_kinetic_)) {
        // Hot and not cooling. A trajectory far above a small T that is cooling (the retrofit's
        // Adam velocity after a T = 0 stage, say) is slow to cool, not diverged.
        strike = true;
        why = "kinetic temperature " + std::to_string(t_kin) + " is 100x above the target " + std::to_string(t) +
              " and not falling";
      } else if (conserved && std::abs(energy - last_energy_) > 10.0 * nhc.degrees_of_freedom() * t) {
        strike = true;
        why = "extended energy H_ext jumped from " + std::to_string(last_energy_) + " to " + std::to_string(energy) +
              " at constant T";
      } else if (t_kin < 0.01 * t && slow_to_heat_step_ < 0) {
        // Far below the target is not a blow-up: after a T = 0 stage (or with heavy thermostat
        // masses) the particles take a while to heat. Say so once and keep sampling.
        slow_to_heat_step_ = rec.step;
        warn_({Warning::Kind::slow_to_heat, "simmer_mpi: warning: trajectory " + std::to_string(index_) +
                                                " is slow to heat: kinetic temperature " + text("%.3g", t_kin) +
                                                " at step " + std::to_string(rec.step) +
                                                " is below 1% of T = " + text("%.3g", t) +
                                                "; it keeps sampling (lighter simmer.masses, simmer.start_velocity = "
                                                "thermal or a longer window help)"});
      }
    }
    strikes_ = strike ? strikes_ + 1 : 0;
    last_check_kinetic_ = t_kin;
    if (strikes_ >= kStrikes) reason = why + " (" + std::to_string(kStrikes) + " checks in a row)";
    last_energy_ = energy;
    last_check_temperature_ = t;
  }
  if (reason.empty() || diverged_step_ >= 0) return;
  diverged_step_ = rec.step;
  diverged_reason_ = reason;
  stopped_ = p_->health.on_divergence == HealthOptions::OnDivergence::stop;
  // Said by the process that runs it at once: the others keep going, so this cannot wait.
  warn_({Warning::Kind::diverged,
         "simmer_mpi: trajectory " + std::to_string(index_) + " diverged at step " + std::to_string(rec.step) +
             " (h = " + text("%g", time_step_) + ", T = " + text("%g", rec.temperature) + "): " + reason + "; " +
             (stopped_ ? "it stops here, keeping its samples so far" : "continuing (on_divergence = warn)") +
             ". A smaller simmer.time_step (see the stability limit printed at the start) usually helps."});
}

template <class S>
std::vector<ensemble::EnsemblePartial> BasicChain<S>::take_partials() {
  std::vector<ensemble::EnsemblePartial> all;
  for (std::size_t k = 0; k < votes_.size(); ++k) {
    ensemble::EnsemblePartial out;
    out.trajectory = index_;
    out.last_loss = last_loss_;
    out.members = interval_members_[k];
    out.diverged_step = diverged_step_;
    // A stage without members in this interval (a ladder's rungs but one) has no votes to send:
    // zero tables would be most of a gather's bytes. Regression sends its running totals always
    // (small, and rank 0 rebuilds its means from them after a resume).
    for (auto& v : votes_[k]) {
      if (out.members > 0) out.votes.push_back(v);
      v.setZero();
    }
    out.means = means_[k];  // the trajectory's running totals (never reset)
    out.tracked = std::move(tracked_[k]);
    tracked_[k].clear();
    interval_members_[k] = 0;
    all.push_back(std::move(out));
  }
  return all;
}

template <class S>
ChainRows BasicChain<S>::take_rows() {
  ChainRows out = std::move(rows_);
  rows_ = ChainRows{};
  rows_.draw_first = out.draw_first + out.draw_count;
  rows_.trace_first = trace_count_;
  return out;
}

template <class S>
ConstBatchViewOf<double> BasicChain<S>::baseline_prediction(std::size_t set) {
  const VectorOf<S> keep = net_.parameters();
  net_.parameters() = baseline_;
  const ConstBatchViewOf<S> pred = objective_->predict(view(inputs<S>(p_->sets.at(set))));
  net_.parameters() = keep;
  return wide(pred);
}

template <class S>
ConstBatchViewOf<double> BasicChain<S>::wide(ConstBatchViewOf<S> pred) {
  if constexpr (std::is_same_v<S, double>) {
    return pred;
  } else {
    if (wide_.rows() < pred.rows() || wide_.cols() != pred.cols()) {
      wide_.resize(std::max(wide_.rows(), pred.rows()), pred.cols());
    }
    BatchView out = top_rows(wide_, pred.rows());
    out = pred.template cast<double>();
    return view(out);
  }
}

template class BasicChain<double>;
template class BasicChain<float>;

}  // namespace simmer::run
