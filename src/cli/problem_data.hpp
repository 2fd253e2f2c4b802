#pragma once
// Private to src/cli: the data half of build_problem (problem_data.cpp) — the data set read,
// split into train / test / validation and checked, each error naming its key and file.

#include <string>
#include <vector>

#include "simmer/cli/config.hpp"
#include "simmer/data/csv.hpp"
#include "simmer/data/scaler.hpp"
#include "simmer/run/problem.hpp"

namespace simmer::cli {

/// The data.* keys of a CSV file as the reader's spec (hints name the keys).
data::CsvSpec csv_spec(const Config& c);
/// "<dir>/<part>-<kind>-ubyte" or its .gz, whichever exists (the plain name when neither).
std::string idx_file(const std::string& dir, const std::string& part, const std::string& kind);
/// Refuses data whose range the scaler cannot map (a column constant in training but not
/// elsewhere, values far outside the training range), naming the column.
void check_scaling(const data::MinMaxScaler& scaler, const std::vector<const data::Dataset*>& sets, bool target);
/// p.train, p.test, p.validation, p.rows_read, p.rows_dropped, p.classification from the data
/// keys, with the split and class checks and the constant-feature warnings.
void load_splits(const Config& c, run::Problem& p);

}  // namespace simmer::cli
