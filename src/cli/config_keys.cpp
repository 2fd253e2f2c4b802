// What every Key does with its declaration (its range check and text), and the lookups over the
// table (config_table.cpp).
#include "config_keys.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "config_text.hpp"
#include "simmer/core/error.hpp"

namespace simmer::cli::detail {
namespace {
/// A bound as the messages write it: 1e8 rather than 100000000.
std::string bound_text(double v) {
  if (v >= 1e6 && v == std::floor(v)) {
    const double exponent = std::round(std::log10(v));
    if (std::pow(10.0, exponent) == v) return "1e" + std::to_string(static_cast<int>(exponent));
  }
  return format_short(v);
}

}  // namespace

std::string Key::range_text() const {
  std::string text;
  if (lo && hi) {
    text = "must be in " + std::string(lo->open ? "(" : "[") + bound_text(lo->value) + ", " + bound_text(hi->value) +
           (hi->open ? ")" : "]");
  } else if (lo) {
    text = std::string("must be ") + (lo->open ? "> " : ">= ") + bound_text(lo->value);
  } else if (hi) {
    text = std::string("must be ") + (hi->open ? "< " : "<= ") + bound_text(hi->value);
  }
  if (!text.empty() && !note.empty()) text += " (" + note + ")";
  return text;
}

void Key::check(const Config& c) const {
  if (!number) return;
  const double v = number(c);
  if (can_be_auto && get(c, false) == kAutoName) return;
  if (real && !std::isfinite(v)) throw option_error(full(), get(c, false), "must be a finite number");
  const bool below_lo = lo && (lo->open ? !(v > lo->value) : !(v >= lo->value));
  const bool above_hi = hi && (hi->open ? !(v < hi->value) : !(v <= hi->value));
  if (below_lo || above_hi) throw option_error(full(), get(c, false), range_text());
  if (limit && v > *limit) throw option_error(full(), get(c, false), "must be <= " + bound_text(*limit));
}

const Key* find_key(const std::string& full) {
  for (const Key& k : keys()) {
    if (k.full() == full) return &k;
  }
  return nullptr;
}

void copy_into(const Config& c, run::Problem& p) {
  for (const Key& k : keys()) {
    if (k.copy) k.copy(c, p);
  }
}

std::vector<std::string> all_key_names() {
  std::vector<std::string> names;
  for (const Key& k : keys()) names.push_back(k.full());
  return names;
}

}  // namespace simmer::cli::detail
