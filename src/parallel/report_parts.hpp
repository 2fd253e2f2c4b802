#pragma once
// Private to src/parallel: what report.cpp (the archive's /diagnostics, /metrics, /selection) and
// report_print.cpp (the final table) both compute from the trajectories' reports.

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "simmer/ensemble/candidate.hpp"
#include "simmer/run/chain.hpp"
#include "simmer/run/problem.hpp"

namespace simmer::parallel::detail {

/// Each trajectory's baseline score `field` on split `split`.
std::vector<double> column(const std::vector<run::ChainReport>& t, int split, double ensemble::SetScores::*field);
/// N_f T / 2: equipartition's loss rise in a harmonic minimum at temperature T.
double harmonic_rise(const run::Problem& p, double temperature);
/// Means over trajectories of (observed rise of stage `stage`'s members' mean loss over the
/// stage's start loss, eigenvalues above T at the start).
std::pair<double, double> rise_and_stiff(const run::Problem& p, const std::vector<run::ChainReport>& t,
                                         std::size_t stage);
/// The stiff modes' harmonic rise: only at the temperature the eigenvalues were counted above.
double stiff_rise(const run::Problem& p, double stiff, double temperature);
/// Trajectories per verdict of stage `stage`.
std::array<std::int64_t, ensemble::kVerdictNames.table.size()> verdict_counts(const run::Problem& p,
                                                                              const std::vector<run::ChainReport>& t,
                                                                              std::size_t stage);
/// The reports of the trajectories that run stage `stage` (every one but with parallel rungs).
std::vector<run::ChainReport> stage_reports(const run::Problem& p, const std::vector<run::ChainReport>& t,
                                            std::size_t stage);
/// printf of one number.
std::string format(const char* fmt, double v);

}  // namespace simmer::parallel::detail
