#pragma once
/// \file
/// Names in the archive that several writers and readers share (ARCHITECTURE.md, "Archive
/// layout"): the run (mpi/driver, mpi/report), simmer_analyze merge and export, and the
/// resource estimate. One list each, so a field added here reaches all of them.

#include <cstdint>
#include <string>
#include <vector>

namespace simmer::run::layout {

/// /trace/<field> [chain, record], in the order a record is packed. phase 0 = Adam epoch, 1 =
/// simmering step; distance and path_length are measured from the simmering start point (NaN
/// during Adam); param_rms = |x|/sqrt(N), param_max_abs = max |x_i|.
inline const std::vector<std::string>& trace_fields() {
  static const std::vector<std::string> names{"phase",    "step",        "temperature", "train_loss",   "test_loss",
                                              "distance", "path_length", "param_rms",   "param_max_abs"};
  return names;
}

/// /sample_stats/<field> [chain, draw] of every stored draw.
inline const std::vector<std::string>& sample_stat_fields() {
  static const std::vector<std::string> names{"step", "temperature", "loss", "kinetic_temperature", "extended_energy"};
  return names;
}

/// /diagnostics/<field> [chain]: each trajectory's drift and stationarity numbers
/// (docs/STATIONARITY.md); /diagnostics/verdict [chain] holds the verdict as text and
/// /diagnostics/block_{train,test}_metric [chain, block] the ensemble metric per block.
inline const std::vector<std::string>& diagnostic_fields() {
  static const std::vector<std::string> names{"members",
                                              "distance",
                                              "path_length",
                                              "ballistic_ratio",
                                              "window_distance",
                                              "window_path_length",
                                              "window_ballistic_ratio",
                                              "rms_start",
                                              "rms_window_start",
                                              "rms_end",
                                              "max_abs_end",
                                              "member_train_metric_median",
                                              "member_test_metric_median",
                                              "member_test_metric_q25",
                                              "member_test_metric_q75",
                                              "mean_member_loss",
                                              "start_loss",
                                              "rhat",
                                              "slow_to_heat_at_step",
                                              "eigenvalues_above_T_start",
                                              "eigenvalues_above_T_start_stderr",
                                              "lambda_max_start",
                                              "eigenvalues_above_T_end",
                                              "eigenvalues_above_T_end_stderr",
                                              "lambda_max_end"};
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

}  // namespace simmer::run::layout
