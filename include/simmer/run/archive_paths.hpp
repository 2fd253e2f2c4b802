#pragma once
/// \file
/// The archive's groups, datasets and shared attribute names (ARCHITECTURE.md, "Archive layout"),
/// each spelled here once, for the run (parallel::ArchiveWriter, parallel/report and the driver),
/// simmer_analyze (merge, summary, predict, export, verify, run_archive), parallel::write_metrics,
/// the resume check and the resource estimate, which build every path from these names.
/// /metrics and its attribute names are in metrics.hpp, the statuses and the per-chain field
/// lists in archive_layout.hpp (which includes this header); the checksummed copy of a group's
/// attributes (attribute_names, attribute_values) belongs to the HDF5 layer (io::kAttributeNames,
/// io::kAttributeValues in io/archive_reader.hpp).
///
/// A constant is a full path ("/posterior/params") when the object sits at one place, a member
/// name ("votes") when it recurs under several groups; `join` and the builders put them together.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace simmer::run::layout {

/// `parent`/`name`: a member of a group ("/name" under the root "/").
inline std::string join(std::string_view parent, std::string_view name) {
  std::string out(parent);
  if (out.empty() || out.back() != '/') out += '/';
  return out.append(name);
}

/// The attribute saying in words what a group or dataset holds (text), where its name alone does
/// not (/ladder, /ensemble/<set>/coverage_below, /ladder/exchange_acceptance, ...).
inline constexpr const char* kMeaning = "meaning";

// ---- The root --------------------------------------------------------------------------------

/// The root group, whose attributes describe the run.
inline constexpr const char* kRoot = "/";
/// Root attributes (text unless said): the writing simmer's version; the creation time (UTC,
/// ISO 8601); the command line; MPI ranks (integer); trajectories (integer: the chain axis);
/// simmer.mode; the task (classification or regression); run.precision (float64 or float32).
inline constexpr const char* kSimmerVersion = "simmer_version";
/// The archive's format (integer): 1 (no attribute) fixed-length string arrays; 2 strings as
/// netCDF character arrays [n, width] with a <name>_strlen dimension and NUL-terminated text
/// attributes; 3 as 2, with a checksummed copy of the attributes of every choice group and every
/// /diagnostics, which verify requires (format 2 archives had them one group at a time). Every
/// reader reads all three.
inline constexpr const char* kFormatVersion = "format_version";
inline constexpr std::int64_t kArchiveFormat = 3;
inline constexpr const char* kCreatedAt = "created_at";
inline constexpr const char* kCommandLine = "command_line";
inline constexpr const char* kMpiRanks = "mpi_ranks";
inline constexpr const char* kTrajectories = "trajectories";
inline constexpr const char* kMode = "mode";
inline constexpr const char* kTask = "task";
inline constexpr const char* kPrecision = "precision";
/// The run's identity (text; also an attribute of /config): binds archive, checkpoint and lock.
inline constexpr const char* kRunId = "run_id";
/// The run's status (text: archive_layout.hpp's kStatus*).
inline constexpr const char* kStatus = "status";
/// The thermostat (text) and its masses as resolved (real).
inline constexpr const char* kThermostat = "thermostat";
inline constexpr const char* kThermostatMasses = "thermostat_masses";
/// The curvature at the start (real): the largest Hessian eigenvalue and the stability limit 2/√λ.
inline constexpr const char* kLambdaMax = "lambda_max";
inline constexpr const char* kTimeStepLimit = "time_step_limit";
/// The run's wall time in seconds (real; a merge's: the inputs' sum).
inline constexpr const char* kWallSeconds = "wall_seconds";
/// HDF5 transfers the run made, all and collective (integer).
inline constexpr const char* kIoTransfers = "io_transfers";
inline constexpr const char* kIoCollectiveTransfers = "io_collective_transfers";
/// A merge's original runs, "path (run.seed s, n trajectories), ..." in the order of /origin's
/// runs (text; root and /config): a merged input is listed by the runs it came from.
inline constexpr const char* kMergedFrom = "merged_from";

// ---- /checksums -----------------------------------------------------------------------------

/// /checksums [chain] (integer): each trajectory's content digest of the draws it stored (64-bit
/// FNV-1a, core/digest.hpp, over each draw's /posterior/params row as stored, then its
/// /sample_stats fields in their order; the bits of the unsigned digest) and how many draws it
/// covers. The final read-back and verify recompute it: a chunk zeroed together with its
/// Fletcher-32 checksum reads back without an error, but not with this digest.
inline constexpr const char* kChecksums = "/checksums";
inline constexpr const char* kDrawsDigest = "/checksums/draws";
inline constexpr const char* kDrawsDigestCount = "/checksums/draws_count";
/// The same of each trajectory's /trace rows (each row's fields in trace_fields() order) and how
/// many rows it covers.
inline constexpr const char* kTraceDigest = "/checksums/trace";
inline constexpr const char* kTraceDigestCount = "/checksums/trace_count";
/// The same of each trajectory's rows of /ensemble/test/tracked (store.track; regression), and
/// how many members they cover.
inline constexpr const char* kTrackedDigest = "/checksums/tracked";
inline constexpr const char* kTrackedDigestCount = "/checksums/tracked_count";
/// The same of the rows each trajectory writes once (/initial, /baseline): /checksums/rows<dataset>
/// [chain] (e.g. /checksums/rows/initial/params), over that trajectory's slab of the dataset as
/// float64; 0 for a trajectory that wrote none there (a baseline it does not have).
inline constexpr const char* kRowDigests = "/checksums/rows";
/// The attribute of each of them that names the dataset it digests (what a reader walks by).
inline constexpr const char* kRowDigestOf = "digest_of";
inline std::string row_digest(std::string_view dataset) { return std::string(kRowDigests) + std::string(dataset); }

// ---- /origin (a merged archive's) ------------------------------------------------------------

/// /origin: where each trajectory of a merged archive came from, so that a merge of merges counts
/// each one once (a run's own archive has none: its trajectories are its run id's 0..C-1).
/// Datasets [chain] (integer): run.seed, data.split_seed, the trajectory's index in its own run
/// and the run's index into the attributes run_ids (comma-separated) and archives (one path per
/// line), which list the original runs sorted by seed, split seed and run id (the rows follow the
/// chains, in the order of the merge's inputs).
inline constexpr const char* kOrigin = "/origin";
inline constexpr const char* kOriginSeed = "/origin/run_seed";
inline constexpr const char* kOriginSplitSeed = "/origin/split_seed";
inline constexpr const char* kOriginTrajectory = "/origin/trajectory";
inline constexpr const char* kOriginRun = "/origin/run";
inline constexpr const char* kOriginRunIds = "run_ids";
inline constexpr const char* kOriginArchives = "archives";

// ---- /config ---------------------------------------------------------------------------------

/// /config [1] (text): the effective INI of the run.
inline constexpr const char* kConfig = "/config";
/// /config attributes: the input files' fingerprints (text) and a merge's run seeds (ascending, "1,2,3").
inline constexpr const char* kInputFiles = "input_files";
inline constexpr const char* kRunSeeds = "run_seeds";

// ---- /data -----------------------------------------------------------------------------------

/// /data: the run's data in raw units; attributes kRowsRead, kRowsDropped (integer) and, when rows
/// were dropped, kRowsDroppedReasons (text).
inline constexpr const char* kData = "/data";
inline constexpr const char* kRowsRead = "rows_read";
inline constexpr const char* kRowsDropped = "rows_dropped";
inline constexpr const char* kRowsDroppedReasons = "rows_dropped_reasons";
/// The evaluation sets, as they name /data/<set>, /ensemble/<set> and the score keys: train and
/// test always, validation with data.validation_fraction, points for extra inputs (no target).
inline constexpr const char* kTrain = "train";
inline constexpr const char* kTest = "test";
inline constexpr const char* kValidation = "validation";
inline constexpr const char* kPoints = "points";
/// The sets with targets, which every ensemble is scored on (train, test, validation; not points).
inline bool is_scored_set(std::string_view set) { return set == kTrain || set == kTest || set == kValidation; }
/// /data/<set>: x [row, feature] (raw units) and y [row, target] (regression) or [row] (class index).
inline std::string data_group(std::string_view set) { return join(kData, set); }
inline std::string data_x(std::string_view set) { return join(data_group(set), "x"); }
inline std::string data_y(std::string_view set) { return join(data_group(set), "y"); }
/// /data/scaling: the min-max scaling of inputs (x_min, x_max [feature]) and, for regression,
/// targets (y_min, y_max [target]).
inline constexpr const char* kScaling = "/data/scaling";
inline constexpr const char* kXMin = "/data/scaling/x_min";
inline constexpr const char* kXMax = "/data/scaling/x_max";
inline constexpr const char* kYMin = "/data/scaling/y_min";
inline constexpr const char* kYMax = "/data/scaling/y_max";
/// Column names (text): inputs [feature], targets [target], class labels [class] (classification).
inline constexpr const char* kFeatureNames = "/data/feature_names";
inline constexpr const char* kTargetNames = "/data/target_names";
inline constexpr const char* kClassNames = "/data/class_names";

// ---- /model ----------------------------------------------------------------------------------

/// /model: the network's layout, as attributes (text unless said): model.architecture,
/// activation, output, loss, init, the parameter count (integer), the flattening order, and for
/// images the pooling and input shape ("HxWxC (height x width x channels)").
inline constexpr const char* kModel = "/model";
inline constexpr const char* kArchitecture = "architecture";
inline constexpr const char* kActivation = "activation";
inline constexpr const char* kOutput = "output";
inline constexpr const char* kModelLoss = "loss";
inline constexpr const char* kInit = "init";
inline constexpr const char* kParameters = "parameters";
inline constexpr const char* kFlattening = "flattening";
inline constexpr const char* kPooling = "pooling";
inline constexpr const char* kInputShape = "input_shape";
/// The parameter vector's tensors: name (text), offset [tensor], shape [tensor, 4] (padded with 1)
/// and rank [tensor].
inline constexpr const char* kTensorName = "/model/tensor_name";
inline constexpr const char* kTensorOffset = "/model/tensor_offset";
inline constexpr const char* kTensorShape = "/model/tensor_shape";
inline constexpr const char* kTensorRank = "/model/tensor_rank";

// ---- An ensemble's arrays (/ensemble, /deep_ensemble, /ladder/<rung>) ------------------------

/// An ensemble's group holds one group per evaluation set (/ensemble/<set>, attribute kMembers),
/// whose datasets are: classification kVotes [row, class] (integer), kPrediction [row] (the
/// majority; ties to the lowest class), kFraction [row, class] and, for the scored sets,
/// kProbability [row, class] (the members' mean softmax); regression kMean, kVariance [row,
/// output] and, for the scored sets, kCoverageBelow, kCoverageEqual [row, output] (integer:
/// members below / equal to the truth). kPrediction also names /baseline/<set>/prediction.
inline constexpr const char* kVotes = "votes";
inline constexpr const char* kPrediction = "prediction";
inline constexpr const char* kFraction = "fraction";
inline constexpr const char* kProbability = "probability";
inline constexpr const char* kMean = "mean";
inline constexpr const char* kVariance = "variance";
inline constexpr const char* kCoverageBelow = "coverage_below";
inline constexpr const char* kCoverageEqual = "coverage_equal";
/// Classification, the scored sets (issue 26): kMemberEntropy [row], the members' mean entropy
/// of their softmax (nats); with kProbability's entropy H it gives the mutual information
/// H − member_entropy (the members' disagreement).
inline constexpr const char* kMemberEntropy = "member_entropy";
/// Regression, every set, once the run has ended (issue 26): the predictive mixture's components
/// (ensemble/predictive.hpp), one per trajectory: kTrajectoryMembers [chain] (integer: its members
/// in this ensemble; the deep ensemble's: 1, its Adam end point), kTrajectoryMean and
/// kTrajectoryVariance [chain, row, output] (their mean and variance Σ(p − mean)²/n); and in the
/// ensemble's group kNoiseVariance [output], σ², with the attribute kNoiseSource (text:
/// validation or training, ensemble::kNoiseSourceNames).
inline constexpr const char* kTrajectoryMembers = "trajectory_members";
inline constexpr const char* kTrajectoryMean = "trajectory_mean";
inline constexpr const char* kTrajectoryVariance = "trajectory_variance";
inline constexpr const char* kNoiseVariance = "noise_variance";
inline constexpr const char* kNoiseSource = "noise_source";
/// `<group>/<set>/<field>`: one of those datasets ("/ensemble/test/votes").
inline std::string ensemble_dataset(std::string_view group, std::string_view set, std::string_view field) {
  return join(join(group, set), field);
}

// ---- Per-chain groups ------------------------------------------------------------------------

/// Dimension scales, each a dataset named after its axis holding 0, 1, ..: chain, draw, param
/// (/posterior, /sample_stats) and block (/diagnostics).
inline constexpr const char* kChainAxis = "chain";
inline constexpr const char* kDrawAxis = "draw";
inline constexpr const char* kParamAxis = "param";
inline constexpr const char* kBlockAxis = "block";

/// /baseline: each trajectory's baseline network (the Adam end point of a retrofit, else the
/// first member): params [chain, param], the scores /baseline/<set>_<score> [chain]
/// (metrics.hpp's baseline_score) and the outputs /baseline/<set>/prediction [chain, row, output].
inline constexpr const char* kBaseline = "/baseline";
inline constexpr const char* kBaselineParams = "/baseline/params";
/// /baseline/<set> and its prediction [chain, row, output] (target units, or logits).
inline std::string baseline_set_group(std::string_view set) { return join(kBaseline, set); }
inline std::string baseline_prediction(std::string_view set) { return join(baseline_set_group(set), kPrediction); }
/// /baseline's attribute: which network the baseline is (text); the prediction's: its units and
/// axes (text).
inline constexpr const char* kBaselineKind = "kind";
inline constexpr const char* kUnits = "units";

/// /initial/{params,velocity} [chain, param]: where simmering started.
inline constexpr const char* kInitial = "/initial";
inline constexpr const char* kInitialParams = "/initial/params";
inline constexpr const char* kInitialVelocity = "/initial/velocity";

/// /posterior/params [chain, draw, param]: the stored networks (run precision or
/// ensemble.store_dtype), with the scales /posterior/{chain,draw,param}; attributes kStoreEvery
/// and kDrawsPerStage (integer).
inline constexpr const char* kPosterior = "/posterior";
inline constexpr const char* kPosteriorParams = "/posterior/params";
inline constexpr const char* kStoreEvery = "store_every";
inline constexpr const char* kDrawsPerStage = "draws_per_stage";

/// Field names of /sample_stats (per stored draw) and /trace (per record); archive_layout.hpp
/// lists them in order (sample_stat_fields, trace_fields). kTemperature is also a /selection
/// column and a ladder rung's attribute.
inline constexpr const char* kStep = "step";
inline constexpr const char* kTemperature = "temperature";
inline constexpr const char* kLoss = "loss";
inline constexpr const char* kKineticTemperature = "kinetic_temperature";
inline constexpr const char* kExtendedEnergy = "extended_energy";
inline constexpr const char* kPhase = "phase";
inline constexpr const char* kTrainLoss = "train_loss";
inline constexpr const char* kTestLoss = "test_loss";
inline constexpr const char* kDistance = "distance";  ///< also a /diagnostics field
inline constexpr const char* kPathLength = "path_length";
inline constexpr const char* kParamRms = "param_rms";
inline constexpr const char* kParamMaxAbs = "param_max_abs";

/// /sample_stats/<field> [chain, draw] of every stored draw (NaN step: a row never written), with
/// the scales /sample_stats/{chain,draw}; /sample_stats/diverged_at_step [chain] (integer, -1:
/// never).
inline constexpr const char* kSampleStats = "/sample_stats";
inline std::string sample_stat(std::string_view field) { return join(kSampleStats, field); }
inline constexpr const char* kSampleStep = "/sample_stats/step";
inline constexpr const char* kDivergedAtStep = "/sample_stats/diverged_at_step";

/// /trace/<field> [chain, record]: every Adam epoch and simmering step recorded.
inline constexpr const char* kTrace = "/trace";
inline std::string trace_field(std::string_view field) { return join(kTrace, field); }
inline constexpr const char* kTraceStep = "/trace/step";
/// /trace attributes (text): what phase's values mean, what train_loss is in each phase, and how
/// distance, path_length, param_rms and param_max_abs are measured.
inline constexpr const char* kPhaseMeaning = "phase_meaning";
inline constexpr const char* kTrainLossMeaning = "train_loss_meaning";
inline constexpr const char* kPositionMeaning = "position_meaning";

// ---- /diagnostics ----------------------------------------------------------------------------

/// /diagnostics: the run's trajectories judged (docs/STATIONARITY.md), and the same under each
/// ladder rung (ladder_diagnostics). Members: archive_layout.hpp's diagnostic_fields [chain];
/// kVerdict and kVerdictReason [chain] (text); block_metric(split) [chain, block],
/// pooled_block_metric(split) [block], kBlockFirstStep [block]; the scales chain and block.
/// Attributes: the verdict thresholds, kStage (the stage judged: its candidate name) and, in a
/// merged archive, kPooledBlockMetrics (why the pooled per-block metrics are missing).
inline constexpr const char* kDiagnostics = "/diagnostics";
/// The member name of a rung's diagnostics group (ladder_diagnostics).
inline constexpr const char* kDiagnosticsName = "diagnostics";
inline constexpr const char* kVerdict = "verdict";
inline constexpr const char* kVerdictReason = "verdict_reason";
inline constexpr const char* kBlockFirstStep = "block_first_step";
inline constexpr const char* kStage = "stage";
inline constexpr const char* kPooledBlockMetrics = "pooled_block_metrics";
/// The verdict's rule (text) and thresholds (real: ensemble::VerdictThresholds), the prior's rms
/// (real) and the block metric's name (text: accuracy or r2), as attributes of each /diagnostics.
inline constexpr const char* kVerdictRule = "verdict_rule";
inline constexpr const char* kBallisticThreshold = "ballistic_threshold";
inline constexpr const char* kRmsGrowthThreshold = "rms_growth_threshold";
inline constexpr const char* kPriorBound = "prior_bound";
inline constexpr const char* kRhatThreshold = "rhat_threshold";
inline constexpr const char* kConfigurationalTolerance = "configurational_tolerance";
inline constexpr const char* kConfigurationalMinSamples = "configurational_min_samples";
inline constexpr const char* kPriorRms = "prior_rms";
inline constexpr const char* kBlockMetricName = "metric";
/// "block_<split>_metric" [chain, block]: each trajectory's ensemble metric per block of the window.
inline std::string block_metric(std::string_view split) {
  return std::string("block_").append(split).append("_metric");
}
/// "pooled_block_<split>_metric" [block]: the pooled ensemble's metric per block.
inline std::string pooled_block_metric(std::string_view split) { return "pooled_" + block_metric(split); }
/// The /diagnostics fields [chain] (archive_layout.hpp's diagnostic_fields lists them in order;
/// parallel/report fills each by name; docs/STATIONARITY.md says what they measure): the ballistic
/// ratios of the whole run and of the window, distance and path length over the window, the
/// parameters' rms at the start, the window's start and the end, max |x_i| at the end.
inline constexpr const char* kBallisticRatio = "ballistic_ratio";
inline constexpr const char* kWindowDistance = "window_distance";
inline constexpr const char* kWindowPathLength = "window_path_length";
inline constexpr const char* kWindowBallisticRatio = "window_ballistic_ratio";
inline constexpr const char* kRmsStart = "rms_start";
inline constexpr const char* kRmsWindowStart = "rms_window_start";
inline constexpr const char* kRmsEnd = "rms_end";
inline constexpr const char* kMaxAbsEnd = "max_abs_end";
/// The members' metric: median on the training set, median and quartiles on the test set; the
/// members' mean loss and the loss at the stage's start; the largest split R-hat of the member
/// series (loss, rms, test metric).
inline constexpr const char* kMemberTrainMetricMedian = "member_train_metric_median";
inline constexpr const char* kMemberTestMetricMedian = "member_test_metric_median";
inline constexpr const char* kMemberTestMetricQ25 = "member_test_metric_q25";
inline constexpr const char* kMemberTestMetricQ75 = "member_test_metric_q75";
inline constexpr const char* kMeanMemberLoss = "mean_member_loss";
inline constexpr const char* kStartLoss = "start_loss";
inline constexpr const char* kRhat = "rhat";
/// The first step a health check found the kinetic temperature below T/100 (-1: never).
inline constexpr const char* kSlowToHeatAtStep = "slow_to_heat_at_step";
/// The curvature at the stage's start and end: loss-Hessian eigenvalues above T (stochastic
/// Lanczos: estimate and its stderr) and the largest eigenvalue.
inline constexpr const char* kEigenvaluesAboveTStart = "eigenvalues_above_T_start";
inline constexpr const char* kEigenvaluesAboveTStartStderr = "eigenvalues_above_T_start_stderr";
inline constexpr const char* kLambdaMaxStart = "lambda_max_start";
inline constexpr const char* kEigenvaluesAboveTEnd = "eigenvalues_above_T_end";
inline constexpr const char* kEigenvaluesAboveTEndStderr = "eigenvalues_above_T_end_stderr";
inline constexpr const char* kLambdaMaxEnd = "lambda_max_end";
/// The window's thermometers (train/configurational.hpp, issue 29): the step h it ran with, the
/// target T, the mean kinetic temperature and the configurational temperature at the sampled steps
/// (NaN with simmer.configurational_every = 0; named by kTemperature and kKineticTemperature, as
/// in /sample_stats, and kConfigurationalTemperature).
inline constexpr const char* kTimeStep = "time_step";
inline constexpr const char* kConfigurationalTemperature = "configurational_temperature";
/// Its standard error over the window's samples (ThermometerSums::configurational_stderr).
inline constexpr const char* kConfigurationalTemperatureStderr = "configurational_temperature_stderr";
/// The parameter masses' minimum, median and maximum (NaN: unit masses, or not yet adapted).
inline constexpr const char* kMassMin = "mass_min";
inline constexpr const char* kMassMedian = "mass_median";
inline constexpr const char* kMassMax = "mass_max";
/// Every member's series (issue 21): member_series(name) [chain, member] for name in
/// kMemberSeries, with the scale member (kMemberAxis), and per series the attributes
/// series_rank_rhat(name) and series_bulk_ess(name) (pooled over the chains, Vehtari et al. 2021);
/// point_<j>: at fixed test rows, the log-probability of the true class or the prediction.
inline constexpr const char* kMemberAxis = "member";
inline const std::vector<std::string>& member_series_names() {
  static const std::vector<std::string> names{"train_loss", "test_metric", "point_0", "point_1", "point_2"};
  return names;
}
inline std::string member_series(std::string_view name) { return std::string("series_").append(name); }
inline std::string series_rank_rhat(std::string_view name) { return std::string("rank_rhat_").append(name); }
inline std::string series_bulk_ess(std::string_view name) { return std::string("bulk_ess_").append(name); }
/// The attribute describing the member series (text).
inline constexpr const char* kMemberSeriesMeaning = "member_series";

// ---- Ensembles: /ensemble, /deep_ensemble, /ladder -------------------------------------------

/// /ensemble: the run's ensemble, one group per set; its attribute kCandidate names the candidate
/// it is (as /deep_ensemble's and each /ladder/<rung>'s name theirs).
inline constexpr const char* kEnsemble = "/ensemble";
/// /ensemble/<set>.
inline std::string ensemble_group(std::string_view set) { return join(kEnsemble, set); }
/// /ensemble/test/tracked [chain, member, point] (ensemble.track) and the test rows it tracks
/// (tracked_rows [point], integer).
inline constexpr const char* kTracked = "/ensemble/test/tracked";
inline constexpr const char* kTrackedRows = "/ensemble/test/tracked_rows";

/// /deep_ensemble (retrofit and Adam alone): the same arrays for the trajectories' Adam end points.
inline constexpr const char* kDeepEnsemble = "/deep_ensemble";

/// A candidate ensemble's name (/selection/candidate, /metrics' kEnsembleName, /diagnostics'
/// kStage): the deep ensemble, a ladder's rung_<k>, or "simmering" (the stage without a ladder).
inline constexpr const char* kDeepEnsembleName = "deep_ensemble";
inline constexpr const char* kSimmeringName = "simmering";
/// The candidates stacked (/selection's stacking_weight): the name of their candidate (the last
/// row of /selection, its group kStacked, predict's --candidate).
inline constexpr const char* kStackedName = "stacked";
/// /stacked (a ladder with a validation set): the same arrays for the stacked candidates
/// (ensemble::stacked_candidate: every candidate's members weighted by its stacking weight).
inline constexpr const char* kStacked = "/stacked";
inline constexpr const char* kRungPrefix = "rung_";
inline std::string rung_name(std::int64_t k) { return kRungPrefix + std::to_string(k); }

/// /ladder (with simmer.ladder): attributes kTemperatures [rung] and kStepsPerRung; per rung
/// ladder_group(rung_name(k)) with the rung's ensemble arrays per set, attributes kTemperature,
/// kTemperatureOverBayes, kMembers and its scores, and ladder_diagnostics (as /diagnostics).
inline constexpr const char* kLadder = "/ladder";
inline constexpr const char* kTemperatures = "temperatures";
inline constexpr const char* kStepsPerRung = "steps_per_rung";
/// /ladder's simmer.ladder_mode ("sequential" or "parallel": run::kLadderModeNames).
inline constexpr const char* kLadderMode = "mode";
/// Replica exchange (simmer.exchange_every > 0): /ladder/exchange_{proposed,accepted,acceptance}
/// [rung pair] summed over the sets, /ladder/round_trips [chain] (per configuration, by the
/// trajectory it started at); /ladder attributes kExchangeEvery and kExchangeRounds.
inline constexpr const char* kExchangeProposed = "/ladder/exchange_proposed";
inline constexpr const char* kExchangeAccepted = "/ladder/exchange_accepted";
inline constexpr const char* kExchangeAcceptance = "/ladder/exchange_acceptance";
inline constexpr const char* kRoundTrips = "/ladder/round_trips";
/// /ladder/exchange_loss and exchange_swapped [exchange round, chain]: each trajectory's loss as
/// the round's decisions saw it, and 1 where its configuration was swapped in that round.
inline constexpr const char* kExchangeLoss = "/ladder/exchange_loss";
inline constexpr const char* kExchangeSwapped = "/ladder/exchange_swapped";
/// /ladder/configuration_held [chain]: the configuration (by the trajectory it started at) each
/// trajectory holds at the end, carried with the state through every swap (Chain::configuration),
/// not taken from the exchange's bookkeeping; the run checks the two agree.
inline constexpr const char* kConfigurationHeld = "/ladder/configuration_held";
inline constexpr const char* kExchangeEvery = "exchange_every";
inline constexpr const char* kExchangeRounds = "exchange_rounds";
/// /ladder/<name>: one rung ("rung_0").
inline std::string ladder_group(std::string_view name) { return join(kLadder, name); }
/// The group of candidate `name`'s arrays (and, but for the deep ensemble's, its scores):
/// /deep_ensemble, /stacked, or a rung's /ladder/<name>.
inline std::string candidate_group(std::string_view name) {
  if (name == kDeepEnsembleName) return kDeepEnsemble;
  if (name == kStackedName) return kStacked;
  return ladder_group(name);
}
/// /ladder/<name>/diagnostics.
inline std::string ladder_diagnostics(std::string_view name) { return join(ladder_group(name), kDiagnosticsName); }

// ---- /selection ------------------------------------------------------------------------------

/// /selection (a ladder): one row per candidate (the deep ensemble first, then the rungs). Columns
/// [candidate]: kCandidate (text), kTemperature, kTemperatureOverBayes, kMembers,
/// kTrajectoriesDrifting, each set's scores `<set>_<score>` (metrics.hpp's baseline_column) and,
/// when compared on a validation set, kValidationLoss, kValidationLossStderr and
/// kValidationLossStderrDifference. Attributes: kSelectBy, kSelectRule (text), kSelected (integer
/// row), kSelectedName, and when compared kBest, kOneSe (integer rows), kValidationRows.
inline constexpr const char* kSelection = "/selection";
inline std::string selection_column(std::string_view name) { return join(kSelection, name); }
inline constexpr const char* kCandidate = "candidate";  ///< also the attribute naming an ensemble group's candidate
inline constexpr const char* kTrajectoriesDrifting = "trajectories_drifting";
inline constexpr const char* kValidationLoss = "validation_loss";
inline constexpr const char* kValidationLossStderr = "validation_loss_stderr";
inline constexpr const char* kValidationLossStderrDifference = "validation_loss_stderr_difference";
inline constexpr const char* kSelectBy = "select_by";
inline constexpr const char* kSelectRule = "select_rule";
inline constexpr const char* kSelected = "selected";
inline constexpr const char* kSelectedName = "selected_name";
inline constexpr const char* kBest = "best";
inline constexpr const char* kOneSe = "one_se";
inline constexpr const char* kValidationRows = "validation_rows";
/// A ladder with a validation set: the candidates stacked (ensemble/selection.hpp), the last row
/// (kStackedName) a candidate like the others: the column kStackingWeight [candidate] (NaN in the
/// stacked row), the attributes kStackingSweeps (EM sweeps) and kStackingGap (the Frank–Wolfe gap:
/// the validation mean log-likelihood of the mixture is within it of its maximum), with
/// kStackingMeaning saying what they are.
inline constexpr const char* kStackingWeight = "stacking_weight";
inline constexpr const char* kStackingSweeps = "stacking_sweeps";
inline constexpr const char* kStackingGap = "stacking_gap";
inline constexpr const char* kStackingMeaning = "stacking";
/// /selection's attribute saying what validation_loss and its stderr columns are (text).
inline constexpr const char* kValidationLossMeaning = "validation_loss_meaning";

// ---- Dimensions ------------------------------------------------------------------------------

/// Every axis of every dataset is named by a dimension scale in the dataset's group (archive
/// format 2; io::ParallelFile::name_axes attaches them at the end of a run and of a merge), so
/// netCDF readers see no phony_dim: chain, draw, param (kChainAxis, kDrawAxis, kParamAxis),
/// block, member, and these. A character array's last axis is its own <name>_strlen.
inline constexpr const char* kRowAxis = "row";          ///< a set's rows (/data/<set>, /ensemble/<set>)
inline constexpr const char* kOutputAxis = "output";    ///< network outputs (regression targets, logits)
inline constexpr const char* kClassAxis = "class";      ///< classes that vote
inline constexpr const char* kFeatureAxis = "feature";  ///< input columns
inline constexpr const char* kTargetAxis = "target";    ///< target columns (/data)
inline constexpr const char* kPointAxis = "point";      ///< tracked test rows
inline constexpr const char* kRecordAxis = "record";    ///< /trace records
inline constexpr const char* kPairAxis = "pair";        ///< neighbouring rungs (/ladder/exchange_*)
inline constexpr const char* kExchangeRoundAxis =
    "exchange_round";                                             ///< replica-exchange rounds (/ladder/exchange_loss)
inline constexpr const char* kCandidateAxis = "candidate_index";  ///< /selection rows (names: /selection/candidate)
inline constexpr const char* kTensorAxis = "tensor";              ///< /model's tensors
inline constexpr const char* kTensorAxisAxis = "tensor_axis";
inline constexpr const char* kAttributeAxis = "attribute";  ///< /metrics/attribute_{names,values}
inline constexpr const char* kTextAxis = "text";            ///< /config's one text
/// What axis_name appends for an axis no rule names ("<dataset>_dim<axis>"): never written by a
/// run, which the netCDF test checks.
inline constexpr const char* kUnnamedAxisSuffix = "_dim";

/// The dimension name of axis `axis` of the dataset at `path` with `rank` axes (archive_axes.cpp).
std::string axis_name(const std::string& path, int axis, int rank);

}  // namespace simmer::run::layout
