#pragma once
/// \file
/// Names in the archive that several writers and readers share (ARCHITECTURE.md, "Archive
/// layout"): the run (mpi/driver, mpi/report), simmer_analyze merge and export, and the
/// resource estimate. One list each, so a field added here reaches all of them.

#include <string>
#include <vector>

namespace simmer::io::layout {

/// /trace/<field> [chain, record], in the order a record is packed. phase 0 = Adam epoch, 1 =
/// simmering step; distance and path_length are measured from the simmering start point (NaN
/// during Adam); param_rms = |x|/sqrt(N), param_max_abs = max |x_i|.
inline const std::vector<std::string>& trace_fields() {
  static const std::vector<std::string> names{"phase",    "step",        "temperature",
                                              "train_loss", "test_loss", "distance",
                                              "path_length", "param_rms", "param_max_abs"};
  return names;
}

/// /sample_stats/<field> [chain, draw] of every stored draw.
inline const std::vector<std::string>& sample_stat_fields() {
  static const std::vector<std::string> names{"step", "temperature", "loss", "kinetic_temperature",
                                              "extended_energy"};
  return names;
}

/// /diagnostics/<field> [chain]: each trajectory's drift and stationarity numbers
/// (docs/STATIONARITY.md); /diagnostics/verdict [chain] holds the verdict as text and
/// /diagnostics/block_{train,test}_metric [chain, block] the ensemble metric per block.
inline const std::vector<std::string>& diagnostic_fields() {
  static const std::vector<std::string> names{
      "members",          "distance",          "path_length",        "ballistic_ratio",
      "window_distance",  "window_path_length", "window_ballistic_ratio", "rms_start",
      "rms_window_start", "rms_end",           "max_abs_end",        "member_train_metric_median",
      "member_test_metric_median", "member_test_metric_q25", "member_test_metric_q75",
      "mean_member_loss", "start_loss",        "rhat",               "slow_to_heat_at_step",
      "eigenvalues_above_T_start", "eigenvalues_above_T_start_stderr", "lambda_max_start",
      "eigenvalues_above_T_end", "eigenvalues_above_T_end_stderr", "lambda_max_end"};
  return names;
}

}  // namespace simmer::io::layout
