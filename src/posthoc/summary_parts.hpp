#pragma once
// Private to src/posthoc: what summary.cpp and summary_health.cpp (the trajectory health table and
// the loss's convergence diagnostics) share.

#include <ostream>
#include <string>
#include <vector>

#include "simmer/io/archive_reader.hpp"
#include "simmer/posthoc/run_archive.hpp"

namespace simmer::posthoc::detail {

/// printf of one number.
std::string printf_string(const char* format, double value);
/// A real attribute, NaN when absent.
double real_attr(const io::ArchiveReader& r, const std::string& obj, const std::string& name);
/// The health table (stored draws grouped by temperature stage) and the split-R-hat / ESS and
/// rank-normalised R-hat / bulk ESS (per second) of the loss.
void health(const io::ArchiveReader& r, const RunArchive& run, std::ostream& out);
/// The window's thermometers per trajectory (issue 29): the step, T_kin/T and T_conf/T (with its
/// standard error where the archive has it), and which trajectories' T_conf/T is measurably off
/// (train::configurational_off). Nothing for an archive without them (older, or
/// simmer.configurational_every = 0).
void thermometers(const std::vector<double>& h, const std::vector<double>& temperature,
                  const std::vector<double>& kinetic, const std::vector<double>& configurational,
                  const std::vector<double>& configurational_stderr, const std::vector<double>& chain,
                  std::ostream& out);

}  // namespace simmer::posthoc::detail
