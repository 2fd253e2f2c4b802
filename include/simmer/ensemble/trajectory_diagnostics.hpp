#pragma once
/// \file
/// Is what one trajectory sampled an ensemble or a drift? (docs/METHOD.md §10, issue 10.) Kept
/// online, O(N) per member and O(1) per step, with no stored networks: where the parameters went
/// (distance from the start point, path length ∫|v| dt, their ratio, rms and largest |x_i|), the
/// members' own series (loss, train/test metric, rms), the trajectory's ensemble per block of the
/// window, and the partial sums the pooled uncertainty scores need (mean class probabilities or
/// coverage counts). The verdict and its thresholds are documented in docs/STATIONARITY.md.
/// No MPI: the driver gathers `save_partials` to rank 0, which merges them in trajectory order
/// (PooledDiagnostics), so the pooled numbers do not depend on the number of ranks.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "simmer/core/bytes.hpp"
#include "simmer/core/names.hpp"
#include "simmer/core/types.hpp"
#include "simmer/core/visit.hpp"
#include "simmer/ensemble/accumulator.hpp"
#include "simmer/ensemble/sampling.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/train/configurational.hpp"

namespace simmer::ensemble {

/// What the members are scored against (train, test and the optional validation set).
struct ScoredSet {
  const Matrix* truth = nullptr;                      ///< regression: targets [rows][outputs]
  const std::vector<std::int64_t>* labels = nullptr;  ///< classification: class per row
  [[nodiscard]] Index rows() const;
};

struct DiagnosticsSetup {
  bool classification = false;
  Index outputs = 1;  ///< network outputs (1 for a binary logit)
  Index classes = 0;  ///< classification: classes that vote (2 for a binary logit)
  Index parameters = 0;
  std::int64_t window_first_step = 0;  ///< first step of the sampling window (0-based)
  std::int64_t window_steps = 1;
  std::int64_t blocks = 5;  ///< the window in this many blocks of steps
  double time_step = 0.0;   ///< h, for the path length
  /// The scored sets: 0 train, 1 test, then the optional validation set. The member series and
  /// the verdict use train and test; every set gets its pooled uncertainty partials.
  std::vector<ScoredSet> sets;
  /// Block of a step of the window (the last block takes the remainder).
  [[nodiscard]] std::int64_t block_of(std::int64_t step) const;
};

/// The verdict's thresholds (docs/STATIONARITY.md explains each).
struct VerdictThresholds {
  double ballistic = 0.5;    ///< window ballistic ratio at or above: moving one way
  double rms_growth = 1.05;  ///< rms at the window's end over its start at or above: growing
  double prior_bound = 3.0;  ///< with a prior, drifting only when rms > this × the prior's rms
  double rhat = 1.1;         ///< split-R̂ of the member series above: not mixed
  /// Exploded (judged diverged though no health check stopped it): the rms at the end above this
  /// × the larger of the start rms and the prior's rms, or the members' mean loss above
  /// explode_loss × the larger of the loss at the stage's start and the window's T, or a state
  /// that is not finite.
  double explode_rms = 1000.0;
  double explode_loss = 1e6;
  /// Otherwise stationary, but T_conf/T further than this from 1 by more than twice its standard
  /// error, over at least `configurational_samples` samples of the window: not equilibrated.
  double configurational = train::kConfigurationalTolerance;
  std::int64_t configurational_samples = 10;
};

/// not_equilibrated (issue 37): stationary by its series, but its positions are not distributed as
/// exp(−U/T) (T_conf/T off): the warm-up was too short for them to settle, or the step biases the
/// law. Appended last, so the older verdicts keep their codes.
enum class Verdict { stationary, not_mixed, drifting, diverged, no_members, not_equilibrated };
inline constexpr Names<Verdict, 6> kVerdictNames{"verdict",
                                                 {{{Verdict::stationary, "stationary"},
                                                   {Verdict::not_mixed, "not mixed"},
                                                   {Verdict::drifting, "drifting"},
                                                   {Verdict::diverged, "diverged"},
                                                   {Verdict::no_members, "no members"},
                                                   {Verdict::not_equilibrated, "not equilibrated"}}}};
inline std::string to_string(Verdict v) { return std::string(kVerdictNames.name(v)); }

/// Where the parameters x are, relative to the simmering start x₀.
struct Position {
  double distance = 0;     ///< |x − x₀|
  double path_length = 0;  ///< ∫|v| dt since the start (h·|v| per step)
  double rms = 0;          ///< |x| / sqrt(N)
  double max_abs = 0;      ///< max_i |x_i|
};

/// The test rows whose per-member value is a series of its own (TrajectorySummary::series_points):
/// the first, the middle and the last (fewer when the set has fewer rows; the archive names them
/// point_0..2, run/archive_paths.hpp's member_series_names).
std::vector<Index> fixed_test_rows(Index rows);

struct TrajectorySummary {
  std::int64_t members = 0;
  double distance = 0, path_length = 0;                ///< whole simmering run
  double window_distance = 0, window_path_length = 0;  ///< within the sampling window
  double rms_start = 0, rms_window_start = 0, rms_end = 0, max_abs_end = 0;
  std::vector<double> block_train_metric, block_test_metric;  ///< NaN for an empty block
  double member_train_median = 0, member_test_median = 0;
  double member_test_q25 = 0, member_test_q75 = 0;  ///< spread of the members' test metric
  double mean_member_loss = 0;                      ///< mean training loss of the members
  double rhat = 0;  ///< largest split-R̂ over the member loss, rms and test metric series
  /// The window's thermometers (train/configurational.hpp; NaN without samples): the mean kinetic
  /// temperature Σ m v²/N_f and the configurational temperature at the sampled steps, the mean
  /// target T there, and the step h the window ran with (simmer.time_step, or auto's choice).
  double kinetic_temperature = 0, configurational_temperature = 0, target_temperature = 0, time_step = 0;
  std::int64_t configurational_samples = 0;  ///< the samples behind configurational_temperature
  double configurational_stderr = 0;         ///< its standard error (ThermometerSums)
  /// T_conf / T (NaN without samples).
  [[nodiscard]] double configurational_ratio() const { return configurational_temperature / target_temperature; }
  /// Every member's series, in member order (the pooled R̂ and bulk ESS across trajectories, issue
  /// 21): its training loss, its test metric, and at the fixed test rows
  /// (fixed_test_rows) the log-probability of the true class (classification) or the prediction
  /// of output 0 (regression), [member][point].
  std::vector<double> series_loss, series_test_metric, series_points;
  Verdict verdict = Verdict::no_members;
  std::string reason;  ///< the numbers behind the verdict, one line
  [[nodiscard]] double ballistic_ratio() const;
  [[nodiscard]] double window_ballistic_ratio() const;
  /// Checkpoint and message fields (core/visit.hpp).
  template <class Ar>
  void fields(Ar& ar) {
    ar(members, distance, path_length, window_distance, window_path_length, rms_start, rms_window_start, rms_end,
       max_abs_end, block_train_metric, block_test_metric, member_train_median, member_test_median, member_test_q25,
       member_test_q75, mean_member_loss, rhat, kinetic_temperature, configurational_temperature, target_temperature,
       time_step, configurational_samples, configurational_stderr, series_loss, series_test_metric, series_points,
       verdict, reason);
    ar.require(kVerdictNames.name(verdict) != "?", "bad verdict code");
  }
};

/// The verdict from the numbers: see VerdictThresholds; `prior_rms` is NaN without a prior.
/// `start_loss`: the training loss at the stage's start (NaN: unknown, no loss rule).
void judge(TrajectorySummary& s, double prior_rms, bool diverged, double start_loss,
           const VerdictThresholds& t = VerdictThresholds{});

/// The window line of one stage (the end of a run and simmer_analyze summary): how long a
/// window would bring the split-R̂ of the *not mixed* trajectories whose split-R̂ is above
/// `t.rhat` under it, by window_for_split_rhat (the median and the largest of them), in steps and
/// as a multiple of `sampling.window`, with the stride (or fraction) that keeps the members as
/// many. `rhats` and `verdicts` per trajectory of the stage. Empty when no such trajectory.
std::string window_advice(const SamplingOptions& sampling, const std::vector<double>& rhats,
                          const std::vector<Verdict>& verdicts, const VerdictThresholds& t = VerdictThresholds{});

/// The partial sums behind the pooled scores, per scored set: the members' mean class
/// probabilities (classification) or coverage counts (regression), and each block's ensemble.
/// A trajectory keeps one; rank 0 adds every trajectory's in trajectory order.
struct DiagnosticsPartials {
  DiagnosticsPartials() = default;
  explicit DiagnosticsPartials(const DiagnosticsSetup& setup);
  std::vector<MeanAccumulator> probabilities;             ///< classification, [set]
  std::vector<MeanAccumulator> entropies;                 ///< classification, [set]: each member's entropy per row
  std::vector<CoverageCounter> coverage;                  ///< regression, [set]
  std::vector<std::vector<VoteAccumulator>> block_votes;  ///< classification, [set][block]
  std::vector<std::vector<MeanAccumulator>> block_means;  ///< regression, [set][block]
  /// Checkpoint and message fields (core/visit.hpp): loading replaces the sums, keeping the
  /// constructed shapes.
  template <class Ar>
  void fields(Ar& ar) {
    ar(fixed(probabilities), fixed(entropies), fixed(block_votes), fixed(coverage), fixed(block_means));
  }
  /// Adds what another trajectory's fields hold (votes and counts add, means merge by Chan's
  /// formula).
  void merge(const DiagnosticsPartials& other);
  /// The ensemble metric of each block on scored set `set` (0 train, 1 test, 2 validation):
  /// vote accuracy or R²; NaN for a block without members.
  [[nodiscard]] std::vector<double> block_metric(const DiagnosticsSetup& setup, int set) const;
};

class TrajectoryDiagnostics {
 public:
  // The positions x are in the run's compute precision S; everything kept here is float64.
  TrajectoryDiagnostics() = default;
  explicit TrajectoryDiagnostics(const DiagnosticsSetup& setup);

  /// The simmering start point x₀ (before step 0).
  template <class S>
  void start(const VectorOf<S>& x);
  /// After step `step` (0-based) with Σv² = `kinetic` at its end: path length; x at the end of
  /// the step before the window is the window's start point.
  template <class S>
  void after_step(std::int64_t step, const VectorOf<S>& x, double kinetic);
  template <class S>
  [[nodiscard]] Position position(const VectorOf<S>& x) const;
  /// The step h from now on (simmer.time_step = auto sets it during the warm-up; the path length
  /// and the summary use it).
  void set_time_step(double h) { time_step_ = h; }
  [[nodiscard]] double time_step() const { return time_step_; }
  /// The first step (0-based, the run's numbering) of this stage's sampling window.
  [[nodiscard]] std::int64_t window_first_step() const { return setup_.window_first_step; }
  /// A thermometer sample of the window (configurational sums, kinetic and target temperature).
  void add_thermometers(const train::ConfigurationalSample& c, double kinetic_temperature, double temperature) {
    thermometers_.add(c, kinetic_temperature, temperature);
  }

  /// A member taken at `step`: begin_member, then its predictions on every scored set (0 train,
  /// 1 test[, 2 validation]), in target units or logits (read at once: the caller's buffer may be
  /// reused), then member_done with its position and training loss.
  void begin_member(std::int64_t step);
  void member_predictions(int set, ConstBatchView prediction);
  template <class S>
  void member_done(const VectorOf<S>& x, double train_loss);

  [[nodiscard]] std::int64_t members() const { return static_cast<std::int64_t>(series_step_.size()); }
  /// The summary at the position `x` (the end of the run), judged.
  template <class S>
  [[nodiscard]] TrajectorySummary summary(const VectorOf<S>& x, double prior_rms, bool diverged,
                                          double start_loss) const;

  /// Full state (checkpoints; core/visit.hpp), the constructed setup kept.
  template <class Ar>
  void fields(Ar& ar) {
    ar(start_, window_start_, rms_start_, rms_window_start_, path_, window_path_, window_started_, time_step_,
       thermometers_, series_step_, series_loss_, series_train_, series_test_, series_rms_, series_points_, partials_);
  }
  void save(ByteWriter& w) const;
  void load(ByteReader& r);
  /// What the pooled scores need: mean class probabilities or coverage counts, and the block
  /// ensembles, per set.
  void save_partials(ByteWriter& w) const;

 private:
  friend class PooledDiagnostics;
  DiagnosticsSetup setup_;
  Vector start_, window_start_;
  double rms_start_ = 0, rms_window_start_ = 0;
  double path_ = 0, window_path_ = 0;
  bool window_started_ = false;
  double time_step_ = 0;
  train::ThermometerSums thermometers_;
  // member series
  std::vector<double> series_step_, series_loss_, series_train_, series_test_, series_rms_;
  std::vector<double> series_points_;  ///< [member][fixed test row]
  std::vector<double> pending_points_;
  double pending_metric_[2] = {0, 0};  ///< the member's train and test metric (its series)
  std::int64_t pending_step_ = 0;
  std::int64_t pending_block_ = 0;
  DiagnosticsPartials partials_;
  Matrix probability_scratch_, entropy_scratch_;
};

/// Rank 0's merge of every trajectory's partials, in trajectory order.
class PooledDiagnostics {
 public:
  explicit PooledDiagnostics(const DiagnosticsSetup& setup);
  /// One trajectory's save_partials (all of `r`).
  void merge(ByteReader& r);
  /// Mean class probabilities of all members on a set [rows][classes] (classification).
  [[nodiscard]] const Matrix& probabilities(int set) const {
    return partials_.probabilities[static_cast<std::size_t>(set)].mean();
  }
  /// The members' mean entropy per row [rows][1] (classification): the aleatoric part of the
  /// mean probabilities' entropy, whose rest is the mutual information.
  [[nodiscard]] const Matrix& member_entropy(int set) const {
    return partials_.entropies[static_cast<std::size_t>(set)].mean();
  }
  [[nodiscard]] double coverage(int set, double level) const {
    return partials_.coverage[static_cast<std::size_t>(set)].coverage(level);
  }
  [[nodiscard]] const CoverageCounter& coverage_counts(int set) const {
    return partials_.coverage[static_cast<std::size_t>(set)];
  }
  /// The pooled ensemble's metric (accuracy of the vote, or R²) of each block of the window.
  [[nodiscard]] std::vector<double> block_metric(int set) const { return partials_.block_metric(setup_, set); }

 private:
  DiagnosticsSetup setup_;
  DiagnosticsPartials partials_;
};

}  // namespace simmer::ensemble
