#include "simmer/data/dataset.hpp"

#include <cmath>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::data {

Split split_by_count(std::int64_t rows, std::int64_t n_train, std::int64_t n_test, Rng& rng) {
  if (rows < 0 || n_train < 0 || n_test < 0) {
    throw Error("split: row counts must be >= 0 (" + std::to_string(n_train) + " train, " + std::to_string(n_test) +
                " test, " + std::to_string(rows) + " rows in the data)");
  }
  if (n_train > rows - n_test) {
    throw Error("split: " + std::to_string(n_train) + " train + " + std::to_string(n_test) + " test rows > " +
                std::to_string(rows) + " rows in the data");
  }
  // One permutation of all rows, cut in two: the split depends only on the seed and the row
  // count, and the two parts cannot overlap.
  const std::vector<std::int64_t> order = permutation(rows, rng);
  const auto train_end = order.begin() + static_cast<std::ptrdiff_t>(n_train);
  const auto test_end = train_end + static_cast<std::ptrdiff_t>(n_test);
  return {{order.begin(), train_end}, {train_end, test_end}};
}

Split split_by_fraction(std::int64_t rows, double train_fraction, Rng& rng) {
  if (!(train_fraction > 0.0 && train_fraction < 1.0)) {
    throw Error("split: train fraction " + std::to_string(train_fraction) + " must be in (0, 1)");
  }
  const std::int64_t n_train = std::llround(train_fraction * static_cast<double>(rows));
  const std::int64_t n_test = rows - n_train;
  if (n_train < 1 || n_test < 1) {
    throw Error("split: train fraction " + std::to_string(train_fraction) + " of " + std::to_string(rows) +
                " rows gives " + std::to_string(n_train) + " train and " + std::to_string(n_test) +
                " test rows; both must be non-empty");
  }
  return split_by_count(rows, n_train, n_test, rng);
}

Dataset subset(const Dataset& d, const std::vector<std::int64_t>& indices) {
  Dataset out;
  out.feature_names = d.feature_names;
  out.target_names = d.target_names;
  out.class_names = d.class_names;
  out.image_shape = d.image_shape;
  out.task = d.task;
  const auto rows = static_cast<Index>(indices.size());
  out.x.resize(rows, d.x.cols());
  out.y.resize(rows, d.y.cols());
  const bool has_labels = !d.labels.empty();
  if (has_labels) out.labels.reserve(indices.size());
  for (Index r = 0; r < rows; ++r) {
    const std::int64_t i = indices[static_cast<std::size_t>(r)];
    if (i < 0 || i >= d.rows()) {
      throw Error("subset: row index " + std::to_string(i) + " is outside [0, " + std::to_string(d.rows()) + ")");
    }
    out.x.row(r) = d.x.row(i);
    out.y.row(r) = d.y.row(i);
    if (has_labels) out.labels.push_back(d.labels[static_cast<std::size_t>(i)]);
  }
  return out;
}

Matrix one_hot(const std::vector<std::int64_t>& labels, Index classes) {
  if (classes < 1) throw Error("one_hot: need at least one class, got " + std::to_string(classes));
  Matrix m = Matrix::Zero(static_cast<Index>(labels.size()), classes);
  for (std::size_t r = 0; r < labels.size(); ++r) {
    const std::int64_t label = labels[r];
    if (label < 0 || label >= classes) {
      throw Error("one_hot: label " + std::to_string(label) + " of row " + std::to_string(r) + " is outside [0, " +
                  std::to_string(classes) + ")");
    }
    m(static_cast<Index>(r), label) = 1.0;
  }
  return m;
}

}  // namespace simmer::data
