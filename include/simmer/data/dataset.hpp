#pragma once
/// \file
/// A supervised data set in raw units, and the operations every run applies to it: a seeded
/// train/test split and row subsets.

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/core/names.hpp"
#include "simmer/core/rng.hpp"
#include "simmer/core/types.hpp"

namespace simmer::data {

enum class Task { regression, classification };
inline constexpr Names<Task, 2> kTaskNames{
    "data.task", {{{Task::classification, "classification"}, {Task::regression, "regression"}}}};
inline std::string to_string(Task t) { return std::string(kTaskNames.name(t)); }

/// Where a data set's rows and columns came from in a text file, so a check made after the
/// split can name the cell ("data.csv:17: column 'x' (3)"). Empty for generated or image data.
struct Origin {
  std::string path;
  std::vector<std::int64_t> lines;            ///< file line of each row (1-based)
  std::vector<std::int64_t> feature_columns;  ///< file column of each feature (0-based)
  std::int64_t target_column = -1;            ///< file column of the target (0-based)
};

/// Rows are samples. For classification `y` is one-hot [rows][classes] and `labels` holds the
/// class index of each row; for regression `y` is [rows][targets] and `labels` is empty.
struct Dataset {
  Matrix x;
  Matrix y;
  std::vector<std::int64_t> labels;
  std::vector<std::string> feature_names;
  std::vector<std::string> target_names;
  std::vector<std::string> class_names;  ///< classification: class index -> label text
  std::vector<Index> image_shape;        ///< {height, width, channels} for image data, empty otherwise
  Task task = Task::regression;
  Origin origin;  ///< rows' file lines, kept by subset(); empty when not read from a file

  [[nodiscard]] Index rows() const { return x.rows(); }
  [[nodiscard]] Index features() const { return x.cols(); }
  [[nodiscard]] Index outputs() const { return y.cols(); }
};

/// Row indices of a train/test split; disjoint, each in the order drawn.
struct Split {
  std::vector<std::int64_t> train;
  std::vector<std::int64_t> test;
};

/// Random split of `rows` rows into `n_train` and `n_test` rows (n_train + n_test <= rows; the
/// remainder is unused). Throws simmer::Error naming the counts when they do not fit.
Split split_by_count(std::int64_t rows, std::int64_t n_train, std::int64_t n_test, Rng& rng);

/// Like split_by_count, but stratified by class: each class keeps its share of the rows in both
/// parts, as near as whole rows allow (largest remainders), and every class with at least two
/// rows gets a row in each part when the counts allow one per class. Which rows of a class go
/// where follows one seeded permutation of all rows, so the split depends only on the seed,
/// the labels and the counts. Throws simmer::Error like split_by_count.
Split split_stratified(const std::vector<std::int64_t>& labels, std::int64_t n_train, std::int64_t n_test, Rng& rng);

/// Random split with round(train_fraction * rows) training rows and the rest for testing.
Split split_by_fraction(std::int64_t rows, double train_fraction, Rng& rng);

/// The rows `indices` of `d`, in that order (names, task, class names and image shape kept).
Dataset subset(const Dataset& d, const std::vector<std::int64_t>& indices);

/// "data.csv:17: column 'x' (3)" for row `row` and feature `feature` (-1: the target) of a data
/// set read from a file; "row 17 (0-based), column 'x'" when it has no Origin.
std::string cell_name(const Dataset& d, Index row, Index feature);

/// One-hot matrix [labels.size()][classes].
Matrix one_hot(const std::vector<std::int64_t>& labels, Index classes);

}  // namespace simmer::data
