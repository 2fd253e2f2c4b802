#pragma once
/// \file
/// The typed boundary: a validated configuration becomes a run::Problem (data loaded and split,
/// every option typed). Errors here are the user's: they name the INI key and value, or the
/// data file, line and column.

#include "simmer/cli/config.hpp"
#include "simmer/run/problem.hpp"

namespace simmer::cli {

/// Whether build_problem fills the Gaussian prior's per-parameter precisions (one vector of the
/// parameter count) or leaves that to run::Problem::fill_prior_precision (simmer_mpi: after the
/// node's memory check).
enum class PriorVector { filled, later };

/// Loads and splits the data and checks it against the model (architecture input/output sizes,
/// tracked indices, extra points' columns). Throws simmer::Error naming the key and value.
run::Problem build_problem(const Config& validated_config, PriorVector prior = PriorVector::filled);

/// "rows: 300 read; train 192, validation 48, test 60": where every row of the data went, with
/// ", N unused" when a fixed data.train + data.test leaves rows out and ", N dropped" for rows
/// with a missing value. Every run prints it before Adam, and --estimate too.
std::string rows_line(const run::Problem& p);

/// The files a run with this configuration reads, as (what names it, path): "data.path" for a
/// CSV or HIGGS file, "data.path/<file>" for each IDX file, "ensemble.points"; none for generated
/// data. What their fingerprints bind (a resume refuses changed data).
std::vector<std::pair<std::string, std::string>> input_files(const Config& validated_config);

}  // namespace simmer::cli
