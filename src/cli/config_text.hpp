#pragma once
// Private to src/cli: text <-> value conversion shared by the INI reader, the command line, the
// key table and the effective INI, so all accept and print exactly the same spellings.

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace simmer::cli::detail {

/// Why a value did not convert ("not an integer"); callers add where it came from.
class BadValue : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bool is_space(char c);
std::string trim(const std::string& s);

/// The whole string as an Int (no trailing characters, no '1.5'); a leading '+' is allowed.
template <class Int>
Int parse_integer(const std::string& text, const char* what) {
  std::string_view s = text;
  if (std::is_unsigned_v<Int> && !s.empty() && s.front() == '-') {
    throw BadValue("not a non-negative integer");
  }
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (!s.empty() && (s.front() == '+' || s.front() == '-')) throw BadValue(what);
  }
  Int value{};
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    throw BadValue("out of range (" + std::to_string(std::numeric_limits<Int>::min()) + " to " +
                   std::to_string(std::numeric_limits<Int>::max()) + ")");
  }
  if (ec != std::errc() || ptr != s.data() + s.size()) throw BadValue(what);
  return value;
}

/// Whole-string floating-point number (decimal or exponent form; also inf/nan, which

/// Whole-string floating-point number (decimal or exponent form; also inf/nan, which the key's
/// range check then rejects with its own message).
double parse_real(const std::string& text);

/// "a, b,c" -> {"a", "b", "c"}; "" (or only blanks) -> {}. Items are trimmed; an empty item
/// ("a,,b", "a,") is an error.
std::vector<std::string> split_list(const std::string& text);

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class T>
T parse_as(const std::string& text) {
  if constexpr (std::is_same_v<T, std::string>) {
    // Only a command-line value can hold one; the effective INI (/config, to_ini) could not.
    if (text.find('\n') != std::string::npos) throw BadValue("contains a line break");
    return text;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true") return true;
    if (text == "false") return false;
    throw BadValue("not true or false");
  } else if constexpr (std::is_same_v<T, double>) {
    return parse_real(text);
  } else if constexpr (std::is_same_v<T, int>) {
    return parse_integer<int>(text, "not an integer");
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return parse_integer<std::int64_t>(text, "not an integer");
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return parse_integer<std::uint64_t>(text, "not a non-negative integer");
  } else {
    static_assert(IsVector<T>::value, "unsupported option type");
    T out;
    for (const std::string& item : split_list(text)) {
      try {
        out.push_back(parse_as<typename T::value_type>(item));
      } catch (const BadValue& e) {
        throw BadValue("item '" + item + "': " + e.what());
      }
    }
    return out;
  }
}

/// Exact (%.17g) for to_ini, so a written configuration reads back bit-identically.
std::string format_exact(double v);
/// Shortest text that reads back to the same double: for messages and help defaults.
std::string format_short(double v);

template <class T>
std::string format_as(const T& value, bool exact) {
  if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, double>) {
    return exact ? format_exact(value) : format_short(value);
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(value);
  } else {
    static_assert(IsVector<T>::value, "unsupported option type");
    std::string out;
    for (const auto& item : value) {
      if (!out.empty()) out += ',';
      out += format_as(item, exact);
    }
    return out;
  }
}

template <class T>
const char* value_name_of() {
  if constexpr (std::is_same_v<T, std::string>) return "text";
  if constexpr (std::is_same_v<T, bool>) return "bool";
  if constexpr (std::is_same_v<T, double>) return "real";
  if constexpr (std::is_same_v<T, std::uint64_t>) return "uint";
  if constexpr (std::is_integral_v<T>) return "int";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a,b,...";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "x,y,...";
  if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) return "i,j,...";
  return "arg";
}

/// The value after '=' of an INI line (ini_value's rules are in config_text.cpp); false when a
/// quote is not closed or text other than a comment follows it.
bool ini_value(const std::string& raw, std::string& value);
/// ini_value's inverse: quote a string that would not otherwise survive reading.
std::string ini_quote(const std::string& s);
/// The whole file; an Error naming it when it is missing, a directory or unreadable.
std::string read_file(const std::string& path);
/// " (did you mean 'x'?)" for the closest candidate within edit distance 2, else "".
std::string suggestion(const std::string& given, const std::vector<std::string>& candidates,
                       const std::string& prefix = "");

}  // namespace simmer::cli::detail
