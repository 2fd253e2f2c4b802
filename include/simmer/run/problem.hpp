#pragma once
/// \file
/// Everything a run needs that follows from the configuration and the data alone, identical on
/// every rank: the split data in raw and scaled units, the evaluation sets, the scalers, and
/// every option as a typed value (enums, not strings; units stated). `cli::build_problem` makes
/// it from a validated configuration; nothing below the command line sees INI keys. No MPI, no
/// HDF5.

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "simmer/data/dataset.hpp"
#include "simmer/data/scaler.hpp"
#include "simmer/ensemble/sampling.hpp"
#include "simmer/ensemble/selection.hpp"
#include "simmer/model/architecture.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/run/archive_paths.hpp"
#include "simmer/train/adam.hpp"
#include "simmer/train/masses.hpp"
#include "simmer/train/nhc.hpp"
#include "simmer/train/posterior.hpp"
#include "simmer/train/schedule.hpp"
#include "simmer/train/trajectory.hpp"

namespace simmer::run {

/// A set of inputs every ensemble member is evaluated on.
struct EvalSet {
  std::string name;                  ///< "train", "test", "validation", "points"
  Matrix x_raw;                      ///< raw units
  Matrix x;                          ///< scaled to the network's input range
  Matrix y;                          ///< raw targets (one-hot, or 0/1 for BCE); empty for points
  std::vector<std::int64_t> labels;  ///< classification truth (empty for points)
  /// x and y in float32, for a float32 run (run.precision = float32; empty otherwise).
  MatrixOf<float> x32, y32;
  [[nodiscard]] bool has_targets() const { return y.rows() > 0; }
  [[nodiscard]] Index rows() const { return x.rows(); }
  /// Fills x32 and y32 when `p` is float32 (once the set is complete).
  void prepare(Precision p) {
    if (p != Precision::float32) return;
    x32 = x.cast<float>();
    y32 = y.cast<float>();
  }
};

/// A set's scaled inputs and targets in the compute precision S.
template <class S>
const MatrixOf<S>& inputs(const EvalSet& s) {
  if constexpr (std::is_same_v<S, float>) {
    return s.x32;
  } else {
    return s.x;
  }
}
template <class S>
const MatrixOf<S>& targets(const EvalSet& s) {
  if constexpr (std::is_same_v<S, float>) {
    return s.y32;
  } else {
    return s.y;
  }
}

/// How a run is carried out.
struct RunOptions {
  std::int64_t trajectories = 1;
  std::uint64_t seed = 1;                   ///< every trajectory's named streams derive from it
  std::int64_t steps = 1;                   ///< simmering steps
  std::int64_t gather_interval = 1000;      ///< steps between gathers to rank 0 and archive writes
  std::int64_t trace_every = 10;            ///< steps (and Adam epochs) between /trace records
  std::int64_t checkpoint_interval = 1000;  ///< steps between checkpoints (0: only after Adam)
  /// A checkpoint due by checkpoint_interval is skipped while the checkpoints written so far took
  /// more than this share of the wall time since the run (or its resume) began (1: never skipped).
  double checkpoint_budget = 0.05;
  std::int64_t sync_every = 100;  ///< steps (and Adam epochs) between stop-signal checks
  /// Stop as at a stop signal (checkpoint, exit 3) at the first check after this many hours of
  /// wall time since the run's (or its resume's) work began, after the data are read (0: never): a
  /// batch job ends itself before its allocation does.
  double max_hours = 0.0;
  std::int64_t adam_checkpoint_every = 100;  ///< Adam epochs between checkpoints (0: none mid-Adam)
  std::int64_t ranks_per_trajectory = 1;     ///< k ranks evaluate each trajectory's gradient together
  std::int64_t gradient_chunks = 1;          ///< the full batch as a tree sum of this many row blocks
  /// The network's, Adam's and the particle update's scalar (thermostat and accumulators are
  /// float64 either way).
  Precision precision = Precision::float64;
  std::string output;  ///< the archive's path
  enum class Progress { automatic, bar, lines } progress = Progress::automatic;
  double progress_seconds = 10.0;  ///< seconds between progress lines off a terminal
};
inline constexpr Names<RunOptions::Progress, 3> kProgressNames{"run.progress",
                                                               {{{RunOptions::Progress::automatic, "auto"},
                                                                 {RunOptions::Progress::bar, "bar"},
                                                                 {RunOptions::Progress::lines, "lines"}}}};

/// The health check and the stability check (docs/METHOD.md §3's integrator can blow up).
struct HealthOptions {
  std::int64_t every = 100;  ///< steps between a trajectory's checks
  enum class OnDivergence { stop, warn } on_divergence = OnDivergence::stop;
  enum class StabilityCheck { refuse, warn, off } stability_check = StabilityCheck::refuse;
};
/// The stability check's verdict (docs/METHOD.md §3: leapfrog is stable for h < 2/sqrt(lambda_max))
/// on the worst start-point curvature of all trajectories, and what the run does about it.
struct StabilityVerdict {
  double lambda_max = 0.0;
  int trajectory = -1;  ///< whose start point has lambda_max
  double limit = 0.0;   ///< 2/sqrt(lambda_max) (train::CurvatureEstimate::time_step_limit)
  double time_step = 0.0;
  bool stable = true;   ///< time_step < limit
  bool proceed = true;  ///< stable, or stability_check = warn
  /// "stability: largest loss-Hessian eigenvalue ...": the line every run prints.
  [[nodiscard]] std::string report() const;
  /// Why the run goes on although unstable (warn), or why it is refused: "" when stable.
  [[nodiscard]] std::string problem() const;
};
StabilityVerdict judge_stability(double lambda_max, int trajectory, double time_step,
                                 HealthOptions::StabilityCheck check);

inline constexpr Names<HealthOptions::OnDivergence, 2> kOnDivergenceNames{
    "simmer.on_divergence",
    {{{HealthOptions::OnDivergence::stop, "stop"}, {HealthOptions::OnDivergence::warn, "warn"}}}};
inline constexpr Names<HealthOptions::StabilityCheck, 3> kStabilityCheckNames{
    "simmer.stability_check",
    {{{HealthOptions::StabilityCheck::refuse, "refuse"},
      {HealthOptions::StabilityCheck::warn, "warn"},
      {HealthOptions::StabilityCheck::off, "off"}}}};

/// How a temperature ladder's rungs are simmered (simmer.ladder_mode; docs/MIXING.md).
enum class LadderMode {
  sequential,  ///< every trajectory simmers every rung in turn, coldest first (a staircase)
  parallel     ///< trajectory i simmers rung i mod K for the whole run (replica exchange possible)
};
inline constexpr Names<LadderMode, 2> kLadderModeNames{
    "simmer.ladder_mode", {{{LadderMode::sequential, "sequential"}, {LadderMode::parallel, "parallel"}}}};

/// A temperature ladder (simmer.ladder, docs/MIXING.md): its rungs and how they are simmered.
struct LadderOptions {
  /// T_1 < ... < T_K, every T > 0 (the configuration's in simmer.temperature_unit; the Problem's
  /// in loss units): each trajectory simmers one stage of run.steps at each rung in turn, coldest
  /// first. Empty: one stage, the ramp.
  std::vector<double> rungs;
  LadderMode mode = LadderMode::sequential;  ///< with rungs: each trajectory's (all in turn, or rung i mod K)
  std::int64_t exchange_every = 0;           ///< parallel rungs: steps between replica-exchange rounds (0: none)
};

/// Which members are written to /posterior and how.
struct StoreOptions {
  std::int64_t every = 1;           ///< every k-th member (all members vote or enter the means)
  bool float32 = false;             ///< /posterior/params in float32 (the run computes in float64)
  std::vector<std::int64_t> track;  ///< test rows whose member predictions are kept
};

/// simmer.time_step = auto (issue 29, docs/MIXING.md): each stage's step is `fraction` of the
/// stability limit min(2/sqrt(λ_max), 2/sqrt(2 N_f T/Q_1)) (λ_max mass-weighted with masses; the
/// second the Nosé–Hoover chain's own, absent with Langevin). It is measured where the stage
/// starts and at `estimates` - 1 more evenly spaced steps of its warm-up (the steps before its
/// window), each time setting h from that estimate; at the window's first step h is set from the
/// largest λ of the warm-up and stays fixed through the window.
struct AutoStep {
  bool on = false;
  double fraction = 0.2;
  int estimates = 4;
};

/// The drift diagnostics, the curvature report (docs/STATIONARITY.md) and the chaos check.
struct DiagnosticsOptions {
  std::int64_t blocks = 5;  ///< the window in this many blocks of steps
  enum class CurvatureReport { off, start, start_end } curvature_report = CurvatureReport::start;
  int lanczos_steps = 40;
  int lanczos_probes = 3;
  /// Steps of the window between two samples of the configurational temperature (2 gradient
  /// evaluations each; train/configurational.hpp); 0: off.
  std::int64_t configurational_every = 50;
  /// Hutchinson probes per sample (2 gradient evaluations each): the trace's noise falls as
  /// 1/sqrt(probes), and with it the window's T_conf standard error (docs/MIXING.md).
  int configurational_probes = 1;
  /// The chaos check: every start velocity changed by this relative random amount (0: none).
  double start_jitter = 0.0;
};
inline constexpr Names<DiagnosticsOptions::CurvatureReport, 3> kCurvatureReportNames{
    "simmer.curvature_report",
    {{{DiagnosticsOptions::CurvatureReport::start, "start"},
      {DiagnosticsOptions::CurvatureReport::start_end, "start_end"},
      {DiagnosticsOptions::CurvatureReport::off, "off"}}}};

/// The model as the configuration named it, for /model's attributes.
struct ModelText {
  std::string architecture, activation, output, loss, init, pooling;
};

struct Problem {
  std::string config_ini;  ///< the effective configuration as INI text (/config, checkpoints)
  /// The input files' fingerprints, "key\tpath\tsize\tsha256" per line (/config attribute
  /// `input_files`, every checkpoint): set by simmer_mpi (rank 0 reads them, every rank has them).
  std::string input_fingerprints;
  data::Dataset train;  ///< raw units
  data::Dataset test;
  /// Held out of the training split (data.validation_fraction; empty without one): never in a
  /// gradient, Adam or the thermostat, only scored.
  data::Dataset validation;
  data::MinMaxScaler x_scaler;
  data::MinMaxScaler y_scaler;  ///< regression only
  /// train, test, then the optional validation set and points: the sets with targets (the
  /// scored sets) always come first.
  std::vector<EvalSet> sets;
  /// The sets with targets, scored for every ensemble and baseline: train, test[, validation].
  [[nodiscard]] std::size_t scored_sets() const { return validation.rows() > 0 ? 3 : 2; }
  [[nodiscard]] bool has_validation() const { return validation.rows() > 0; }
  /// The index in `sets` of the validation set (requires has_validation()).
  static constexpr std::size_t kValidation = 2;
  bool classification = false;
  Index outputs = 0;  ///< network outputs (classes, 1 for BCE, or targets)
  Index classes = 0;  ///< classification: classes that vote (2 for BCE's one logit)
  std::int64_t rows_read = 0;
  std::int64_t rows_dropped = 0;
  /// Why rows were dropped ("14 of 406 rows dropped (missing values): 8 with an empty field in
  /// column 'mpg' (lines 12, ...); ..."; empty when none was): the console and /data's attribute.
  std::string rows_dropped_reasons;
  /// What a user should know about the data that is no error (constant features, a class
  /// spelled like a missing value): printed by rank 0 before the run.
  std::vector<std::string> data_warnings;
  /// What the configuration does that a user may not expect (a ladder replacing the ramp):
  /// printed once by rank 0 before the run.
  std::vector<std::string> notes;

  model::ArchitectureSpec architecture;
  model::LossKind loss = model::LossKind::sse;
  train::StartMode mode = train::StartMode::retrofit;
  train::AdamOptions adam;
  train::NhcOptions nhc;  ///< masses resolved (martyna), prior precisions filled (fill_prior_precision)
  /// simmer.prior = gaussian: its σ and scaling (sigma 0: no prior). nhc.prior_precision holds
  /// its precisions, one per parameter, once fill_prior_precision has run.
  double prior_sigma = 0.0;
  train::PriorScaling prior_scaling = train::PriorScaling::none;
  /// Fills nhc.prior_precision (a vector of the parameter count) from prior_sigma and
  /// prior_scaling; nothing without a prior. cli::build_problem calls it unless told not to:
  /// simmer_mpi calls it after the node's memory check, so that a network too large for the
  /// node is refused before any vector of its size is allocated.
  void fill_prior_precision();
  /// In loss units (temperature_unit = posterior already applied). With a ladder, constant at its
  /// first (coldest) rung: the start velocity, Martyna masses and the curvature report use it.
  train::StepRamp ramp;
  /// simmer.ladder, its rungs in loss units (temperature_unit = posterior applied by set_noise_sd).
  LadderOptions ladder;
  /// simmer.mode = adam: Adam alone, no simmering stage; the run's ensemble is the deep ensemble.
  bool adam_only = false;
  ensemble::SelectionOptions selection;
  train::StartVelocity start_velocity = train::StartVelocity::adam;
  /// Where each trajectory's parameter masses come from (unit: none, the paper's arithmetic).
  train::MassOptions parameter_masses;
  ensemble::SamplingOptions sampling;
  Index parameters = 0;
  /// T_Bayes of the loss on the training set (NaN: a regression loss without a noise sd).
  double bayes_temperature = 0.0;
  double noise_sd = 0.0;  ///< regression: the targets' noise sd (target units; 0: unknown)
  /// Where noise_sd came from: "simmer.noise_sd", "validation residuals of the deep ensemble",
  /// "training residuals of the deep ensemble", or "unknown".
  std::string noise_sd_source = "unknown";
  /// simmer.noise_sd = auto in a regression with an Adam phase: noise_sd (and T_Bayes) are set
  /// after Adam by set_noise_sd, before any trajectory starts; until then they are unknown.
  bool noise_pending = false;
  /// temperature_unit = posterior before set_noise_sd: the ramp and the ladder still hold
  /// multiples of T_Bayes, which set_noise_sd turns into loss units.
  bool posterior_pending = false;
  /// simmer.temperature_unit = posterior: the user's temperatures are multiples of T_Bayes.
  bool posterior_units = false;
  /// Sets the noise sd, its source and T_Bayes (and with posterior_pending the temperatures in
  /// loss units). Called once: by cli::build_problem with simmer.noise_sd's value, or with auto
  /// after Adam, on every rank alike.
  void set_noise_sd(double sd, std::string source);
  /// sqrt(mean σ_i²) of the Gaussian prior (NaN without one).
  double prior_rms = 0.0;
  ModelText model_text;
  RunOptions run;
  HealthOptions health;
  StoreOptions store;
  DiagnosticsOptions diagnostics;
  AutoStep auto_step;  ///< simmer.time_step = auto (then nhc.time_step is NaN: each chain chooses)

  /// Output un-scaling for the objective (empty for classification).
  Eigen::RowVectorXd output_scale;
  Eigen::RowVectorXd output_offset;

  /// Simmering stages (candidate ensembles), each with its own members, ensemble and
  /// diagnostics: one (the ramp), one per ladder rung, or none (adam_only).
  [[nodiscard]] std::int64_t stages() const {
    return adam_only ? 0 : (ladder.rungs.empty() ? 1 : static_cast<std::int64_t>(ladder.rungs.size()));
  }
  /// Whether the ladder's rungs run side by side (trajectory i at rung i mod K).
  [[nodiscard]] bool parallel_rungs() const { return !ladder.rungs.empty() && ladder.mode == LadderMode::parallel; }
  /// Stages each trajectory simmers one after another, run.steps each: every stage, or with
  /// parallel rungs one (its rung's).
  [[nodiscard]] std::int64_t chain_stages() const { return parallel_rungs() ? (adam_only ? 0 : 1) : stages(); }
  /// Whether trajectory `index` simmers stage `k` (and has members in it).
  [[nodiscard]] bool runs_stage(std::int64_t index, std::int64_t k) const {
    return !parallel_rungs() || index % stages() == k;
  }
  /// The stage trajectory `index` is in at simmering step `step` (0-based, all stages counted).
  [[nodiscard]] std::int64_t stage_of(std::int64_t index, std::int64_t step) const {
    return parallel_rungs() ? index % stages() : stage_of(step);
  }
  /// The first simmering step of stage `k` (of a trajectory that runs it).
  [[nodiscard]] std::int64_t stage_first_step(std::int64_t k) const { return parallel_rungs() ? 0 : k * run.steps; }
  /// Members of every trajectory in each stage it runs, and the draws of them stored (every
  /// store.every-th member of a stage, counted from the stage's first).
  [[nodiscard]] std::int64_t members_per_stage() const { return ensemble::member_count(run.steps, sampling); }
  [[nodiscard]] std::int64_t draws_per_stage() const { return (members_per_stage() + store.every - 1) / store.every; }
  /// Simmering steps of every trajectory, all its stages together.
  [[nodiscard]] std::int64_t total_steps() const { return chain_stages() * run.steps; }
  /// The time stage a simmering step (0-based, all stages counted) belongs to (with parallel
  /// rungs, 0: stage_of(index, step) gives the trajectory's).
  [[nodiscard]] std::int64_t stage_of(std::int64_t step) const {
    return run.steps > 0 && !parallel_rungs() ? step / run.steps : 0;
  }
  /// Stage k's (final) temperature in loss units: the ramp's target, or rung k.
  [[nodiscard]] double stage_temperature(std::int64_t k) const {
    return ladder.rungs.empty() ? ramp.target : ladder.rungs.at(static_cast<std::size_t>(k));
  }
  /// "rung_<k>" with a ladder, else "simmering": the stage's candidate name (/ladder/<name>).
  [[nodiscard]] std::string stage_name(std::int64_t k) const {
    return ladder.rungs.empty() ? std::string(layout::kSimmeringName) : layout::rung_name(k);
  }
  /// T of every simmering step of trajectory `index`, all stages: the ramp, rung
  /// stage_of(step) (sequential), or its own rung (parallel).
  [[nodiscard]] train::Schedule schedule(std::int64_t index = 0) const;
  /// The first T > 0 trajectory `index` simmers at (a thermal start's).
  [[nodiscard]] double first_temperature(std::int64_t index) const {
    return parallel_rungs() ? stage_temperature(stage_of(index, 0)) : ramp.first_positive();
  }
  /// The set a noise variance is measured on (simmer.noise_sd = auto: the deep ensemble's residuals;
  /// the baseline network's Gaussian NLL: its own): validation, else train.
  [[nodiscard]] std::size_t noise_set() const { return has_validation() ? kValidation : 0; }
  /// Whether the run reports the deep ensemble of its trajectories' Adam end points.
  [[nodiscard]] bool has_deep_ensemble() const { return mode == train::StartMode::retrofit; }
};

/// A step of h moves a unit-mass parameter at the thermal speed sqrt(T) by h sqrt(T). Beyond this
/// every weight of a network whose loss lives at weights of order one is thrown out of it at the
/// first step: the run would not sample, it would blow up (simmer.ladder = 1,1e308). Mass-weighted
/// runs keep the unit-mass stability limit, so the bound holds for them too.
inline constexpr double kMaxThermalDisplacement = 100.0;

/// Why the run's hottest temperature (the ladder's last rung, else the ramp's hotter end; in loss
/// units, so after set_noise_sd) cannot be simmered with steps of `h`, or "" when it can: N_f T,
/// the kinetic energy's scale, is not a finite number, or (h a number) one step moves a parameter
/// by h sqrt(T) > kMaxThermalDisplacement, so the trajectory blows up at its first step. The text
/// follows "<key> = <value> " in a refusal; `step` names h ("simmer.time_step = 0.01"). The
/// hottest T allowed is said in the user's units (x T_Bayes with posterior_units).
std::string too_hot(const Problem& p, double h, const std::string& step);
/// The hottest temperature in loss units (the ladder's last rung, else the ramp's hotter end) and
/// the key that sets it: "simmer.ladder", "simmer.T_target" or "simmer.T_initial".
inline double hottest_temperature(const Problem& p) {
  return p.ladder.rungs.empty() ? std::max(p.ramp.initial, p.ramp.target) : p.ladder.rungs.back();
}
inline const char* hottest_key(const Problem& p) {
  if (!p.ladder.rungs.empty()) return "simmer.ladder";
  return p.ramp.initial > p.ramp.target ? "simmer.T_initial" : "simmer.T_target";
}

}  // namespace simmer::run
