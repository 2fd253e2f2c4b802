#pragma once
/// \file
/// CSV input: a header row, features and target chosen by column name.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simmer/data/dataset.hpp"

namespace simmer::data {

/// The default spellings of a missing value: R's NA, the UCI files' "?", an empty field and the
/// NaN that numpy and pandas write for one ("" is the empty field).
const std::vector<std::string>& default_missing_tokens();

/// What to read from a CSV file.
struct CsvSpec {
  std::string path;
  /// Column names, in this order; {"*"}: every column but the target and `exclude`, in file order.
  std::vector<std::string> features;
  std::vector<std::string> exclude;  ///< with features = {"*"}: columns left out
  std::string target;                ///< one column name
  Task task = Task::regression;
  char delimiter = ',';
  /// Fields (trimmed, unquoted, compared exactly) that mean "no value": a row with one in a used
  /// column is dropped. Any other field of a numeric column must be a finite number.
  std::vector<std::string> missing = default_missing_tokens();
  /// Classification: `missing` also applies to the target (else every label is a class, "NA"
  /// included). A regression target is a number, so there `missing` always applies.
  bool missing_in_target = false;
  /// How the caller's user spells these options, for hints: "data." makes a hint name
  /// data.delimiter, data.missing, data.exclude or data.missing_in_target; empty: it names none.
  std::string settings_prefix;
  /// Columns passed through as text (any content, never missing), each row's in CsvReport::kept;
  /// {"*"}: every column that is neither a feature nor the target.
  std::vector<std::string> keep;
  /// Named features the header lacks: when set, the error (after "path:1: ") is its text for all
  /// of them, instead of "unknown column" for the first (predict: the archive's features).
  std::function<std::string(const std::vector<std::string>& missing)> missing_features;
};

/// Rows dropped for one reason: a missing-value token in one column.
struct DropReason {
  std::string column;
  std::string token;                      ///< the field as it was ("" for an empty one)
  std::int64_t rows = 0;                  ///< rows dropped for it
  std::vector<std::int64_t> first_lines;  ///< the first few of those rows' line numbers (1-based)
};

/// What the reader saw, for the run's report.
struct CsvReport {
  std::int64_t rows_read = 0;     ///< data rows in the file
  std::int64_t rows_dropped = 0;  ///< rows with a missing-value token in a used column
  /// Why, in order of first appearance. A row is counted once, under the first used column
  /// (features in order, then the target) with a missing value, so the rows add up.
  std::vector<DropReason> dropped_by;
  /// Things a user should know that are not errors (a class label that is also a missing token).
  std::vector<std::string> warnings;
  /// CsvSpec::keep's columns: their names, and per row read (dropped rows aside) their fields.
  std::vector<std::string> kept_names;
  std::vector<std::vector<std::string>> kept;
};

/// "14 of 406 rows dropped (missing values): 8 with an empty field in column 'mpg' (lines 12,
/// 13, 14, 15, 16, ...); 6 with ...": the report's drops in one line ("" when none was).
std::string describe_drops(const CsvReport& report);

/// Reads the file. Classification targets are text labels mapped to class indices in sorted
/// order (numeric order when every label is a number); regression targets and all features
/// must be numbers. Lines end in LF, CRLF or CR alone. The returned Dataset records each row's
/// file line and the file columns used (Dataset::origin), so later checks can name a cell.
/// Errors (simmer::Error) name the file, line and column:
///  - file missing/unreadable, empty, header only (no data rows), unknown column name (with a
///    hint when the header looks separated by ';' or a tab and the delimiter is ',');
///  - a row with a different number of fields than the header (ragged);
///  - a non-numeric, NaN or infinite value in a used numeric column that is not one of the
///    missing tokens, or one beyond the range of a double ("1e999"; one too small, "1e-400",
///    reads as its nearest double, 0 or subnormal);
///  - an empty class label when the missing tokens do not apply to the target;
///  - classification with fewer than two classes.
Dataset read_csv(const CsvSpec& spec, CsvReport* report = nullptr);

}  // namespace simmer::data
