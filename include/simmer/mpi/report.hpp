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

#include "simmer/core/bytes.hpp"
#include "simmer/ensemble/partial.hpp"
#include "simmer/ensemble/trajectory_diagnostics.hpp"
#include "simmer/ensemble/uncertainty.hpp"
#include "simmer/io/h5.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/run/problem.hpp"
#include "simmer/train/spectrum.hpp"

namespace simmer::mpi {

using ensemble::kCoverageLevels;

/// The pooled ensemble's numbers (computed on rank 0, then known to every rank).
struct EnsembleReport {
  /// train, test: metric = vote accuracy (classification) or MSE of the mean; NLL, Brier, ECE
  /// from the members' mean probabilities, or the Gaussian NLL of mean ± sd (regression).
  std::array<ensemble::SetScores, 2> scores{};
  std::array<std::array<double, kCoverageLevels.size()>, 2> coverage{};  ///< regression
  std::array<std::vector<double>, 2> block_metric;                       ///< per block of the window
  std::int64_t members = 0;
  void save(ByteWriter& w) const;
  static EnsembleReport load(ByteReader& r);
};

/// Rank 0's pooled scores at the end of a run: the report, and the partials they came from
/// (mean class probabilities or coverage counts of train and test) for the archive.
struct PooledScores {
  EnsembleReport report;
  std::vector<Matrix> probability;
  std::vector<ensemble::CoverageCounter> coverage;
};
/// From rank 0's pooled ensemble and every trajectory's diagnostics partials (slot t =
/// trajectory t, run::Chain::diagnostics_partials), merged in trajectory order. Empty on the
/// other ranks (`rank` != 0).
PooledScores pooled_scores(const run::Problem& p, const ensemble::PooledEnsemble& pooled,
                           const std::vector<std::vector<unsigned char>>& partials, int rank);

/// Collective (every rank passes the same numbers): /baseline/<split>_<score> [chain],
/// /diagnostics (per trajectory, with chain and block scales) and the /metrics attributes.
void write_report(io::ParallelFile& f, const run::Problem& p, const std::vector<run::ChainReport>& t,
                  const EnsembleReport& e);

/// The final table on stdout (rank 0 calls it): baseline vs ensemble metrics, uncertainty
/// scores, the stationarity verdicts in one line, curvature and loss rise, and T's posterior
/// reading.
void print_report(const run::Problem& p, const std::vector<run::ChainReport>& t, const EnsembleReport& e);

/// Where the time went (CPU seconds summed over ranks: gradient steps, evaluations, gathers and
/// I/O, all), the archive and its collective transfers, and the diverged trajectories (rank 0).
void print_footer(const run::Problem& p, const double cpu_parts[4], double wall, int ranks,
                  const std::int64_t io_counts[2], const std::vector<std::int64_t>& diverged);

/// The temperature line printed at the start: T in units of T_Bayes, or the noise sd it
/// stands for when that is unknown.
std::string temperature_reading(const run::Problem& p);

}  // namespace simmer::mpi
