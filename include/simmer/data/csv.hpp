#pragma once
/// \file
/// CSV input: a header row, features and target chosen by column name.

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/data/dataset.hpp"

namespace simmer::data {

/// What to read from a CSV file.
struct CsvSpec {
  std::string path;
  std::vector<std::string> features;  ///< column names, in this order
  std::string target;                 ///< one column name
  Task task = Task::regression;
  char delimiter = ',';
};

/// What the reader saw, for the run's report.
struct CsvReport {
  std::int64_t rows_read = 0;     ///< data rows in the file
  std::int64_t rows_dropped = 0;  ///< rows with an empty/missing value ("", "?", "NA") in a used column
};

/// Reads the file. Classification targets are text labels mapped to class indices in sorted
/// order (numeric order when every label is a number); regression targets and all features
/// must be numbers. Errors (simmer::Error) name the file, line and column:
///  - file missing/unreadable, empty, header only (no data rows), unknown column name;
///  - a row with a different number of fields than the header (ragged);
///  - a non-numeric, NaN or infinite value in a used numeric column, or one beyond the range of
///    a double ("1e999"; one too small, "1e-400", reads as its nearest double, 0 or subnormal);
///  - classification with fewer than two classes.
Dataset read_csv(const CsvSpec& spec, CsvReport* report = nullptr);

}  // namespace simmer::data
