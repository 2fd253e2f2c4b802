#include "simmer/data/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::data {
namespace {

void check_counts(std::int64_t rows, std::int64_t n_train, std::int64_t n_test) {
  if (rows < 0 || n_train < 0 || n_test < 0) {
    throw Error("split: row counts must be >= 0 (" + std::to_string(n_train) + " train, " + std::to_string(n_test) +
                " test, " + std::to_string(rows) + " rows in the data)");
  }
  if (n_train > rows - n_test) {
    throw Error("split: " + std::to_string(n_train) + " train + " + std::to_string(n_test) + " test rows > " +
                std::to_string(rows) + " rows in the data");
  }
}

}  // namespace

Split split_by_count(std::int64_t rows, std::int64_t n_train, std::int64_t n_test, Rng& rng) {
  check_counts(rows, n_train, n_test);
  // One permutation of all rows, cut in two: the split depends only on the seed and the row
  // count, and the two parts cannot overlap.
  const std::vector<std::int64_t> order = permutation(rows, rng);
  const auto train_end = order.begin() + static_cast<std::ptrdiff_t>(n_train);
  const auto test_end = train_end + static_cast<std::ptrdiff_t>(n_test);
  return {{order.begin(), train_end}, {train_end, test_end}};
}

namespace {

/// `total` whole rows shared among classes in proportion to `weight` by largest remainders
/// (Hamilton's method; ties to the lower class), class k getting at most cap[k] and, when
/// `total` allows one per class with cap > 0, at least one. The caller ensures total <= sum(cap).
std::vector<std::int64_t> apportion(std::int64_t total, const std::vector<std::int64_t>& weight,
                                    const std::vector<std::int64_t>& cap) {
  const std::size_t classes = weight.size();
  double weight_sum = 0.0;
  std::int64_t eligible = 0;
  for (std::size_t k = 0; k < classes; ++k) {
    weight_sum += static_cast<double>(weight[k]);
    eligible += cap[k] > 0 ? 1 : 0;
  }
  const bool one_each = total >= eligible;
  std::vector<double> quota(classes, 0.0);
  std::vector<std::int64_t> given(classes, 0);
  std::vector<std::int64_t> floor_of(classes, 0);
  std::int64_t sum = 0;
  for (std::size_t k = 0; k < classes; ++k) {
    quota[k] = weight_sum > 0.0 ? static_cast<double>(total) * static_cast<double>(weight[k]) / weight_sum : 0.0;
    floor_of[k] = one_each && cap[k] > 0 ? 1 : 0;
    given[k] = std::clamp(static_cast<std::int64_t>(std::floor(quota[k])), floor_of[k], cap[k]);
    sum += given[k];
  }
  // One row per pass, to the class furthest below its quota (or from the one furthest above):
  // the floors, the caps and the minimum of one leave the sum a few rows per class off.
  while (sum < total) {
    std::size_t best = classes;
    for (std::size_t k = 0; k < classes; ++k) {
      if (given[k] < cap[k] && (best == classes || quota[k] - static_cast<double>(given[k]) >
                                                       quota[best] - static_cast<double>(given[best]))) {
        best = k;
      }
    }
    if (best == classes) break;
    ++given[best];
    ++sum;
  }
  while (sum > total) {
    std::size_t best = classes;
    for (std::size_t k = 0; k < classes; ++k) {
      if (given[k] > floor_of[k] && (best == classes || quota[k] - static_cast<double>(given[k]) <
                                                            quota[best] - static_cast<double>(given[best]))) {
        best = k;
      }
    }
    if (best == classes) break;
    --given[best];
    --sum;
  }
  return given;
}

}  // namespace

Split split_stratified(const std::vector<std::int64_t>& labels, std::int64_t n_train, std::int64_t n_test, Rng& rng) {
  const auto rows = static_cast<std::int64_t>(labels.size());
  check_counts(rows, n_train, n_test);
  std::int64_t classes = 0;
  for (const std::int64_t label : labels) {
    if (label < 0) throw Error("split: negative class label " + std::to_string(label));
    classes = std::max(classes, label + 1);
  }
  std::vector<std::int64_t> count(static_cast<std::size_t>(classes), 0);
  for (const std::int64_t label : labels) ++count[static_cast<std::size_t>(label)];
  // Training rows first, leaving each class with two or more rows one for the test part (unless
  // the training count needs them all).
  std::vector<std::int64_t> train_cap = count;
  std::int64_t cap_sum = 0;
  for (auto& c : train_cap) {
    if (c >= 2) --c;
    cap_sum += c;
  }
  if (cap_sum < n_train) train_cap = count;
  const std::vector<std::int64_t> train_count = apportion(n_train, count, train_cap);
  std::vector<std::int64_t> test_cap(count.size());
  for (std::size_t k = 0; k < count.size(); ++k) test_cap[k] = count[k] - train_count[k];
  const std::vector<std::int64_t> test_count = apportion(n_test, count, test_cap);

  // One permutation of all rows decides which rows of each class are taken; both parts keep its
  // order, so the classes are mixed as in an unstratified split.
  const std::vector<std::int64_t> order = permutation(rows, rng);
  std::vector<std::int64_t> taken(count.size(), 0);
  std::vector<int> part(static_cast<std::size_t>(rows), 0);  // 0 unused, 1 train, 2 test
  for (const std::int64_t i : order) {
    const auto k = static_cast<std::size_t>(labels[static_cast<std::size_t>(i)]);
    const std::int64_t t = taken[k]++;
    part[static_cast<std::size_t>(i)] = t < train_count[k] ? 1 : t < train_count[k] + test_count[k] ? 2 : 0;
  }
  Split s;
  s.train.reserve(static_cast<std::size_t>(n_train));
  s.test.reserve(static_cast<std::size_t>(n_test));
  for (const std::int64_t i : order) {
    if (part[static_cast<std::size_t>(i)] == 1) s.train.push_back(i);
    if (part[static_cast<std::size_t>(i)] == 2) s.test.push_back(i);
  }
  return s;
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
  out.origin.path = d.origin.path;
  out.origin.feature_columns = d.origin.feature_columns;
  out.origin.target_column = d.origin.target_column;
  const bool has_lines = !d.origin.lines.empty();
  if (has_lines) out.origin.lines.reserve(indices.size());
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
    if (has_lines) out.origin.lines.push_back(d.origin.lines[static_cast<std::size_t>(i)]);
  }
  return out;
}

std::string cell_name(const Dataset& d, Index row, Index feature) {
  const bool target = feature < 0;
  const auto f = static_cast<std::size_t>(feature);
  std::string name;
  if (target) {
    name = d.target_names.empty() ? std::string("target") : d.target_names.front();
  } else {
    name = f < d.feature_names.size() ? d.feature_names[f] : "feature " + std::to_string(feature);
  }
  const Origin& o = d.origin;
  const auto r = static_cast<std::size_t>(row);
  const std::int64_t column = target ? o.target_column : f < o.feature_columns.size() ? o.feature_columns[f] : -1;
  if (o.path.empty() || r >= o.lines.size() || column < 0) {
    return "row " + std::to_string(row) + " (0-based), column '" + name + "'";
  }
  return o.path + ":" + std::to_string(o.lines[r]) + ": column '" + name + "' (" + std::to_string(column + 1) + ")";
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
