#pragma once
/// \file
/// One trajectory, serial and complete: its network and objective, the Adam phase, the
/// integrator and temperature schedule, which steps are members, the health check, the drift
/// diagnostics, its partial ensemble, and the rows it owes the archive. No MPI, no HDF5:
/// simmer_mpi runs many of these (parallel/driver) and simmer_sine runs one.
///
/// Random numbers come from the trajectory's named streams (core/rng.hpp): its initial network
/// (initialization), its members (sampling), Adam's mini-batches (minibatch), a thermal start
/// (start_velocity), the Langevin noise (thermostat), the chaos check (jitter), the stability
/// and curvature probes. So a trajectory's bits depend on neither the rank that runs it nor how
/// many others there are.

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "simmer/core/bytes.hpp"
#include "simmer/core/digest.hpp"
#include "simmer/core/rng.hpp"
#include "simmer/core/visit.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/partial.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/model/network.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/train/adam.hpp"
#include "simmer/train/objective.hpp"
#include "simmer/train/spectrum.hpp"
#include "simmer/train/stability.hpp"
#include "simmer/train/trajectory.hpp"

namespace simmer::run {

/// One simmering stage of one trajectory at the end of the run (Problem::stages()).
struct StageReport {
  ensemble::TrajectorySummary summary;                           ///< drift numbers and verdict over the stage
  double start_loss = std::numeric_limits<double>::quiet_NaN();  ///< L where the stage started
  /// Message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(summary, start_loss);
  }
};

/// One trajectory's end-of-run numbers.
struct ChainReport {
  std::int64_t index = 0;
  std::vector<ensemble::SetScores> baseline;  ///< per scored set (train, test[, validation]); NaN without one
  std::vector<StageReport> stages;            ///< per simmering stage
  std::int64_t diverged_at = -1;
  std::int64_t slow_to_heat_at = -1;
  train::SpectrumEstimate curvature_start, curvature_end;  ///< probes == 0: not estimated
  /// The parameter masses' minimum, median and maximum (NaN: unit masses, or not yet adapted).
  std::array<double, 3> masses{std::nan(""), std::nan(""), std::nan("")};
  /// The content digest of the draws it stored (each draw's parameters in the archive's
  /// precision, then its /sample_stats fields; core/digest.hpp) and how many: /checksums.
  std::uint64_t draws_digest = Fnv1a{}.value;
  std::int64_t draws = 0;
  /// The same of its /trace rows (each row's fields in their order), and how many.
  std::uint64_t trace_digest = Fnv1a{}.value;
  std::int64_t trace_rows = 0;
  /// The same of its members' predictions at the tracked test rows (/ensemble/test/tracked, each
  /// member's row in order; store.track), and how many members.
  std::uint64_t tracked_digest = Fnv1a{}.value;
  std::int64_t tracked_rows = 0;
  /// adam.keep = best_validation: the Adam epoch its network was kept at (-1: otherwise, or none).
  std::int64_t adam_kept_epoch = -1;
  /// Message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(index, baseline, stages, diverged_at, slow_to_heat_at, curvature_start, curvature_end, masses, draws_digest,
       draws, trace_digest, trace_rows, tracked_digest, tracked_rows, adam_kept_epoch);
  }
  void save(ByteWriter& w) const;
  /// What save wrote: all of `r`.
  static ChainReport load(ByteReader& r);
};

/// What a trajectory owes the archive since the last time it was asked: its stored members
/// (draw rows), their sample stats, and its trace records.
struct ChainRows {
  std::int64_t draw_first = 0, draw_count = 0;
  std::vector<double> params;   ///< draw_count × N (float64 archive)
  std::vector<float> params32;  ///< the same for a float32 archive
  std::vector<double> stats;    ///< draw_count × run::layout::sample_stat_fields()
  std::int64_t trace_first = 0, trace_count = 0;
  std::vector<double> trace;  ///< trace_count × run::layout::trace_fields()
};

/// One trajectory as the driver sees it, whatever its compute precision: BasicChain<S> below
/// implements it for S = double (Chain64) and float (Chain32); make_chain picks S from
/// run.precision. Vectors handed out here are float64 copies.
class Chain {
 public:
  virtual ~Chain() = default;

  /// Adam's progress, every epoch: the epoch (1-based) and its training loss.
  using EpochReport = std::function<void(std::int64_t epoch, double train_loss)>;
  /// Asked between steps (and after each of Adam's epochs): true ends the call there, early. A
  /// stop signal's flag, read without a collective (parallel::Run agrees on the step afterwards).
  using StopCheck = bool (*)();

  /// What a trajectory reports at once (printed by the process that runs it).
  struct Warning {
    enum class Kind { slow_to_heat, diverged } kind;
    std::string text;
  };
  /// Where this trajectory's warnings go. Default: stderr, every one.
  void set_warning_sink(std::function<void(const Warning&)> sink) { warn_ = std::move(sink); }

  /// run.ranks_per_trajectory > 1: this chain's full-batch gradients are shared with the other
  /// ranks of its group through `combiner` (which must outlive the chain). Every rank of the
  /// group then runs the same chain in lockstep: each objective evaluation is collective.
  virtual void share_gradients(train::GradientCombiner* combiner) = 0;

  /// Retrofit: Adam from the initial network (trace rows every run.trace_every epochs), then the
  /// baseline is Adam's end point and simmering starts from it. `on_epoch` sees every epoch.
  /// The same as adam_to(adam.epochs), finish_adam(), then start().
  void train_adam(const EpochReport& on_epoch = {}) {
    adam_to(adam_epochs(), on_epoch);
    finish_adam();
    start();
  }
  /// Adam's epochs up to `epoch` (exclusive of later ones; at most adam.epochs), continuing from
  /// where the last call (or a loaded checkpoint) left off. With `stop`, the call ends after the
  /// first epoch at which it says true; adam_epoch() then tells where.
  virtual void adam_to(std::int64_t epoch, const EpochReport& on_epoch = {}, StopCheck stop = nullptr) = 0;
  /// Adam's epochs completed.
  [[nodiscard]] virtual std::int64_t adam_epoch() const = 0;
  /// After Adam's last epoch: the baseline is its end point (adam.keep's iterate), scored; start()
  /// then simmers from there.
  virtual void finish_adam() = 0;
  /// Starts simmering at the current parameters with simmer.start_velocity's velocity (a
  /// retrofit's adam: the last two Adam iterates); a no-op once started.
  virtual void start() = 0;
  [[nodiscard]] virtual bool started() const = 0;

  /// The leapfrog stability probe at the current position (power iteration, stability stream).
  virtual train::CurvatureEstimate stability_probe() = 0;
  /// The curvature report at the current position (curvature stream); kept for the report.
  virtual const train::SpectrumEstimate& estimate_curvature(bool at_end) = 0;

  /// Advances to step `end` (exclusive) unless stopped: health check, diagnostics, trace
  /// records every run.trace_every steps, members at their steps. With `stop`, the call ends
  /// before the first step at which it says true. Returns the step it ended before: `end`, or
  /// earlier when `stop` ended it (a chain stopped by its health check returns `end`: it owes
  /// no steps).
  virtual std::int64_t advance_to(std::int64_t end, StopCheck stop = nullptr) = 0;

  /// This interval's partial ensemble of every stage (votes reset, running means kept, tracked
  /// predictions taken), in stage order.
  virtual std::vector<ensemble::EnsemblePartial> take_partials() = 0;
  /// The rows owed to the archive (then forgotten here).
  virtual ChainRows take_rows() = 0;

  /// The baseline network's outputs on evaluation set `set` of the problem (target units, or
  /// logits; float64); valid until the next evaluation. Requires has_baseline().
  virtual ConstBatchView baseline_prediction(std::size_t set) = 0;
  [[nodiscard]] virtual bool has_baseline() const = 0;
  [[nodiscard]] virtual ChainReport report() = 0;
  /// This trajectory's part of stage `stage`'s pooled uncertainty scores and block metrics
  /// (ensemble::PooledDiagnostics::merge reads it).
  virtual void diagnostics_partials(ByteWriter& w, std::int64_t stage) const = 0;

  /// Float64 copies of the parameters, the velocities (simmering only) and the baseline.
  [[nodiscard]] virtual Vector parameters_f64() const = 0;
  [[nodiscard]] virtual Vector velocities_f64() const = 0;
  [[nodiscard]] virtual Vector baseline_f64() const = 0;

  [[nodiscard]] virtual std::int64_t index() const = 0;
  [[nodiscard]] virtual double temperature_at(std::int64_t step) const = 0;
  [[nodiscard]] virtual bool stopped() const = 0;
  [[nodiscard]] virtual std::int64_t members() const = 0;
  [[nodiscard]] virtual std::int64_t diverged_step() const = 0;
  /// CPU seconds spent in gradient steps (Adam and simmering) and in member evaluation and
  /// trace records.
  [[nodiscard]] virtual double step_seconds() const = 0;
  [[nodiscard]] virtual double eval_seconds() const = 0;

  /// The complete state, for checkpoints (taken after a gather: no rows owed): during Adam its
  /// state (parameters, moments, mini-batch stream, epoch), once simmering everything else.
  /// `load` expects a chain constructed for the same problem and index and restores it in the
  /// phase it was saved in (at simmering step `step`).
  virtual void save(ByteWriter& w) const = 0;
  virtual void load(ByteReader& r, std::int64_t step) = 0;

  /// Replica exchange (run/replica_sets.hpp): the loss L at the current position (NaN once
  /// stopped, or before simmering); collective in a gradient group.
  virtual double exchange_loss() = 0;
  /// The configuration another trajectory takes in a swap: parameters, velocities, thermostat.
  virtual void save_configuration(ByteWriter& w) const = 0;
  /// Takes a configuration another trajectory saved at temperature `from`: velocities and
  /// thermostat velocities rescaled by sqrt(to / from) for this trajectory's temperature `to`.
  /// Its diagnostics go on (the jump is part of its temperature's series).
  virtual void load_configuration(ByteReader& r, double from, double to) = 0;
  /// The step h now (simmer.time_step, or the one simmer.time_step = auto chose; NaN before an
  /// automatic step is chosen).
  [[nodiscard]] virtual double time_step() const = 0;
  /// The configuration this trajectory holds, by the trajectory it started at: its own index
  /// until a swap brings another's (carried in the configuration's bytes, so a swap that moved
  /// no state would show here).
  [[nodiscard]] virtual std::int64_t configuration() const = 0;

 protected:
  [[nodiscard]] virtual std::int64_t adam_epochs() const = 0;
  std::function<void(const Warning&)> warn_ = [](const Warning& warning) {
    std::fprintf(stderr, "%s\n", warning.text.c_str());
    std::fflush(stderr);
  };
};

/// Trajectory `index` of `problem` in the problem's compute precision (run.precision).
std::unique_ptr<Chain> make_chain(const Problem& problem, std::int64_t index);

/// One trajectory computing in S: its network, objective, Adam state, integrator and the
/// particle state are in S; everything it accumulates (diagnostics, votes, means, energies) is
/// float64.
template <class S>
class BasicChain final : public Chain {
 public:
  // VectorOf<S> and Matrix are float64 here, as everywhere; the chain's own precision is VectorOf<S>.
  /// Trajectory `index` of `problem` (which must outlive the chain): its network initialised
  /// from its initialization stream, its members drawn from its sampling stream.
  BasicChain(const Problem& problem, std::int64_t index);
  BasicChain(const BasicChain&) = delete;
  BasicChain& operator=(const BasicChain&) = delete;

  void share_gradients(train::GradientCombiner* combiner) override {
    objective_->set_gradient_chunks(p_->run.gradient_chunks, combiner);
  }
  void adam_to(std::int64_t epoch, const EpochReport& on_epoch = {}, StopCheck stop = nullptr) override;
  [[nodiscard]] std::int64_t adam_epoch() const override { return adam_.epoch; }
  void finish_adam() override;
  void start() override;
  [[nodiscard]] bool started() const override { return trajectory_ != nullptr; }
  train::CurvatureEstimate stability_probe() override;
  const train::SpectrumEstimate& estimate_curvature(bool at_end) override;
  std::int64_t advance_to(std::int64_t end, StopCheck stop = nullptr) override;
  std::vector<ensemble::EnsemblePartial> take_partials() override;
  ChainRows take_rows() override;
  ConstBatchViewOf<double> baseline_prediction(std::size_t set) override;
  [[nodiscard]] bool has_baseline() const override { return baseline_.size() == parameters().size(); }
  [[nodiscard]] ChainReport report() override;
  void diagnostics_partials(ByteWriter& w, std::int64_t stage) const override {
    diag_.at(static_cast<std::size_t>(stage)).save_partials(w);
  }
  [[nodiscard]] Vector parameters_f64() const override { return parameters().template cast<double>(); }
  [[nodiscard]] Vector velocities_f64() const override {
    return started() ? phase().v.template cast<double>() : Vector();
  }
  [[nodiscard]] Vector baseline_f64() const override { return baseline_.template cast<double>(); }
  [[nodiscard]] std::int64_t index() const override { return index_; }
  [[nodiscard]] double temperature_at(std::int64_t step) const override { return trajectory_->temperature_at(step); }
  [[nodiscard]] bool stopped() const override { return stopped_; }
  [[nodiscard]] std::int64_t members() const override { return members_; }
  [[nodiscard]] std::int64_t diverged_step() const override { return diverged_step_; }
  [[nodiscard]] double step_seconds() const override { return step_seconds_; }
  [[nodiscard]] double eval_seconds() const override { return eval_seconds_; }
  void save(ByteWriter& w) const override;
  void load(ByteReader& r, std::int64_t step) override;
  double exchange_loss() override;
  void save_configuration(ByteWriter& w) const override;
  void load_configuration(ByteReader& r, double from, double to) override;
  [[nodiscard]] std::int64_t configuration() const override { return configuration_; }
  [[nodiscard]] double time_step() const override { return time_step_; }

  /// The state in the compute precision (tests).
  [[nodiscard]] const VectorOf<S>& parameters() const { return net_.parameters(); }
  [[nodiscard]] const VectorOf<S>& baseline() const { return baseline_; }
  [[nodiscard]] const train::BasicPhaseState<S>& phase() const { return trajectory_->phase(); }
  [[nodiscard]] const Vector& parameter_masses() const { return masses_; }  ///< empty: all 1

 private:
  [[nodiscard]] std::int64_t adam_epochs() const override { return p_->adam.epochs; }
  void record_trace(int phase, std::int64_t step, double temperature, double train_loss);
  /// The training loss on the validation rows at the current parameters (adam.keep).
  double validation_loss();
  /// adam.keep = best_validation: remembers the current iterate if its validation loss is the
  /// lowest so far (after Adam epoch `epoch`).
  void keep_if_best(std::int64_t epoch);
  void take_member(const train::StepRecord& rec);
  void check_health(const train::StepRecord& rec);
  /// In a window, every diagnostics.configurational_every steps: a configurational-temperature
  /// sample and the kinetic temperature, into the stage's diagnostics.
  void sample_thermometers(const train::StepRecord& rec);
  void score_baseline();
  void begin_trajectory(train::BasicPhaseState<S> start, std::int64_t first_step);
  /// Before the first step of stage `stage` > 0: the last stage's summary is kept, and this
  /// one's diagnostics start here.
  void begin_stage(std::int64_t stage);
  [[nodiscard]] Rng stream(RngPurpose purpose) const;
  /// The one (re)build of the integrator: at the start, after a checkpoint, new masses or a new
  /// step (integrator_options() as they are now, the trajectory's schedule and its noise stream).
  void set_trajectory(train::BasicPhaseState<S> phase, std::int64_t step);
  /// The problem's integrator options with this trajectory's parameter masses (if any).
  [[nodiscard]] train::NhcOptions integrator_options() const;
  /// simmer.parameter_masses = adam: masses_ from Adam's second moment at the start point, scaled
  /// by the ratio of the mass-weighted to the plain largest curvature (train/masses.hpp).
  void set_adam_masses();
  /// simmer.parameter_masses = curvature, after warm-up step `step`: on kCurvatureMassProbes
  /// evenly spaced steps, Hutchinson's diagonal of ∇²L here into adaptation_.
  void sample_curvature(std::int64_t step);
  /// simmer.parameter_masses = adapt or curvature, after the warm-up's last step: masses_ from the
  /// positions' variances or the mean Hessian diagonal (scaled as Adam's), v_i / sqrt(m_i) for the
  /// velocities (the unit-mass Maxwell–Boltzmann law becomes the massive one), and the integrator
  /// rebuilt with them.
  void finish_adaptation();
  /// simmer.time_step = auto, before simmering step `next`: at the stage's start and its warm-up's
  /// estimate steps, h from the stability limit measured here; at the window's first step, h
  /// from the warm-up's largest λ (run::AutoStep).
  void auto_step(std::int64_t next);
  /// The stability probe's λ_max here, kept in warmup_lambda_ when it is the warm-up's largest.
  double measure_curvature();
  /// The stability limit for λ_max at stage `stage`: the curvature's and the thermostat's
  /// (run::AutoStep).
  [[nodiscard]] double step_limit(double lambda_max, std::int64_t stage) const;
  /// h from now on: the integrator rebuilt with it (once simmering) and the stage's diagnostics told.
  void set_time_step(double h, std::int64_t stage);
  /// The masses scaled by the ratio of the mass-weighted to the plain largest curvature here.
  [[nodiscard]] Vector scaled_to_stability(const Vector& unscaled);
  /// `pred` in float64 for the accumulators: itself in a float64 run, else a copy in wide_.
  ConstBatchViewOf<double> wide(ConstBatchViewOf<S> pred);
  /// The checkpointed state as one field list for save and load (core/visit.hpp; run/
  /// chain_state.cpp). Loading at simmering step `step` reads the integrator's phase into
  /// `loaded` (save reads the trajectory's own). Whether the state is past Adam (simmering).
  template <class Ar>
  bool fields(Ar& ar, std::int64_t step, train::BasicPhaseState<S>& loaded);

  const Problem* p_;
  std::int64_t index_;
  model::BasicNetwork<S> net_;
  std::unique_ptr<train::BasicNetworkObjective<S>> objective_;
  std::unique_ptr<train::BasicTrajectory<S>> trajectory_;
  Rng minibatch_rng_;              ///< Adam's mini-batches (checkpointed during Adam)
  train::BasicAdamState<S> adam_;  ///< Adam's moments and epoch (a retrofit's first phase)
  /// adam.keep = best_validation: the iterate of the lowest validation loss so far, the one before
  /// it (the retrofit velocity), its epoch and loss (checkpointed during Adam).
  VectorOf<S> adam_best_, adam_best_previous_;
  std::int64_t adam_best_epoch_ = 0;
  double adam_best_loss_ = std::numeric_limits<double>::infinity();
  Rng noise_rng_;                        ///< the Langevin thermostat (checkpointed)
  Rng thermometer_rng_;                  ///< the configurational temperature's probes (checkpointed)
  Rng mass_rng_;                         ///< curvature masses: the warm-up's Hutchinson probes (checkpointed)
  Vector masses_;                        ///< the particles' masses (empty: all 1; checkpointed)
  std::int64_t configuration_ = index_;  ///< configuration(): its own until a swap (checkpointed)
  double time_step_;                     ///< h (simmer.time_step or auto's; checkpointed)
  double warmup_lambda_ = 0.0;           ///< auto: the largest λ_max of the stage's warm-up (checkpointed)
  train::MassAdaptation adaptation_;     ///< adapt, curvature: the warm-up's running sums (checkpointed)
  Matrix wide_;                          ///< float32 runs: predictions widened for the accumulators
  Vector diagonal_;                      ///< curvature masses: one Hessian-diagonal sample (scratch)
  // Members: every stage's, in step order.
  std::vector<std::int64_t> sample_steps_;
  std::size_t next_sample_ = 0;
  std::int64_t members_ = 0;                 ///< all stages
  std::vector<std::int64_t> stage_members_;  ///< per stage (every store.every-th is stored)
  double last_loss_ = 0.0;
  // This interval's partial ensemble, per stage and evaluation set.
  std::vector<std::vector<ensemble::VoteAccumulator::Votes>> votes_;
  std::vector<std::vector<ensemble::MeanAccumulator>> means_;  ///< running (never reset)
  std::vector<std::int64_t> interval_members_;                 ///< per stage
  std::vector<std::vector<double>> tracked_;                   ///< per stage
  // Rows owed to the archive, and the content digest of every draw stored so far (checkpointed).
  ChainRows rows_;
  Fnv1a draws_digest_;
  Fnv1a trace_digest_;              ///< of every /trace row recorded (Adam's too), as /checksums/trace
  Fnv1a tracked_digest_;            ///< of every member's tracked predictions, as /checksums/tracked
  std::int64_t tracked_count_ = 0;  ///< members whose tracked predictions it holds
  std::int64_t trace_count_ = 0;
  // Baseline: Adam's end point (retrofit) or the first member (ab initio).
  VectorOf<S> baseline_;  ///< in S
  std::vector<ensemble::SetScores> baseline_scores_;
  // Health.
  bool stopped_ = false;
  std::int64_t diverged_step_ = -1;
  std::int64_t slow_to_heat_step_ = -1;
  std::string diverged_reason_;
  int strikes_ = 0;
  double last_energy_ = std::numeric_limits<double>::quiet_NaN();
  double last_check_temperature_ = std::numeric_limits<double>::quiet_NaN();
  double last_check_kinetic_ = std::numeric_limits<double>::quiet_NaN();
  // Drift diagnostics per stage (with the summaries of the stages that ended), each stage's start
  // loss, curvature.
  std::vector<ensemble::TrajectoryDiagnostics> diag_;
  std::vector<ensemble::TrajectorySummary> ended_;
  std::vector<double> start_loss_;
  train::SpectrumEstimate curvature_start_, curvature_end_;
  double step_seconds_ = 0.0, eval_seconds_ = 0.0;
};

using Chain64 = BasicChain<double>;
using Chain32 = BasicChain<float>;

/// The drift diagnostics' setup of stage `stage` of `problem` (shared by every trajectory and the
/// pooled merge).
ensemble::DiagnosticsSetup diagnostics_setup(const Problem& problem, std::int64_t stage = 0);
/// The scored sets of `problem` (train, test[, validation]) as the scores see them.
std::vector<ensemble::ScoredSet> scored_sets(const Problem& problem);
/// The partial ensembles' shapes for `problem`.
ensemble::EnsembleShape ensemble_shape(const Problem& problem);

/// The rows a trajectory's network holds activations for: the largest evaluation set, or with
/// run.gradient_chunks > 1 one block of it (ceil(rows / chunks): every evaluation then passes
/// through the network a block at a time, so memory per rank falls with the chunk count), and
/// at least an Adam mini-batch.
Index activation_rows(const Problem& problem);

/// CPU seconds of this process (robust to oversubscription, where wall time includes waiting
/// for a core).
double cpu_seconds();

}  // namespace simmer::run
