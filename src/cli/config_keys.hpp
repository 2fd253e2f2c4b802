#pragma once
// Private to src/cli: the key table. Every configuration key is declared once, in keys()
// (config_table.cpp): its section and name, the field it is (a library option struct's, through a
// Part that also names the run::Problem struct it goes to unchanged; or a Config section's own),
// meaning, value syntax (the field's type, or an enum's name table), default (the field's
// initialiser: the library's, unless the key says why not), range, role on resume and merge, and
// the library fields whose errors it answers for. The INI reader, the command line, --help, the effective INI
// (/config), the single-key checks of `validated`, key_role, config_differences, key_of and the plain part of the
// Config -> Problem copy (copy_into) are all generated from it.

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
  /// Keys of a Part (`in`): copies the value, unchanged, to the run::Problem's struct (empty:
  /// build_problem derives what the value means by hand, e.g. a temperature in posterior units).
  std::function<void(const Config&, run::Problem&)> copy;
  /// Keys of a Part: whether a configuration's value equals the library field's own default (a
  /// default-constructed run::Problem's): a section holds the library's struct, so the default
  /// is the library's unless the key says why not (`own_default`).
  std::function<bool(const Config&)> library_default;
  /// Keys of a Part: whether a Problem's member holds the configuration's value.
  std::function<bool(const Config&, const run::Problem&)> arrived;
  std::string own_default_reason;  ///< why this key's default is not its library member's
  std::string derived_reason;      ///< a Part's key that build_problem derives: why
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
  /// A key of a Part whose value build_problem derives instead of copying (e.g. adam.epochs: 0 in
  /// an ab initio run), for `why`: no copy, and neither test of the copy applies.
  Key& derived(const char* why) {
    derived_reason = why;
    copy = nullptr;
    library_default = nullptr;
    arrived = nullptr;
    return *this;
  }
  /// The key's default is its own, not the library field's it is (`in`), for `why`.
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

/// Where a section's own key lives: a member of the Config section (not of a library struct it holds).
template <class Section, class Owner, class T>
struct Member {
  // A field the section inherits is a library struct's: such a key is bound through its Part (`in`),
  // so that it cannot miss the copy to the Problem.
  static_assert(std::is_same_v<Owner, Section>, "a library struct's field is bound with in(kPart, &Lib::field)");
  using value_type = T;
  Section Config::*section;
  T Owner::*field;
  template <class C>
  auto& operator()(C& c) const {
    return (c.*section).*field;
  }
};

/// A library option struct that a Config section holds (as its base, or as the member `member`)
/// and the run::Problem member holding the same struct. A key bound to one of its fields (`in`)
/// is read into the section's copy and goes unchanged to the Problem's (copy_into): the field is
/// declared once, in the library, with its default.
template <class Section, class Lib>
struct Part {
  Section Config::*section;
  Lib Section::*member;  ///< nullptr: the section derives from Lib
  Lib run::Problem::*target;
  template <class C>
  auto& of(C& c) const {
    auto& s = c.*section;
    if constexpr (std::is_base_of_v<Lib, Section>) {
      return static_cast<std::conditional_t<std::is_const_v<C>, const Lib, Lib>&>(s);
    } else {
      return s.*member;
    }
  }
};
/// The section itself is the library's struct (its base).
template <class Section, class Lib>
constexpr Part<Section, Lib> part(Section Config::*section, Lib run::Problem::*target) {
  static_assert(std::is_base_of_v<Lib, Section>, "the section derives from the library's struct");
  return {section, nullptr, target};
}
/// The section holds the library's struct as `member`.
template <class Section, class Lib>
constexpr Part<Section, Lib> part(Section Config::*section, Lib Section::*member, Lib run::Problem::*target) {
  return {section, member, target};
}

/// A key's value as a field of a Part: in the Config, and in the Problem it goes to.
template <class Section, class Lib, class T>
struct PartField {
  using value_type = T;
  Part<Section, Lib> part;
  T Lib::*field;
  template <class C>
  auto& operator()(C& c) const {
    return part.of(c).*field;
  }
  template <class P>
  auto& in_problem(P& p) const {
    return (p.*(part.target)).*field;
  }
};
template <class Section, class Lib, class T>
PartField<Section, Lib, T> in(const Part<Section, Lib>& part, T Lib::*field) {
  return {part, field};
}

/// Every key, in section order and Config's field order within a section.
const std::vector<Key>& keys();
/// The key named "section.key", or nullptr.
const Key* find_key(const std::string& full);
/// Every "section.key" (for suggestions).
std::vector<std::string> all_key_names();
/// Fills every Problem field a key of a Part is from the configuration (build_problem then derives
/// the rest).
void copy_into(const Config& c, run::Problem& p);

}  // namespace simmer::cli::detail
