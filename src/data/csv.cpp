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

/// One physical line with its 1-based number, CR of a CRLF ending removed.
struct Line {
  std::int64_t number = 0;
  std::string_view text;
};

/// Non-blank lines in order; blank lines (also "\r" alone) carry no data and are skipped.
std::vector<Line> split_lines(std::string_view text, char delimiter) {
  std::vector<Line> lines;
  std::int64_t number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
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

/// The spellings of "no value" in the UCI files we read.
bool is_missing(std::string_view field) { return field.empty() || field == "?" || field == "NA"; }

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

Column find_column(const std::vector<std::string>& header, const std::string& name, const std::string& where) {
  std::vector<std::size_t> found;
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (header[c] == name) found.push_back(c);
  }
  if (found.empty()) {
    std::string available;
    for (const auto& h : header) available += (available.empty() ? "'" : ", '") + h + "'";
    throw Error(where + "unknown column '" + name + "'; available columns: " + available);
  }
  if (found.size() > 1) {
    throw Error(where + "column name '" + name + "' is ambiguous: it names columns " + std::to_string(found[0] + 1) +
                " and " + std::to_string(found[1] + 1));
  }
  return {name, found.front()};
}

double number_or_throw(const std::string& field, const Column& column, const std::string& where) {
  double value = 0.0;
  switch (parse_number(field, value)) {
    case NumberStatus::ok:
      return value;
    case NumberStatus::not_a_number:
      throw Error(where + column_label(column.name, column.index) + ": '" + field + "' is not a number");
    case NumberStatus::not_finite:
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

Dataset read_csv(const CsvSpec& spec, CsvReport* report) {
  const std::string& path = spec.path;
  if (spec.delimiter == '"' || spec.delimiter == '\n' || spec.delimiter == '\r') {
    throw Error(path + ": the delimiter cannot be a quote or a line break");
  }
  if (spec.features.empty()) throw Error(path + ": no feature columns requested");

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

  std::vector<Column> feature_columns;
  feature_columns.reserve(spec.features.size());
  for (const auto& name : spec.features) {
    feature_columns.push_back(find_column(header, name, header_where));
  }
  const Column target_column = find_column(header, spec.target, header_where);
  const bool classification = spec.task == Task::classification;

  std::vector<double> x_values;     // kept rows, row-major
  std::vector<double> y_values;     // regression target of kept rows
  std::vector<std::string> labels;  // classification target of kept rows
  std::int64_t rows_read = 0;
  std::int64_t rows_dropped = 0;
  std::vector<double> row(feature_columns.size());

  for (std::size_t l = 1; l < lines.size(); ++l) {
    const std::string where = at_line(path, lines[l].number);
    const std::vector<std::string> fields = split_fields(lines[l].text, spec.delimiter, where);
    ++rows_read;
    if (fields.size() != header.size()) {
      throw Error(where + "expected " + std::to_string(header.size()) + " fields (as in the header), found " +
                  std::to_string(fields.size()));
    }
    // Every used field is checked even in a row that will be dropped, so a bad value is
    // never hidden behind a missing one.
    bool missing = false;
    for (std::size_t f = 0; f < feature_columns.size(); ++f) {
      const std::string& field = fields[feature_columns[f].index];
      if (is_missing(field)) {
        missing = true;
      } else {
        row[f] = number_or_throw(field, feature_columns[f], where);
      }
    }
    const std::string& target_field = fields[target_column.index];
    double target_value = 0.0;
    if (is_missing(target_field)) {
      missing = true;
    } else if (!classification) {
      target_value = number_or_throw(target_field, target_column, where);
    }
    if (missing) {
      ++rows_dropped;
      continue;
    }
    x_values.insert(x_values.end(), row.begin(), row.end());
    if (classification) {
      labels.push_back(target_field);
    } else {
      y_values.push_back(target_value);
    }
  }

  if (report != nullptr) {
    report->rows_read = rows_read;
    report->rows_dropped = rows_dropped;
  }
  const auto rows = static_cast<Index>(rows_read - rows_dropped);
  if (rows == 0) {
    throw Error(path + ": no rows left: all " + std::to_string(rows_read) +
                " data rows have a missing value in a used column");
  }

  Dataset d;
  d.task = spec.task;
  d.feature_names = spec.features;
  d.target_names = {spec.target};
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
  } else {
    d.y = Eigen::Map<const Matrix>(y_values.data(), rows, 1);
  }
  return d;
}

}  // namespace simmer::data
