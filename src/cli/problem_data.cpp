#include "problem_data.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"
#include "simmer/data/higgs.hpp"
#include "simmer/data/idx.hpp"
#include "simmer/data/sine.hpp"
#include "simmer/model/initializer.hpp"

namespace simmer::cli {
namespace {

using run::Problem;

data::Dataset load_all(const Config& c, Problem& p) {
  if (c.data.source == DataSource::sine) {
    Rng noise_rng = Rng::named(c.data.split_seed, 0, RngPurpose::data_noise);
    data::SineSpec spec;
    spec.points = c.data.sine_points;
    spec.noise = c.data.sine_noise;
    auto d = data::make_noisy_sine(spec, noise_rng);
    p.rows_read = d.rows();
    return d;
  }
  if (c.data.source == DataSource::synthetic_higgs) {
    const std::int64_t rows = c.data.rows > 0 ? c.data.rows : c.data.train + c.data.test;
    if (rows < 2) {
      throw option_error("data.rows", std::to_string(c.data.rows),
                         "gives " + std::to_string(rows) + " synthetic rows; set data.rows or data.train");
    }
    auto d = data::make_synthetic_higgs(rows, c.data.split_seed);
    p.rows_read = d.rows();
    return d;
  }
  if (c.data.source == DataSource::higgs) {
    auto d = data::read_higgs_csv(c.data.path, c.data.rows);
    p.rows_read = d.rows();
    return d;
  }
  data::CsvReport report;
  auto d = data::read_csv(csv_spec(c), &report);
  p.rows_read = report.rows_read;
  p.rows_dropped = report.rows_dropped;
  p.rows_dropped_reasons = data::describe_drops(report);
  p.data_warnings = report.warnings;
  return d;
}

/// `count` images drawn at random (without replacement, in drawn order) from one IDX pair (0:
/// every image), as a classification data set with ten classes and pixel values in [0, 255].
data::Dataset load_idx_part(const std::string& dir, const std::string& part, const std::string& key, std::int64_t count,
                            Rng& rng, Problem& p) {
  const std::string images_path = idx_file(dir, part, "images-idx3");
  const std::string labels_path = idx_file(dir, part, "labels-idx1");
  const data::IdxImages images = data::read_idx_images(images_path);
  const std::vector<std::uint8_t> labels = data::read_idx_labels(labels_path);
  if (static_cast<std::int64_t>(labels.size()) != images.count) {
    throw Error(labels_path + ": " + std::to_string(labels.size()) + " labels for the " + std::to_string(images.count) +
                " images of " + images_path);
  }
  p.rows_read += images.count;
  if (count <= 0) count = images.count;
  if (count > images.count) {
    throw option_error(key, std::to_string(count),
                       "is more than the " + std::to_string(images.count) + " images of " + images_path);
  }
  const data::Split pick = data::split_by_count(images.count, count, 0, rng);
  const Index pixels = images.rows * images.cols;
  data::Dataset d;
  d.task = data::Task::classification;
  d.x.resize(count, pixels);
  d.labels.resize(static_cast<std::size_t>(count));
  for (Index r = 0; r < count; ++r) {
    const auto i = pick.train[static_cast<std::size_t>(r)];
    const std::uint8_t* src = images.pixels.data() + i * pixels;
    for (Index j = 0; j < pixels; ++j) d.x(r, j) = static_cast<double>(src[j]);
    const std::uint8_t label = labels[static_cast<std::size_t>(i)];
    if (label > 9) {
      throw Error(labels_path + ": label " + std::to_string(label) + " of item " + std::to_string(i) +
                  " is not a digit class 0..9");
    }
    d.labels[static_cast<std::size_t>(r)] = label;
  }
  d.y = data::one_hot(d.labels, 10);
  for (int k = 0; k < 10; ++k) d.class_names.push_back(std::to_string(k));
  for (Index j = 0; j < pixels; ++j) {
    std::string name = "p";  // (not "p" + to_string: GCC 12's -Wrestrict false positive)
    name += std::to_string(j);
    d.feature_names.push_back(std::move(name));
  }
  d.target_names = {"label"};
  d.image_shape = {images.rows, images.cols, 1};
  return d;
}

/// "'data/iris.csv'" or "the sine data": where the data came from, for messages.
std::string source_of(const Config& c) {
  return c.data.source == DataSource::sine              ? std::string("the sine data")
         : c.data.source == DataSource::synthetic_higgs ? std::string("the synthetic HIGGS data")
                                                        : "'" + c.data.path + "'";
}

/// "'data/iris.csv' (150 rows)": where the rows came from, for split-size messages.
std::string rows_of(const Config& c, std::int64_t rows, std::int64_t dropped) {
  std::string what = source_of(c);
  what += " (" + std::to_string(rows) + " rows";
  if (dropped > 0) what += " after dropping " + std::to_string(dropped) + " with a missing value";
  return what + ")";
}

/// data.train / data.test against the rows the data has, naming the key, the value and the
/// file, before the split (whose own message knows neither). Written so that no sum of two
/// user values can overflow.
void check_split_sizes(const Config& c, std::int64_t rows, std::int64_t dropped) {
  const std::int64_t train = c.data.train;
  const std::int64_t test = c.data.test;
  if (train <= 0) {  // data.train_fraction decides
    const auto n_train = static_cast<std::int64_t>(std::llround(c.data.train_fraction * static_cast<double>(rows)));
    if (n_train < 1 || n_train >= rows) {
      throw option_error("data.train_fraction", std::to_string(c.data.train_fraction),
                         "gives " + std::to_string(n_train) + " training rows of " + rows_of(c, rows, dropped) +
                             "; both train and test need at least one");
    }
    return;
  }
  if (train >= rows) {
    throw option_error("data.train", std::to_string(train),
                       "leaves no test rows: the data is " + rows_of(c, rows, dropped));
  }
  if (test > rows - train) {
    throw option_error("data.test", std::to_string(test),
                       "data.train = " + std::to_string(train) + " + data.test = " + std::to_string(test) + " rows > " +
                           rows_of(c, rows, dropped));
  }
}

/// Shortest text that reads back to the same double ("1.7e+308").
std::string shortest(double v) {
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return ec == std::errc() ? std::string(buf.data(), end) : std::to_string(v);
}

/// "'a', 'b', 'c' and 4 more": at most `shown` names.
std::string name_list(const std::vector<std::string>& names, std::size_t shown) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i) out += (i == 0 ? "'" : ", '") + names[i] + "'";
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

/// Rows per class (0 .. classes-1) of `labels`.
std::vector<std::int64_t> class_counts(const std::vector<std::int64_t>& labels, std::size_t classes) {
  std::vector<std::int64_t> out(classes, 0);
  for (const auto label : labels) ++out[static_cast<std::size_t>(label)];
  return out;
}

/// A classification whose training split lacks a class cannot learn it (its test rows are
/// always wrong, and a single-class split learns nothing): refused, with the way out.
/// `in_data`: rows per class in all the data (empty for image files, whose classes are fixed).
void check_classes(const Config& c, const Problem& p, const std::vector<std::int64_t>& in_data) {
  const std::size_t classes = p.train.class_names.size();
  const auto train = class_counts(p.train.labels, classes), test = class_counts(p.test.labels, classes);
  for (std::size_t k = 0; k < classes; ++k) {
    const std::int64_t data_rows = in_data.empty() ? test[k] : in_data[k];
    if (train[k] > 0 || data_rows == 0) continue;
    std::string why = source_of(c) + ": class '" + p.train.class_names[k] + "' of '" + p.train.target_names.front() +
                      "' has no row in the training split (" + std::to_string(p.train.rows()) + " rows; " +
                      std::to_string(test[k]) + " in the test split";
    if (!in_data.empty()) why += ", " + std::to_string(in_data[k]) + " in the data";
    why += "): the network cannot learn it; ";
    if (c.data.source == DataSource::idx) {
      why += "draw more training images (data.train)";
    } else if (!c.data.stratify) {
      why += "set data.stratify = true for a split that gives every class its share of both parts";
    } else {
      why += "a class needs at least two rows to appear in both parts; more training rows (data.train) may help";
    }
    throw Error(why);
  }
}

/// A regression target that does not vary in the training rows leaves nothing to learn (and
/// R² undefined): refused.
void check_target(const Config& c, const Problem& p) {
  for (Index j = 0; j < p.train.y.cols(); ++j) {
    const double first = p.train.y(0, j);
    if ((p.train.y.col(j).array() != first).any()) continue;
    const std::string name = static_cast<std::size_t>(j) < p.train.target_names.size()
                                 ? p.train.target_names[static_cast<std::size_t>(j)]
                                 : std::to_string(j);
    throw Error(source_of(c) + ": the target '" + name + "' is " + shortest(first) + " in all " +
                std::to_string(p.train.rows()) +
                " training rows: a constant target leaves nothing to learn (and R² undefined)");
  }
}

/// Features that do not vary in the training rows scale to 0 and inform nothing: a warning
/// (image data are left out: their constant border pixels are normal).
void warn_constant_features(const Config& c, Problem& p) {
  if (!p.train.image_shape.empty()) return;
  std::vector<std::string> constant;
  for (Index j = 0; j < p.train.x.cols(); ++j) {
    if ((p.train.x.col(j).array() == p.train.x(0, j)).all()) {
      constant.push_back(p.train.feature_names[static_cast<std::size_t>(j)]);
    }
  }
  if (constant.empty()) return;
  p.data_warnings.push_back(source_of(c) + ": " + std::to_string(constant.size()) + " of " +
                            std::to_string(p.train.x.cols()) + " feature(s) constant in the " +
                            std::to_string(p.train.rows()) + " training rows: " + name_list(constant, 10) +
                            "; they scale to 0 and cannot inform the network");
}

/// A class the training rows have but the validation or test rows lack (a rare class of a small
/// split): those scores, and what is chosen or weighted on the validation rows, never see it. A
/// warning, not an error: the network can still learn it.
void warn_thin_classes(const Config& c, Problem& p) {
  const std::size_t classes = p.train.class_names.size();
  const auto train = class_counts(p.train.labels, classes), valid = class_counts(p.validation.labels, classes),
             test = class_counts(p.test.labels, classes);
  for (std::size_t k = 0; k < classes; ++k) {
    const bool no_valid = p.has_validation() && valid[k] == 0;
    if (train[k] == 0 || (!no_valid && test[k] > 0)) continue;
    std::string why = source_of(c) + ": class '" + p.train.class_names[k] + "' of '" + p.train.target_names.front() +
                      "' has " + std::to_string(train[k]) + " training row(s), " +
                      (p.has_validation() ? std::to_string(valid[k]) + " validation and " : std::string()) +
                      std::to_string(test[k]) + " test row(s): ";
    why += no_valid && test[k] == 0 ? "the validation and test scores never see it"
           : no_valid               ? "the validation scores (and the choice or stacking made on them) never see it"
                                    : "the test scores never see it";
    if (!c.data.stratify && c.data.source != DataSource::idx) {
      why += "; data.stratify = true gives every class its share of each part";
    }
    p.data_warnings.push_back(why);
  }
}

/// (max - min)² of column `col` of the targets of all `sets` (inf when it overflows).
double squared_range(const std::vector<const data::Dataset*>& sets, Index col) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (const auto* d : sets) {
    if (d->y.rows() == 0) continue;
    lo = std::min(lo, d->y.col(col).minCoeff());
    hi = std::max(hi, d->y.col(col).maxCoeff());
  }
  return hi >= lo ? (hi - lo) * (hi - lo) : 0.0;
}

/// data.validation_fraction: round(fraction x rows) of the training split held out, drawn from
/// a stream of its own (so the train/test split is the same as without it) and stratified by
/// class with data.stratify; both parts keep the training split's row order.
void hold_out_validation(const Config& c, Problem& p) {
  const double fraction = c.data.validation_fraction;
  if (fraction <= 0.0) return;
  const std::int64_t rows = p.train.rows();
  const auto n_valid = static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(rows)));
  if (n_valid < 1 || rows - n_valid < 1) {
    throw option_error("data.validation_fraction", shortest(fraction),
                       "holds out " + std::to_string(n_valid) + " of the " + std::to_string(rows) +
                           " training rows; the validation and the training part each need at least one row");
  }
  Rng rng = Rng::named(c.data.split_seed, 0, RngPurpose::validation_split);
  data::Split split = c.data.stratify ? data::split_stratified(p.train.labels, rows - n_valid, n_valid, rng)
                                      : data::split_by_count(rows, rows - n_valid, n_valid, rng);
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.test.begin(), split.test.end());
  p.validation = data::subset(p.train, split.test);
  p.train = data::subset(p.train, split.train);
}

}  // namespace

/// The data.* keys of a CSV file as the reader's spec (hints name the keys).
data::CsvSpec csv_spec(const Config& c) {
  data::CsvSpec spec;
  spec.path = c.data.path;
  spec.features = c.data.features;
  spec.exclude = c.data.exclude;
  spec.target = c.data.target;
  spec.task = c.data.task;
  spec.delimiter = parse_delimiter(c.data.delimiter);
  spec.missing = csv_missing_tokens(c.data.missing);
  spec.missing_in_target = c.data.missing_in_target;
  spec.settings_prefix = "data.";
  return spec;
}

/// dir/<part>-<kind>-ubyte.gz, else the uncompressed name; data.path is named when neither exists.
std::string idx_file(const std::string& dir, const std::string& part, const std::string& kind) {
  const std::string base = dir + "/" + part + "-" + kind + "-ubyte";
  for (const std::string& path : {base + ".gz", base}) {
    if (std::filesystem::is_regular_file(path)) return path;
  }
  throw option_error("data.path", dir,
                     "has no " + part + "-" + kind +
                         "-ubyte[.gz] (an IDX directory holds "
                         "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                         "t10k-labels-idx1-ubyte, each optionally gzip-compressed)");
}

/// Values whose scaling to [-1, 1] is not finite are refused before the run (which would
/// otherwise compute NaN and report diverged trajectories), naming the culprit's file cell.
/// A column fails when its fitted max - min or max + min overflows a double (values near
/// ±1.8e308), or when some value's 2 (x - min) / (max - min) - 1 is not finite; either way the
/// overflow comes from the column's largest magnitude, so that value is named (the first in
/// file order among equals, and the earliest such cell over all failing columns).
/// `target`: the regression target's scaler, whose scale and offset un-scale the network's
/// output; there the loss's squared errors in target units, up to (max - min)² per row over
/// the training and test targets, must also stay below the largest double (|y| up to ~1e150
/// for small data).
void check_scaling(const data::MinMaxScaler& scaler, const std::vector<const data::Dataset*>& sets, bool target) {
  const auto training_rows = static_cast<double>(sets.front()->rows());
  const auto value_of = [&](const data::Dataset& d, Index r, Index col) { return target ? d.y(r, col) : d.x(r, col); };
  // File order when the rows carry their lines; else the order found.
  const auto order_of = [](const data::Dataset& d, Index r) {
    return d.origin.lines.empty() ? std::numeric_limits<std::int64_t>::max()
                                  : d.origin.lines[static_cast<std::size_t>(r)];
  };
  struct Cell {
    const data::Dataset* d = nullptr;
    Index row = 0, col = 0;
    std::string what, why;
  };
  Cell culprit;
  for (Index col = 0; col < scaler.columns(); ++col) {
    const double lo = scaler.min()[col];
    const double hi = scaler.max()[col];
    // (appended, not "[" + ...: GCC 12 warns falsely about the latter, PR 105651)
    std::string range("[");
    range.append(shortest(lo)).append(", ").append(shortest(hi)).append("]");
    std::string what = "the scaling to [-1, 1]", why;
    if (!scaler.finite_bounds(col)) {
      why = "its training range " + range + " spans more than a double holds";
    } else if (target && !std::isfinite(squared_range(sets, col) * training_rows)) {
      what = "the loss";
      why =
          "its squared errors in target units, up to (max - min)^2 per row over the target's values, exceed the "
          "largest double";
    } else if (!target && hi != lo) {
      // A loop without copies: the data may be large (HIGGS).
      for (const auto* d : sets) {
        for (Index r = 0; r < d->x.rows() && why.empty(); ++r) {
          if (!std::isfinite(2.0 * (d->x(r, col) - lo) / (hi - lo) - 1.0)) {
            why = "2 (x - min) / (max - min) - 1 over the column's training range " + range + " is not finite";
          }
        }
      }
    }
    if (why.empty()) continue;
    Cell largest;
    for (const auto* d : sets) {
      for (Index r = 0; r < (target ? d->y.rows() : d->x.rows()); ++r) {
        const double magnitude = std::abs(value_of(*d, r, col));
        const double best = largest.d == nullptr ? -1.0 : std::abs(value_of(*largest.d, largest.row, col));
        if (magnitude > best || (magnitude == best && order_of(*d, r) < order_of(*largest.d, largest.row))) {
          largest = {d, r, col, what, why};
        }
      }
    }
    if (culprit.d == nullptr || order_of(*largest.d, largest.row) < order_of(*culprit.d, culprit.row)) {
      culprit = largest;
    }
  }
  if (culprit.d == nullptr) return;
  throw Error(data::cell_name(*culprit.d, culprit.row, target ? -1 : culprit.col) + ": '" +
              shortest(value_of(*culprit.d, culprit.row, culprit.col)) + "': values this large overflow " +
              culprit.what + " (" + culprit.why + "); express the column in other units, or drop the row");
}

void load_splits(const Config& c, run::Problem& p) {
  Rng split_rng = Rng::named(c.data.split_seed, 0, RngPurpose::data_split);
  if (c.data.source == DataSource::idx) {
    // Image sets come as a training and a test file: each split draws from its own file (0: all of it).
    p.train = load_idx_part(c.data.path, "train", "data.train", c.data.train, split_rng, p);
    p.test = load_idx_part(c.data.path, "t10k", "data.test", c.data.test, split_rng, p);
    hold_out_validation(c, p);
  } else {
    const data::Dataset all = load_all(c, p);
    check_split_sizes(c, all.rows(), p.rows_dropped);
    data::Split split;
    if (c.data.stratify) {
      const std::int64_t rows = all.rows();
      const std::int64_t n_train =
          c.data.train > 0 ? c.data.train
                           : static_cast<std::int64_t>(std::llround(c.data.train_fraction * static_cast<double>(rows)));
      const std::int64_t n_test = c.data.train > 0 && c.data.test > 0 ? c.data.test : rows - n_train;
      split = data::split_stratified(all.labels, n_train, n_test, split_rng);
    } else {
      split = c.data.train > 0
                  ? data::split_by_count(all.rows(), c.data.train,
                                         c.data.test > 0 ? c.data.test : all.rows() - c.data.train, split_rng)
                  : data::split_by_fraction(all.rows(), c.data.train_fraction, split_rng);
    }
    p.train = data::subset(all, split.train);
    p.test = data::subset(all, split.test);
    hold_out_validation(c, p);
    if (all.task == data::Task::classification) {
      check_classes(c, p, class_counts(all.labels, all.class_names.size()));
    }
  }
  const data::Dataset& all = p.train;  // names, task, sizes and image shape
  p.classification = all.task == data::Task::classification;
  if (c.data.source == DataSource::idx) check_classes(c, p, {});
  if (!p.classification) check_target(c, p);
  if (p.classification) warn_thin_classes(c, p);
  warn_constant_features(c, p);
}

}  // namespace simmer::cli
