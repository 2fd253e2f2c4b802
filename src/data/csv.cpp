#include "simmer/data/csv.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include "simmer/core/error.hpp"

namespace simmer::data {
namespace {

/// Whitespace that surrounds a field. The delimiter is never whitespace here, so a
/// tab-separated file keeps its empty fields.
bool is_blank(char c, char delimiter) {
  return c != delimiter && (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v');
}

std::string_view trim(std::string_view s, char delimiter) {
  while (!s.empty() && is_blank(s.front(), delimiter)) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back(), delimiter)) s.remove_suffix(1);
  return s;
}

/// "data/iris.csv:17: " — every message starts here so the user can jump to the line.
std::string at_line(const std::string& path, std::int64_t line) { return path + ":" + std::to_string(line) + ": "; }

/// "column 'sepal_width' (2)": the name for people, the 1-based index for editors and `cut`.
std::string column_label(const std::string& name, std::size_t index) {
  return "column '" + name + "' (" + std::to_string(index + 1) + ")";
}

/// The whole file in memory: our files are small, and one read keeps the line loop simple.
/// fopen/fread rather than iostreams because they report the cause in errno.
std::string read_file(const std::string& path) {
  errno = 0;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw Error(path + ": cannot open file: " + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, got);
    if (got < sizeof buffer) break;
  }
  if (std::ferror(file.get()) != 0) {
    throw Error(path + ": cannot read file: " + std::strerror(errno));
  }
  return text;
}

/// One physical line with its 1-based number, without its line ending.
struct Line {
  std::int64_t number = 0;
  std::string_view text;
};

/// Non-blank lines in order; blank lines carry no data and are skipped. A line ends in LF,
/// CRLF or a CR alone (classic Mac OS, and some spreadsheet exports): each ending is one line.
std::vector<Line> split_lines(std::string_view text, char delimiter) {
  std::vector<Line> lines;
  std::int64_t number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t end = text.find_first_of("\r\n");
    const std::string_view line = text.substr(0, end);
    std::size_t ending = 0;
    if (end != std::string_view::npos) ending = text.compare(end, 2, "\r\n") == 0 ? 2 : 1;
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + ending);
    if (!trim(line, delimiter).empty()) lines.push_back({number, line});
  }
  return lines;
}

/// Splits a line into trimmed fields. Double quotes follow RFC 4180 ("a,b" is one field,
/// "" inside quotes is one quote) so a text column may contain the delimiter; a quote inside
/// an unquoted field is kept as text. Quoted fields cannot span lines.
std::vector<std::string> split_fields(std::string_view line, char delimiter, const std::string& where) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  const std::size_t n = line.size();
  for (;;) {
    while (i < n && is_blank(line[i], delimiter)) ++i;
    std::string field;
    if (i < n && line[i] == '"') {
      const std::size_t opening = i;
      ++i;
      for (;;) {
        if (i >= n) {
          throw Error(where + "unterminated quoted field starting at character " + std::to_string(opening + 1));
        }
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      while (i < n && is_blank(line[i], delimiter)) ++i;
      if (i < n && line[i] != delimiter) {
        throw Error(where + "unexpected text after the closing quote at character " + std::to_string(i + 1));
      }
    } else {
      const std::size_t start = i;
      while (i < n && line[i] != delimiter) ++i;
      field = std::string(trim(line.substr(start, i - start), delimiter));
    }
    fields.push_back(std::move(field));
    if (i >= n) break;
    ++i;  // the delimiter; a trailing one means one more (empty) field
  }
  return fields;
}

/// The index of `field` among the missing-value tokens, or -1.
int missing_token(const std::vector<std::string>& tokens, const std::string& field) {
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] == field) return static_cast<int>(t);
  }
  return -1;
}

/// "data.missing" with the prefix "data.", else `plain` ("the missing-value tokens").
std::string setting(const CsvSpec& spec, const std::string& key, const std::string& plain) {
  return spec.settings_prefix.empty() ? plain : spec.settings_prefix + key;
}

/// "set data.missing_in_target = true", or in plain words without a settings prefix.
std::string apply_to_target(const CsvSpec& spec) {
  return spec.settings_prefix.empty() ? "apply the missing-value tokens to the target"
                                      : "set " + spec.settings_prefix + "missing_in_target = true";
}

/// "'NA'", or "an empty field": a token as a message shows it.
std::string token_text(const std::string& token) { return token.empty() ? "an empty field" : "'" + token + "'"; }

enum class NumberStatus { ok, not_a_number, not_finite, out_of_range };

/// Parses the whole field as a double. A leading '+' is accepted (strtod does, from_chars
/// does not) so hand-written files are not rejected for it.
NumberStatus parse_number(std::string_view text, double& value) {
  if (text.size() > 1 && text.front() == '+' && text[1] != '-' && text[1] != '+') {
    text.remove_prefix(1);
  }
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range && end == last) {
    // from_chars reports underflow ("1e-400") like overflow; a number too small for a double
    // is read as its nearest double (0 or subnormal), as numpy and pandas do. strtod tells the
    // two apart; the text is a valid decimal number here, so both parse the same characters.
    const double nearest = std::strtod(std::string(text).c_str(), nullptr);
    if (std::isinf(nearest)) return NumberStatus::out_of_range;
    value = nearest;
    return NumberStatus::ok;
  }
  if (ec != std::errc{} || end != last) return NumberStatus::not_a_number;
  if (!std::isfinite(value)) return NumberStatus::not_finite;
  return NumberStatus::ok;
}

/// A used column: where it is in the file and what it is called.
struct Column {
  std::string name;
  std::size_t index = 0;
};

/// For an unknown column: when the delimiter is ',' but the header has none and has a ';' or a
/// tab, the file is probably separated by that: say so and how to set it.
std::string delimiter_hint(const CsvSpec& spec, std::string_view header_line) {
  if (spec.delimiter != ',' || header_line.find(',') != std::string_view::npos) return "";
  for (const auto& [c, spelling, name] : {std::tuple{';', ";", "';'"}, std::tuple{'\t', "tab", "tab"}}) {
    if (header_line.find(c) == std::string_view::npos) continue;
    const std::string set = spec.settings_prefix.empty() ? std::string("read it with the delimiter ") + name
                                                         : "set " + spec.settings_prefix + "delimiter = " + spelling;
    return ". The header has no ',' but has a " + std::string(name) + ": if the file is " + name + "-separated, " + set;
  }
  return "";
}

Column find_column(const std::vector<std::string>& header, const std::string& name, const std::string& where,
                   const std::string& hint = "") {
  std::vector<std::size_t> found;
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (header[c] == name) found.push_back(c);
  }
  if (found.empty()) {
    std::string available;
    for (const auto& h : header) available += (available.empty() ? "'" : ", '") + h + "'";
    throw Error(where + "unknown column '" + name + "'; available columns: " + available + hint);
  }
  if (found.size() > 1) {
    throw Error(where + "column name '" + name + "' is ambiguous: it names columns " + std::to_string(found[0] + 1) +
                " and " + std::to_string(found[1] + 1));
  }
  return {name, found.front()};
}

/// `hint` follows the reason for a value that is not a number (e.g. how to leave the column out).
double number_or_throw(const std::string& field, const Column& column, const std::string& where, const CsvSpec& spec,
                       const std::string& hint) {
  double value = 0.0;
  switch (parse_number(field, value)) {
    case NumberStatus::ok:
      return value;
    case NumberStatus::not_a_number:
      throw Error(where + column_label(column.name, column.index) + ": '" + field + "' is not a number" + hint);
    case NumberStatus::not_finite:
      if (std::isnan(value)) {
        throw Error(where + column_label(column.name, column.index) + ": '" + field +
                    "' is not a finite number (to drop rows where it marks a missing value, add it to " +
                    setting(spec, "missing", "the missing-value tokens") + ")");
      }
      throw Error(where + column_label(column.name, column.index) + ": '" + field + "' is not a finite number");
    case NumberStatus::out_of_range:
      throw Error(where + column_label(column.name, column.index) + ": '" + field +
                  "' is out of the range of a double");
  }
  return value;
}

/// Class indices in sorted label order, so the mapping does not depend on row order; labels
/// that are all numbers sort as numbers ("2" before "10"), ties broken by text.
std::vector<std::string> sorted_classes(const std::vector<std::string>& labels) {
  std::vector<std::string> classes = labels;
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  std::vector<std::pair<double, std::string>> numeric;
  for (const auto& c : classes) {
    double value = 0.0;
    if (parse_number(c, value) != NumberStatus::ok) return classes;
    numeric.emplace_back(value, c);
  }
  std::sort(numeric.begin(), numeric.end());
  for (std::size_t k = 0; k < numeric.size(); ++k) classes[k] = numeric[k].second;
  return classes;
}

}  // namespace

const std::vector<std::string>& default_missing_tokens() {
  static const std::vector<std::string> tokens = {"NA", "?", "", "nan", "NaN"};
  return tokens;
}

std::string describe_drops(const CsvReport& report) {
  if (report.rows_dropped == 0) return "";
  std::string text = std::to_string(report.rows_dropped) + " of " + std::to_string(report.rows_read) +
                     " rows dropped (missing values):";
  for (std::size_t r = 0; r < report.dropped_by.size(); ++r) {
    const DropReason& why = report.dropped_by[r];
    text += (r == 0 ? " " : "; ") + std::to_string(why.rows) + " with " + token_text(why.token) + " in column '" +
            why.column + "' (line";
    text += why.first_lines.size() > 1 ? "s " : " ";
    for (std::size_t l = 0; l < why.first_lines.size(); ++l) {
      text += (l == 0 ? "" : ", ") + std::to_string(why.first_lines[l]);
    }
    text += static_cast<std::int64_t>(why.first_lines.size()) < why.rows ? ", ...)" : ")";
  }
  return text;
}

Dataset read_csv(const CsvSpec& spec, CsvReport* report) {
  const std::string& path = spec.path;
  if (spec.delimiter == '"' || spec.delimiter == '\n' || spec.delimiter == '\r') {
    throw Error(path + ": the delimiter cannot be a quote or a line break");
  }
  if (spec.features.empty()) throw Error(path + ": no feature columns requested");
  const bool all_features = spec.features.size() == 1 && spec.features.front() == "*";
  if (!all_features && !spec.exclude.empty()) {
    throw Error(path + ": columns to exclude are given, but the features are named (exclusion applies to '*')");
  }

  const std::string text = read_file(path);
  std::vector<Line> lines = split_lines(text, spec.delimiter);
  if (lines.empty()) throw Error(path + ": the file is empty (no header row)");

  // A UTF-8 byte order mark (spreadsheet exports) would otherwise glue onto the first name.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (lines.front().text.starts_with(kBom)) lines.front().text.remove_prefix(kBom.size());

  const Line& header_line = lines.front();
  const std::string header_where = at_line(path, header_line.number);
  const std::vector<std::string> header = split_fields(header_line.text, spec.delimiter, header_where);
  if (lines.size() == 1) {
    throw Error(header_where + "the file has a header but no data rows");
  }
  const std::string hint = delimiter_hint(spec, header_line.text);

  // Named features are looked up first, so an unknown one is reported before an unknown target;
  // '*' needs the target first.
  Column target_column;
  if (all_features) target_column = find_column(header, spec.target, header_where, hint);
  std::vector<std::string> feature_names = spec.features;
  if (all_features) {
    for (const auto& name : spec.exclude) (void)find_column(header, name, header_where, hint);
    feature_names.clear();
    for (std::size_t c = 0; c < header.size(); ++c) {
      const bool excluded = std::find(spec.exclude.begin(), spec.exclude.end(), header[c]) != spec.exclude.end();
      if (c != target_column.index && !excluded) feature_names.push_back(header[c]);
    }
    if (feature_names.empty()) {
      throw Error(header_where + "'*' leaves no feature column (every column is the target or excluded)");
    }
  }
  if (spec.missing_features && !all_features) {
    std::vector<std::string> missing;
    for (const auto& name : feature_names) {
      if (std::find(header.begin(), header.end(), name) == header.end()) missing.push_back(name);
    }
    if (!missing.empty()) throw Error(header_where + spec.missing_features(missing));
  }
  std::vector<Column> feature_columns;
  feature_columns.reserve(feature_names.size());
  for (const auto& name : feature_names) feature_columns.push_back(find_column(header, name, header_where, hint));
  // (A feature may also be the target: the extra points are read with a feature as target.)
  if (!all_features) target_column = find_column(header, spec.target, header_where, hint);
  // With '*' the usual non-number is a text column (a name, an id): say how to leave it out.
  const std::string not_a_number_hint =
      all_features ? " (the features are every column but the target: leave a text column out with " +
                         setting(spec, "exclude", "the excluded columns") + ")"
                   : "";
  const bool classification = spec.task == Task::classification;
  const bool missing_target = !classification || spec.missing_in_target;
  // A regression target must be a number; a text value there is usually a class label.
  const std::string label_hint =
      spec.settings_prefix.empty()
          ? " (a class label? the task is regression; a missing-value marker? add it to the missing-value tokens)"
          : " (a class label? set " + spec.settings_prefix +
                "task = classification; a missing-value marker? add it "
                "to " +
                spec.settings_prefix + "missing)";

  std::vector<double> x_values;     // kept rows, row-major
  std::vector<double> y_values;     // regression target of kept rows
  std::vector<std::string> labels;  // classification target of kept rows
  std::vector<std::int64_t> kept;   // file line of each kept row
  std::int64_t rows_read = 0;
  std::int64_t rows_dropped = 0;
  std::vector<DropReason> dropped_by;
  // Pass-through columns (predict --keep): named, or every column the run does not read.
  std::vector<Column> keep_columns;
  if (spec.keep == std::vector<std::string>{"*"}) {
    for (std::size_t c = 0; c < header.size(); ++c) {
      const bool used = c == target_column.index || std::any_of(feature_columns.begin(), feature_columns.end(),
                                                                [&](const Column& f) { return f.index == c; });
      if (!used) keep_columns.push_back({header[c], c});
    }
  } else {
    for (const auto& name : spec.keep) keep_columns.push_back(find_column(header, name, header_where));
  }
  std::vector<std::vector<std::string>> kept_text;
  std::map<std::pair<std::size_t, int>, std::size_t> reason_of;  // (file column, token) -> index
  std::vector<double> row(feature_columns.size());
  constexpr std::size_t kLinesShown = 5;

  for (std::size_t l = 1; l < lines.size(); ++l) {
    const std::string where = at_line(path, lines[l].number);
    const std::vector<std::string> fields = split_fields(lines[l].text, spec.delimiter, where);
    ++rows_read;
    if (fields.size() != header.size()) {
      throw Error(where + "expected " + std::to_string(header.size()) + " fields (as in the header), found " +
                  std::to_string(fields.size()));
    }
    // Every used field is checked even in a row that will be dropped, so a bad value is
    // never hidden behind a missing one. The row's first missing field names its reason.
    const Column* missing_column = nullptr;
    int missing_index = -1;
    for (std::size_t f = 0; f < feature_columns.size(); ++f) {
      const std::string& field = fields[feature_columns[f].index];
      const int token = missing_token(spec.missing, field);
      if (token >= 0) {
        if (missing_column == nullptr) {
          missing_column = &feature_columns[f];
          missing_index = token;
        }
      } else {
        row[f] = number_or_throw(field, feature_columns[f], where, spec, not_a_number_hint);
      }
    }
    const std::string& target_field = fields[target_column.index];
    double target_value = 0.0;
    const int target_token = missing_target ? missing_token(spec.missing, target_field) : -1;
    if (target_token >= 0) {
      if (missing_column == nullptr) {
        missing_column = &target_column;
        missing_index = target_token;
      }
    } else if (!classification) {
      target_value = number_or_throw(target_field, target_column, where, spec, target_field.empty() ? "" : label_hint);
    } else if (target_field.empty()) {
      throw Error(where + column_label(target_column.name, target_column.index) +
                  ": empty class label (to drop rows without a label, " +
                  (spec.missing_in_target ? "add empty to " + setting(spec, "missing", "the missing-value tokens")
                                          : apply_to_target(spec)) +
                  ")");
    }
    if (missing_column != nullptr) {
      ++rows_dropped;
      const auto key = std::pair{missing_column->index, missing_index};
      auto it = reason_of.find(key);
      if (it == reason_of.end()) {
        it = reason_of.emplace(key, dropped_by.size()).first;
        dropped_by.push_back({missing_column->name, spec.missing[static_cast<std::size_t>(missing_index)], 0, {}});
      }
      DropReason& why = dropped_by[it->second];
      ++why.rows;
      if (why.first_lines.size() < kLinesShown) why.first_lines.push_back(lines[l].number);
      continue;
    }
    x_values.insert(x_values.end(), row.begin(), row.end());
    kept.push_back(lines[l].number);
    if (!keep_columns.empty()) {
      std::vector<std::string> passed;
      for (const Column& c : keep_columns) passed.push_back(fields[c.index]);
      kept_text.push_back(std::move(passed));
    }
    if (classification) {
      labels.push_back(target_field);
    } else {
      y_values.push_back(target_value);
    }
  }

  if (report != nullptr) {
    report->rows_read = rows_read;
    report->rows_dropped = rows_dropped;
    report->dropped_by = dropped_by;
    report->warnings.clear();
    report->kept_names.clear();
    for (const Column& c : keep_columns) report->kept_names.push_back(c.name);
    report->kept = std::move(kept_text);
  }
  const auto rows = static_cast<Index>(rows_read - rows_dropped);
  if (rows == 0) {
    CsvReport why;
    why.rows_read = rows_read;
    why.rows_dropped = rows_dropped;
    why.dropped_by = dropped_by;
    throw Error(path + ": no rows left: all " + std::to_string(rows_read) +
                " data rows have a missing value in a used column (" + describe_drops(why) + ")");
  }

  Dataset d;
  d.task = spec.task;
  d.feature_names = feature_names;
  d.target_names = {spec.target};
  d.origin.path = path;
  d.origin.lines = std::move(kept);
  for (const Column& c : feature_columns) d.origin.feature_columns.push_back(static_cast<std::int64_t>(c.index));
  d.origin.target_column = static_cast<std::int64_t>(target_column.index);
  const auto cols = static_cast<Index>(feature_columns.size());
  d.x = Eigen::Map<const Matrix>(x_values.data(), rows, cols);

  if (classification) {
    d.class_names = sorted_classes(labels);
    if (d.class_names.size() < 2) {
      throw Error(path + ": " + column_label(target_column.name, target_column.index) + ": only one class ('" +
                  d.class_names.front() + "') in " + std::to_string(rows) + " rows; classification needs at least two");
    }
    std::map<std::string, std::int64_t> class_index;
    for (std::size_t k = 0; k < d.class_names.size(); ++k) {
      class_index[d.class_names[k]] = static_cast<std::int64_t>(k);
    }
    d.labels.reserve(labels.size());
    for (const auto& label : labels) d.labels.push_back(class_index.at(label));
    d.y = one_hot(d.labels, static_cast<Index>(d.class_names.size()));
    // A class spelled like a missing value ("NA" in a file where it is a real class, or a "?"
    // meant as missing): taken as a class, and said so.
    if (report != nullptr && !spec.missing_in_target) {
      for (std::size_t k = 0; k < d.class_names.size(); ++k) {
        const std::string& name = d.class_names[k];
        if (name.empty() || missing_token(spec.missing, name) < 0) continue;
        const auto count = std::count(d.labels.begin(), d.labels.end(), static_cast<std::int64_t>(k));
        report->warnings.push_back(
            path + ": " + column_label(target_column.name, target_column.index) + ": the class '" + name + "' (" +
            std::to_string(count) +
            " rows) is spelled like a missing value; it is taken as a class (to drop those rows instead, " +
            apply_to_target(spec) + ")");
      }
    }
  } else {
    d.y = Eigen::Map<const Matrix>(y_values.data(), rows, 1);
  }
  return d;
}

}  // namespace simmer::data
