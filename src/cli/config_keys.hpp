#pragma once
// Private to src/cli: the key table. Every configuration key is declared once, in keys()
// (config_table.cpp): its section and name, meaning, value syntax (the field's type, or an enum's
// name table), default (the Config field's initialiser: for a key that fills a library member,
// that member's default, unless the key says why not), range, role on resume and merge, the
// library fields whose errors it answers for, and the run::Problem member it fills unchanged
// (`into`). The INI reader, the command line, --help, the effective INI (/config), the single-key
// checks of `validated`, key_role, config_differences, key_of and the plain part of the Config ->
// Problem copy (copy_into) are all generated from it.

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "simmer/cli/config.hpp"
#include "simmer/run/problem.hpp"

namespace simmer::cli::detail {

struct SectionInfo {
  const char* name;
  const char* caption;
};

inline constexpr std::array<SectionInfo, 6> kSections{{
    {"data", "[data] the data set and its train/test split"},
    {"model", "[model] the network"},
    {"adam", "[adam] Adam pre-training (retrofit mode)"},
    {"simmer", "[simmer] Nose-Hoover chain sampling and its temperature schedule"},
    {"ensemble", "[ensemble] which steps join the ensemble"},
    {"run", "[run] trajectories, seeds and output"},
}};

struct Key {
  struct Bound {
    double value = 0.0;
    bool open = false;  ///< excluded: '>' rather than '>='
  };

  std::string section;
  std::string name;
  std::string meaning;
  std::string value_name;            ///< the syntax in --help: "real", "int", "tanh|relu|..."
  std::vector<std::string> choices;  ///< a choice key's names (from its enum's table)
  KeyRole role = KeyRole::science;
  std::vector<std::string> fields;                       ///< library fields ("NhcOptions.time_step") this key fills
  std::function<void(Config&, const std::string&)> set;  ///< throws BadValue
  std::function<std::string(const Config&, bool exact)> get;
  std::function<double(const Config&)> number;  ///< numeric keys: the value the range applies to
  /// Copies the value, unchanged, to the run::Problem member it fills (empty: build_problem
  /// derives what the value means by hand, e.g. a temperature in posterior units).
  std::function<void(const Config&, run::Problem&)> copy;
  /// Keys with `into`: whether a configuration's value equals the Problem member's own default
  /// (a default-constructed run::Problem's): the Config default of such a key is the library's,
  /// declared there, unless the key says why not (`own_default`).
  std::function<bool(const Config&)> library_default;
  /// Keys with `into`: whether a Problem's member holds the configuration's value.
  std::function<bool(const Config&, const run::Problem&)> arrived;
  std::string own_default_reason;  ///< why this key's default is not its library member's
  bool real = false;               ///< floating point: must also be finite
  bool can_be_auto = false;        ///< "auto" is a value too (its number is NaN; no range)
  std::optional<Bound> lo, hi;
  std::optional<double> limit;  ///< a size no run needs, refused with its own "must be <= limit"
  std::string note;             ///< said after a range violation: "must be >= 0 (<note>)"

  [[nodiscard]] std::string full() const { return section + "." + name; }
  /// The key's own rules (finite, range): throws option_error naming the key and its value.
  void check(const Config& c) const;
  /// "must be in [0, 1)", "must be > 0", or "" without a range.
  [[nodiscard]] std::string range_text() const;

  // Declaration helpers, chained after make_key: .min(0).note("0: none").placement()
  Key& min(double v) { return bound(lo, v, false); }
  Key& above(double v) { return bound(lo, v, true); }
  Key& max(double v) { return bound(hi, v, false); }
  Key& below(double v) { return bound(hi, v, true); }
  Key& cap(double v) {
    limit = v;
    return *this;
  }
  Key& explain(const char* text) {
    note = text;
    return *this;
  }
  Key& with_role(KeyRole r) {
    role = r;
    return *this;
  }
  Key& fills(const char* library_field) {
    fields.emplace_back(library_field);
    return *this;
  }
  /// The key's default is its own, not the library member's it fills (`into`), for `why`.
  Key& own_default(const char* why) {
    own_default_reason = why;
    return *this;
  }

 private:
  Key& bound(std::optional<Bound>& b, double v, bool open) {
    b = Bound{v, open};
    return *this;
  }
};

/// What make_key returns: a Key that still knows its Config member, so it can name the
/// run::Problem member its value fills as it is (same type: checked at compile time). `into`
/// comes first in a declaration's chain (the range helpers return the plain Key).
template <class Section, class T>
struct TypedKey : Key {
  Section Config::*sub = nullptr;
  T Section::*field = nullptr;

  /// The value goes to p.*member.
  template <class U>
  Key& into(U run::Problem::*member) {
    static_assert(std::is_same_v<T, U>, "a key fills a Problem member of its own type");
    copy = [s = sub, f = field, member](const Config& c, run::Problem& p) { p.*member = (c.*s).*f; };
    library_default = [s = sub, f = field, member](const Config& c) { return run::Problem{}.*member == (c.*s).*f; };
    arrived = [s = sub, f = field, member](const Config& c, const run::Problem& p) { return p.*member == (c.*s).*f; };
    return *this;
  }
  /// The value goes to (p.*part).*member (an options struct of the Problem).
  template <class Part, class U>
  Key& into(Part run::Problem::*part, U Part::*member) {
    static_assert(std::is_same_v<T, U>, "a key fills a Problem member of its own type");
    copy = [s = sub, f = field, part, member](const Config& c, run::Problem& p) { (p.*part).*member = (c.*s).*f; };
    library_default = [s = sub, f = field, part, member](const Config& c) {
      return (run::Problem{}.*part).*member == (c.*s).*f;
    };
    arrived = [s = sub, f = field, part, member](const Config& c, const run::Problem& p) {
      return (p.*part).*member == (c.*s).*f;
    };
    return *this;
  }
};

/// Every key, in section order and Config's field order within a section.
const std::vector<Key>& keys();
/// The key named "section.key", or nullptr.
const Key* find_key(const std::string& full);
/// Every "section.key" (for suggestions).
std::vector<std::string> all_key_names();
/// Fills every Problem member a key names with `into` from the configuration (build_problem then
/// derives the rest).
void copy_into(const Config& c, run::Problem& p);

}  // namespace simmer::cli::detail
