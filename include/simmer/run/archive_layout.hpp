#pragma once
/// \file
/// Names in the archive that several writers and readers share (ARCHITECTURE.md, "Archive
/// layout"): the run (parallel/driver, parallel/report), simmer_analyze merge and export, and the
/// resource estimate. One list each, so a field added here reaches all of them. The groups',
/// datasets' and attributes' names are in archive_paths.hpp, /metrics' in metrics.hpp.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/run/archive_paths.hpp"
#include "simmer/run/metrics.hpp"

namespace simmer::run::layout {

/// The root attribute `status` from the archive's creation (and again at each resume) until the
/// run ends and sets "complete", "complete, with diverged trajectories", "stopped by a signal:
/// ..." or "refused: ...". An archive that still says "running" (or, written before this
/// attribute, has none) is a run that was killed or is still going: simmer_analyze summary
/// calls it incomplete.
inline constexpr const char* kStatusRunning = "running";
inline constexpr const char* kStatusComplete = "complete";
inline constexpr const char* kStatusCompleteDiverged = "complete, with diverged trajectories";
inline constexpr const char* kStatusStopped = "stopped by a signal: resume with --resume";
inline constexpr const char* kStatusRefusedUnstable = "refused: time step above the stability limit";
inline constexpr const char* kStatusRefusedTooHot = "refused: a temperature too hot for the time step";
/// The status of a finished run (or merge): complete, with or without diverged trajectories.
inline std::string final_status(bool any_diverged) { return any_diverged ? kStatusCompleteDiverged : kStatusComplete; }
/// Whether `status` is one of final_status's.
inline bool is_complete(const std::string& status) { return status.rfind(kStatusComplete, 0) == 0; }
/// Whether `status` is kStatusStopped's (or an older wording that begins the same).
inline bool is_stopped(const std::string& status) { return status.rfind("stopped by a signal", 0) == 0; }

// /metrics: kMetrics and its attribute names (metric keys, verdict counts) are in metrics.hpp.

/// The groups whose attributes carry a choice or a score, each given a checksummed copy of its
/// attributes at the end of a run (io::ParallelFile::mirror_attributes) that simmer_analyze
/// verify compares them with: /metrics, the ensembles' groups (their `candidate`), /selection
/// (`selected_name`, ...), /ladder and every rung's (its scores and verdict counts), and the
/// verdicts' /diagnostics and each rung's (archive format 3). Those a run of `rungs` ladder rungs
/// may have (the writers skip a group the run did not write).
inline std::vector<std::string> choice_groups(std::size_t rungs, bool deep_ensemble) {
  std::vector<std::string> out{kMetrics, kEnsemble, kDiagnostics};
  if (deep_ensemble) out.emplace_back(kDeepEnsemble);
  if (rungs > 0) {
    out.emplace_back(kSelection);
    out.emplace_back(kStacked);  // with a validation set
    out.emplace_back(kLadder);
    for (std::size_t k = 0; k < rungs; ++k) {
      out.push_back(ladder_group(rung_name(static_cast<std::int64_t>(k))));
      out.push_back(ladder_diagnostics(rung_name(static_cast<std::int64_t>(k))));
    }
  }
  return out;
}

/// The root attribute binding the archive to its checkpoint (io::RunCheckpoint::generation): the
/// number of the last checkpoint the archive was made durable for; at the run's end one more, so
/// no checkpoint matches a finished archive.
inline constexpr const char* kCheckpointGeneration = "checkpoint_generation";

/// /trace/<field> [chain, record], in the order a record is packed. phase 0 = Adam epoch, 1 =
/// simmering step; distance and path_length are measured from the simmering start point (NaN
/// during Adam); param_rms = |x|/sqrt(N), param_max_abs = max |x_i|.
inline const std::vector<std::string>& trace_fields() {
  static const std::vector<std::string> names{kPhase,    kStep,       kTemperature, kTrainLoss,  kTestLoss,
                                              kDistance, kPathLength, kParamRms,    kParamMaxAbs};
  return names;
}

/// /sample_stats/<field> [chain, draw] of every stored draw.
inline const std::vector<std::string>& sample_stat_fields() {
  static const std::vector<std::string> names{kStep, kTemperature, kLoss, kKineticTemperature, kExtendedEnergy};
  return names;
}

/// /diagnostics/<field> [chain]: each trajectory's drift and stationarity numbers
/// (docs/STATIONARITY.md); /diagnostics/verdict [chain] holds the verdict as text and
/// /diagnostics/block_{train,test}_metric [chain, block] the ensemble metric per block
/// (archive_paths.hpp: kVerdict, block_metric).
inline const std::vector<std::string>& diagnostic_fields() {
  static const std::vector<std::string> names{kMembers,
                                              kDistance,
                                              kPathLength,
                                              kBallisticRatio,
                                              kWindowDistance,
                                              kWindowPathLength,
                                              kWindowBallisticRatio,
                                              kRmsStart,
                                              kRmsWindowStart,
                                              kRmsEnd,
                                              kMaxAbsEnd,
                                              kMemberTrainMetricMedian,
                                              kMemberTestMetricMedian,
                                              kMemberTestMetricQ25,
                                              kMemberTestMetricQ75,
                                              kMeanMemberLoss,
                                              kStartLoss,
                                              kRhat,
                                              kSlowToHeatAtStep,
                                              kEigenvaluesAboveTStart,
                                              kEigenvaluesAboveTStartStderr,
                                              kLambdaMaxStart,
                                              kEigenvaluesAboveTEnd,
                                              kEigenvaluesAboveTEndStderr,
                                              kLambdaMaxEnd,
                                              kMassMin,
                                              kMassMedian,
                                              kMassMax,
                                              kTimeStep,
                                              kTemperature,
                                              kKineticTemperature,
                                              kConfigurationalTemperature,
                                              kConfigurationalTemperatureStderr};
  return names;
}

/// Draws per chunk of /posterior/params [chain, draw, param]: about 1 MB (at least one draw),
/// sized to divide the draws evenly so the last chunk is not mostly empty space; a chunk never
/// spans two chains (so no chunk is shared by two ranks). The run and merge both use it.
inline std::int64_t posterior_draw_chunk(std::int64_t draws, std::int64_t parameters, std::int64_t value_bytes) {
  const std::int64_t d = draws > 1 ? draws : 1;
  const std::int64_t per_draw = value_bytes * (parameters > 1 ? parameters : 1);
  const std::int64_t max_chunk = (1 << 20) / per_draw > 1 ? (1 << 20) / per_draw : 1;
  const std::int64_t chunks = (d + max_chunk - 1) / max_chunk;
  return (d + chunks - 1) / chunks;
}

/// Trace records per chain: every `every`-th Adam epoch and every `every`-th simmering step.
inline std::int64_t trace_records(std::int64_t adam_epochs, std::int64_t steps, std::int64_t every) {
  return adam_epochs / every + steps / every;
}

/// How many rows an archive's per-chain datasets have.
struct ArchiveCounts {
  std::int64_t chains = 0;
  std::int64_t draws = 0;  ///< stored draws per chain
  std::int64_t parameters = 0;
  std::int64_t trace_records = 0;  ///< per chain: Adam epochs and simmering steps recorded
  bool float32 = false;            ///< /posterior/params in float32
};

/// Element type of a dataset (the same enum as io::Type: core's Element).
using Dtype = Element;

/// One dataset whose first axis is the chain: each rank writes its own chains' rows.
struct ChainDataset {
  std::string group;  ///< "/posterior"
  std::string path;   ///< "/posterior/params"
  Dtype dtype = Dtype::f64;
  std::vector<std::int64_t> dims;   ///< [chain, ...]
  std::vector<std::int64_t> chunk;  ///< one chain per chunk, never two
  bool nan_fill = true;             ///< rows never written read NaN (a stopped trajectory)
  /// Readers (simmer_analyze) need it; the others may be missing from an older or merged
  /// archive, but where present they must have these dims and type.
  bool required = false;
  [[nodiscard]] std::int64_t bytes() const {
    std::int64_t n = dtype == Dtype::f32 ? 4 : 8;
    for (const auto d : dims) n *= d;
    return n;
  }
};

/// Every per-chain dataset a run creates before simmering, in creation order (groups first
/// seen in that order): /baseline/params, /initial/{params,velocity}, /posterior/params,
/// /sample_stats/<field>, /trace/<field>. The run (parallel::ArchiveWriter), merge and the resource
/// estimate all take the archive's shape from here.
inline std::vector<ChainDataset> chain_datasets(const ArchiveCounts& a) {
  const std::int64_t C = a.chains, D = a.draws, P = a.parameters, R = a.trace_records;
  const std::int64_t d1 = D > 1 ? D : 1, r1 = R > 1 ? R : 1;
  std::vector<ChainDataset> out{
      {kBaseline, kBaselineParams, Dtype::f64, {C, P}, {1, P}, true},
      {kInitial, kInitialParams, Dtype::f64, {C, P}, {1, P}, false},
      {kInitial, kInitialVelocity, Dtype::f64, {C, P}, {1, P}, false},
      {kPosterior,
       kPosteriorParams,
       a.float32 ? Dtype::f32 : Dtype::f64,
       {C, D, P},
       {1, posterior_draw_chunk(D, P, a.float32 ? 4 : 8), P},
       true,
       true},
  };
  for (const auto& n : sample_stat_fields())
    out.push_back({kSampleStats, sample_stat(n), Dtype::f64, {C, D}, {1, d1}, true, n == kStep});
  for (const auto& n : trace_fields()) out.push_back({kTrace, trace_field(n), Dtype::f64, {C, R}, {1, r1}, true});
  return out;
}

}  // namespace simmer::run::layout
