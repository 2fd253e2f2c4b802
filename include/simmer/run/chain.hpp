#pragma once
/// \file
/// One trajectory, serial and complete: its network and objective, the Adam phase, the
/// integrator and temperature schedule, which steps are members, the health check, the drift
/// diagnostics, its partial ensemble, and the rows it owes the archive. No MPI, no HDF5:
/// simmer_mpi runs many of these (mpi/driver) and simmer_sine runs one.
///
/// Random numbers come from the trajectory's named streams (core/rng.hpp): its initial network
/// (initialization), its members (sampling), Adam's mini-batches (minibatch), a thermal start
/// (start_velocity), the Langevin noise (thermostat), the chaos check (jitter), the stability
/// and curvature probes. So a trajectory's bits depend on neither the rank that runs it nor how
/// many others there are.

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "simmer/core/bytes.hpp"
#include "simmer/core/rng.hpp"
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

/// One trajectory's end-of-run numbers.
struct ChainReport {
  std::int64_t index = 0;
  std::array<ensemble::SetScores, 2> baseline{};  ///< train, test; NaN without a baseline
  ensemble::TrajectorySummary summary;
  std::int64_t diverged_at = -1;
  std::int64_t slow_to_heat_at = -1;
  double start_loss = std::numeric_limits<double>::quiet_NaN();  ///< L at the simmering start
  train::SpectrumEstimate curvature_start, curvature_end;        ///< probes == 0: not estimated
  void save(ByteWriter& w) const;
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

class Chain {
 public:
  /// Trajectory `index` of `problem` (which must outlive the chain): its network initialised
  /// from its initialization stream, its members drawn from its sampling stream.
  Chain(const Problem& problem, std::int64_t index);
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  /// run.ranks_per_trajectory > 1: this chain's full-batch gradients are shared with the other
  /// ranks of its group through `combiner` (which must outlive the chain). Every rank of the
  /// group then runs the same chain in lockstep: each objective evaluation is collective.
  void share_gradients(train::GradientCombiner* combiner) {
    objective_->set_gradient_chunks(p_->run.gradient_chunks, combiner);
  }

  /// What a trajectory reports at once (printed by the process that runs it).
  struct Warning {
    enum class Kind { slow_to_heat, diverged } kind;
    std::string text;
  };
  /// Where this trajectory's warnings go. Default: stderr, every one.
  void set_warning_sink(std::function<void(const Warning&)> sink) { warn_ = std::move(sink); }

  /// Retrofit: Adam from the initial network (trace rows every run.trace_every epochs), then the
  /// baseline is Adam's end point and simmering starts from it. `on_epoch` sees every epoch.
  /// The same as adam_to(adam.epochs) then finish_adam().
  void train_adam(const train::EpochCallback& on_epoch = {});
  /// Adam's epochs up to `epoch` (exclusive of later ones; at most adam.epochs), continuing from
  /// where the last call (or a loaded checkpoint) left off.
  void adam_to(std::int64_t epoch, const train::EpochCallback& on_epoch = {});
  /// Adam's epochs completed.
  [[nodiscard]] std::int64_t adam_epoch() const { return adam_.epoch; }
  /// After Adam's last epoch: the baseline is its end point, and simmering starts there.
  void finish_adam();
  /// Starts simmering at the current parameters (ab initio; train_adam already did it for a
  /// retrofit).
  void start();
  [[nodiscard]] bool started() const { return trajectory_ != nullptr; }

  /// The leapfrog stability probe at the current position (power iteration, stability stream).
  train::CurvatureEstimate stability_probe();
  /// The curvature report at the current position (curvature stream); kept for the report.
  const train::SpectrumEstimate& estimate_curvature(bool at_end);

  /// Advances to step `end` (exclusive) unless stopped: health check, diagnostics, trace
  /// records every run.trace_every steps, members at their steps.
  void advance_to(std::int64_t end);

  /// This interval's partial ensemble (votes reset, running means kept, tracked predictions
  /// taken).
  ensemble::EnsemblePartial take_partial();
  /// The rows owed to the archive (then forgotten here).
  ChainRows take_rows();

  /// The baseline network's outputs on `x` (target units, or logits); valid until the next
  /// evaluation. Requires has_baseline().
  ConstBatchView baseline_prediction(const Matrix& x);
  [[nodiscard]] bool has_baseline() const { return baseline_.size() == parameters().size(); }
  [[nodiscard]] const Vector& baseline() const { return baseline_; }
  [[nodiscard]] ChainReport report();
  /// This trajectory's part of the pooled uncertainty scores and block metrics
  /// (ensemble::PooledDiagnostics::merge reads it).
  void diagnostics_partials(ByteWriter& w) const { diag_.save_partials(w); }

  [[nodiscard]] std::int64_t index() const { return index_; }
  [[nodiscard]] const Vector& parameters() const { return net_.parameters(); }
  [[nodiscard]] const train::PhaseState& phase() const { return trajectory_->phase(); }
  [[nodiscard]] double temperature_at(std::int64_t step) const { return trajectory_->temperature_at(step); }
  [[nodiscard]] bool stopped() const { return stopped_; }
  [[nodiscard]] std::int64_t members() const { return members_; }
  [[nodiscard]] std::int64_t diverged_step() const { return diverged_step_; }
  /// CPU seconds spent in gradient steps (Adam and simmering) and in member evaluation and
  /// trace records.
  [[nodiscard]] double step_seconds() const { return step_seconds_; }
  [[nodiscard]] double eval_seconds() const { return eval_seconds_; }

  /// The complete state, for checkpoints (taken after a gather: no rows owed): during Adam its
  /// state (parameters, moments, mini-batch stream, epoch), once simmering everything else.
  /// `load` expects a chain constructed for the same problem and index and restores it in the
  /// phase it was saved in (at simmering step `step`).
  void save(ByteWriter& w) const;
  void load(ByteReader& r, std::int64_t step);

 private:
  void record_trace(int phase, std::int64_t step, double temperature, double train_loss);
  void take_member(const train::StepRecord& rec);
  void check_health(const train::StepRecord& rec);
  void score_baseline();
  void begin_trajectory(train::PhaseState start, std::int64_t first_step);
  [[nodiscard]] Rng stream(RngPurpose purpose) const;

  const Problem* p_;
  std::int64_t index_;
  model::Network net_;
  std::unique_ptr<train::NetworkObjective> objective_;
  std::unique_ptr<train::Trajectory> trajectory_;
  Rng minibatch_rng_;      ///< Adam's mini-batches (checkpointed during Adam)
  train::AdamState adam_;  ///< Adam's moments and epoch (a retrofit's first phase)
  Rng noise_rng_;          ///< the Langevin thermostat (checkpointed)
  std::function<void(const Warning&)> warn_;

  // Members.
  std::vector<std::int64_t> sample_steps_;
  std::size_t next_sample_ = 0;
  std::int64_t members_ = 0;
  double last_loss_ = 0.0;
  // This interval's partial ensemble, per evaluation set.
  std::vector<ensemble::VoteAccumulator::Votes> votes_;
  std::vector<ensemble::MeanAccumulator> means_;  ///< running (never reset)
  std::int64_t interval_members_ = 0;
  std::vector<double> tracked_;
  // Rows owed to the archive.
  ChainRows rows_;
  std::int64_t trace_count_ = 0;
  // Baseline: Adam's end point (retrofit) or the first member (ab initio).
  Vector baseline_;
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
  // Drift diagnostics, the start point's loss, curvature.
  ensemble::TrajectoryDiagnostics diag_;
  double start_loss_ = std::numeric_limits<double>::quiet_NaN();
  train::SpectrumEstimate curvature_start_, curvature_end_;
  double step_seconds_ = 0.0, eval_seconds_ = 0.0;
};

/// The drift diagnostics' setup for `problem` (shared by every trajectory and the pooled merge).
ensemble::DiagnosticsSetup diagnostics_setup(const Problem& problem);
/// The partial ensembles' shapes for `problem`.
ensemble::EnsembleShape ensemble_shape(const Problem& problem);

/// CPU seconds of this process (robust to oversubscription, where wall time includes waiting
/// for a core).
double cpu_seconds();

}  // namespace simmer::run
