#pragma once
/// \file
/// The end of a run: every trajectory's numbers (baseline scores, drift and stationarity
/// summary, curvature) and the pooled ensemble's scores, written to /baseline, /diagnostics and
/// /metrics, and printed as the final table. The driver gathers the numbers (in trajectory
/// order, identical on every rank); this file only lays them out.

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "simmer/app/problem.hpp"
#include "simmer/core/bytes.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/train/spectrum.hpp"

namespace simmer::mpi {

using ensemble::kCoverageLevels;

/// One trajectory's end-of-run numbers.
struct TrajectoryReport {
  std::int64_t index = 0;
  std::array<ensemble::SetScores, 2> baseline{};  ///< train, test; NaN without a baseline
  ensemble::TrajectorySummary summary;
  std::int64_t diverged_at = -1;
  std::int64_t slow_to_heat_at = -1;
  double start_loss = std::numeric_limits<double>::quiet_NaN();  ///< L at the simmering start
  train::SpectrumEstimate curvature_start, curvature_end;         ///< probes == 0: not estimated
  void save(ByteWriter& w) const;
  static TrajectoryReport load(ByteReader& r);
};

/// The pooled ensemble's numbers (computed on rank 0, then known to every rank).
struct EnsembleReport {
  /// train, test: metric = vote accuracy (classification) or MSE of the mean; NLL, Brier, ECE
  /// from the members' mean probabilities, or the Gaussian NLL of mean ± sd (regression).
  std::array<ensemble::SetScores, 2> scores{};
  std::array<std::array<double, kCoverageLevels.size()>, 2> coverage{};  ///< regression
  std::array<std::vector<double>, 2> block_metric;  ///< per block of the window
  std::int64_t members = 0;
  void save(ByteWriter& w) const;
  static EnsembleReport load(ByteReader& r);
};

/// Collective (every rank passes the same numbers): /baseline/<split>_<score> [chain],
/// /diagnostics (per trajectory, with chain and block scales) and the /metrics attributes.
void write_report(io::ParallelFile& f, const app::Problem& p, const std::vector<TrajectoryReport>& t,
                  const EnsembleReport& e);

/// The final table on stdout (rank 0 calls it): baseline vs ensemble metrics, uncertainty
/// scores, the stationarity verdicts in one line, curvature and loss rise, and T's posterior
/// reading.
void print_report(const app::Problem& p, const std::vector<TrajectoryReport>& t, const EnsembleReport& e);

/// The temperature line printed at the start: T in units of T_Bayes, or the noise sd it
/// stands for when that is unknown.
std::string temperature_reading(const app::Problem& p);

}  // namespace simmer::mpi
