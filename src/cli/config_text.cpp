// Text <-> value conversion for the configuration (config_text.hpp), and the parsers of the
// keys with a syntax of their own (memory_limit, masses, delimiter).
#include "config_text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "simmer/cli/config.hpp"
#include "simmer/core/error.hpp"

namespace simmer::cli {
namespace detail {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string trim(const std::string& s) {
  std::size_t begin = 0;
  std::size_t end = s.size();
  while (begin < end && is_space(s[begin])) ++begin;
  while (end > begin && is_space(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

double parse_real(const std::string& text) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+' || (s.front() == '-' && text.front() == '+')) {
    throw BadValue("not a number");
  }
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) throw BadValue("out of the range of a double");
  if (ec != std::errc() || ptr != s.data() + s.size()) throw BadValue("not a number");
  return value;
}

/// "a, b,c" -> {"a", "b", "c"}; "" (or only blanks) -> {}. Items are trimmed; an empty item
/// ("a,,b", "a,") is an error.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  if (trim(text).empty()) return items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = trim(text.substr(start, comma - start));
    if (item.empty()) throw BadValue("empty item in comma-separated list");
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

/// Exact (%.17g) for to_ini, so a written configuration reads back bit-identically.
std::string format_exact(double v) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.17g", v);
  return buf.data();
}

/// Shortest text that reads back to the same double: for messages and help defaults.
std::string format_short(double v) {
  std::array<char, 32> buf{};
  const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc()) return format_exact(v);
  return std::string(buf.data(), ptr);
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// " (did you mean 'x'?)" for the closest candidate within edit distance 2, else "".
std::string suggestion(const std::string& given, const std::vector<std::string>& candidates,
                       const std::string& prefix) {
  const std::string* best = nullptr;
  std::size_t best_distance = 3;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(given, c);
    if (d < best_distance) {
      best_distance = d;
      best = &c;
    }
  }
  if (best) return " (did you mean '" + prefix + *best + "'?)";
  // A key without its section, or in another one ("steps" for "simmer.steps"), and a key's
  // beginning ("simmer.temperature" for "simmer.temperature_unit"): at most three.
  const auto name_of = [](const std::string& key) {
    const std::size_t dot = key.find('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
  };
  std::vector<std::string> near;
  for (const std::string& c : candidates) {
    const bool same_name = c.find('.') != std::string::npos &&
                           (name_of(c) == name_of(given) || edit_distance(name_of(c), name_of(given)) < 2);
    const bool begins = given.size() >= 4 && c.size() > given.size() && c.compare(0, given.size(), given) == 0;
    if ((same_name || begins) && near.size() < 3) near.push_back("'" + prefix + c + "'");
  }
  if (near.empty()) return "";
  std::string out = near.size() == 1 ? " (did you mean " : " (did you mean one of ";
  for (std::size_t i = 0; i < near.size(); ++i) out += (i > 0 ? ", " : "") + near[i];
  return out + "?)";
}

// INI reader.

[[noreturn]] void ini_error(const std::string& origin, std::size_t line, const std::string& why) {
  throw Error(origin + ":" + std::to_string(line) + ": " + why);
}

/// The value after '=': trimmed, a trailing " # comment" removed, and surrounding double quotes
/// removed (so a value may keep leading blanks or contain " #"). Inside quotes "" stands for
/// one quote (as in CSV), so every string has exactly one quoted spelling and to_ini's output
/// reads back unchanged (a lone inner quote followed by '#' once ended the value early: found
/// by tests/fuzz/fuzz_config). Returns false when the quote is not closed or text other than a
/// comment follows it.
bool ini_value(const std::string& raw, std::string& value) {
  const std::string text = trim(raw);
  if (!text.empty() && text.front() == '"') {
    std::string unquoted;
    for (std::size_t q = 1; q < text.size(); ++q) {
      if (text[q] != '"') {
        unquoted += text[q];
      } else if (q + 1 < text.size() && text[q + 1] == '"') {
        unquoted += '"';
        ++q;
      } else {
        const std::string rest = trim(text.substr(q + 1));
        if (!rest.empty() && rest.front() != '#') return false;
        value = std::move(unquoted);
        return true;
      }
    }
    return false;
  }
  std::size_t comment = std::string::npos;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '#' && (i == 0 || is_space(text[i - 1]))) {
      comment = i;
      break;
    }
  }
  value = trim(text.substr(0, comment));
  return true;
}

/// to_ini's inverse of ini_value: quote a string that would not otherwise survive reading.
std::string ini_quote(const std::string& s) {
  const bool needs =
      !s.empty() && (is_space(s.front()) || is_space(s.back()) || s.front() == '"' || s.find('#') != std::string::npos);
  if (!needs) return s;
  std::string quoted = "\"";
  for (const char c : s) {
    quoted += c;
    if (c == '"') quoted += '"';
  }
  return quoted + '"';
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error("config file '" + path + "' does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw Error("config file '" + path + "' is a directory, not an INI file");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) throw Error("config file '" + path + "' cannot be read");
  return text.str();
}

}  // namespace detail

using detail::BadValue;
using detail::is_space;
using detail::parse_as;
using detail::trim;

std::int64_t parse_memory_limit(const std::string& text) {
  const std::string t = trim(text);
  if (t == "auto") return -1;
  if (t == "off") return 0;
  const auto bad = [&] {
    return option_error("run.memory_limit", text, "must be auto, off or a size like 512M, 16G or 1.5T");
  };
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(t, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  std::string unit = t.substr(used);
  for (const char* tail : {"iB", "B"}) {
    const std::string tl(tail);
    if (unit.size() >= tl.size() && unit.compare(unit.size() - tl.size(), tl.size(), tl) == 0) {
      unit.erase(unit.size() - tl.size());
      break;
    }
  }
  double scale = 1.0;
  if (unit.empty()) {
    scale = 1.0;
  } else if (unit == "K" || unit == "k") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "m") {
    scale = 1024.0 * 1024.0;
  } else if (unit == "G" || unit == "g") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else if (unit == "T" || unit == "t") {
    scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  } else {
    throw bad();
  }
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes < 1.0 || bytes > 9e18) throw bad();
  return static_cast<std::int64_t>(bytes);
}

MassSpec parse_masses(const std::string& text) {
  MassSpec spec;
  const std::string t = trim(text);
  if (t.empty()) return spec;
  if (t == "martyna") {
    spec.martyna = true;
    return spec;
  }
  try {
    spec.values = parse_as<std::vector<double>>(t);
  } catch (const BadValue& e) {
    throw option_error("simmer.masses", text, std::string(e.what()) + " (give Q_1,..,Q_Nc, martyna, or nothing)");
  }
  return spec;
}

char parse_delimiter(const std::string& text) {
  if (text == "tab" || text == "\\t" || text == "\t") return '\t';
  const auto bad = [&](const std::string& why) { return option_error("data.delimiter", text, why); };
  if (text.size() != 1) {
    throw bad("must be one character (e.g. , or ; or |) or tab");
  }
  const char c = text.front();
  if (c == '"' || std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '+' || c == '-' || is_space(c) ||
      std::iscntrl(static_cast<unsigned char>(c)) != 0) {
    throw bad("cannot be a quote, a letter, a digit, '.', '+', '-' or a blank (they occur inside fields)");
  }
  return c;
}

std::vector<std::string> csv_missing_tokens(const std::vector<std::string>& items) {
  std::vector<std::string> tokens;
  tokens.reserve(items.size());
  for (const std::string& item : items) tokens.push_back(item == "empty" ? std::string() : item);
  return tokens;
}

}  // namespace simmer::cli
