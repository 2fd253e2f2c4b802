#pragma once
/// \file
/// One table of names per enum. Parsing, printing, the choices that --help and the option
/// checks list, and the error for an unknown name all read it, so an enumerator and its name are
/// declared once, side by side:
///
///   inline constexpr Names<Activation, 5> kActivationNames{
///       "activation", {{{Activation::tanh, "tanh"}, {Activation::relu, "relu"}, ...}}};
///   kActivationNames.parse("relu")   -> Activation::relu (an unknown name throws, naming the choices)
///   kActivationNames.name(a)         -> "relu"
///   kActivationNames.list()          -> {"tanh", "relu", ...}, in the table's order

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "simmer/core/error.hpp"

namespace simmer {

template <class E>
struct Named {
  E value;
  std::string_view name;
};

template <class E, std::size_t N>
struct Names {
  std::string_view what;  ///< what a name names, for errors: "unknown <what> 'x' (choices: ...)"
  std::array<Named<E>, N> table;

  /// The value named `text`; an Error naming `what`, the text and every choice otherwise.
  [[nodiscard]] E parse(std::string_view text) const {
    for (const auto& entry : table) {
      if (entry.name == text) return entry.value;
    }
    throw Error("unknown " + std::string(what) + " '" + std::string(text) + "' (choices: " + choices() + ")");
  }

  /// Whether `text` names a value.
  [[nodiscard]] constexpr bool contains(std::string_view text) const {
    for (const auto& entry : table) {
      if (entry.name == text) return true;
    }
    return false;
  }

  /// The name of `value` ("?" for a value outside the enum, which no caller can hold).
  [[nodiscard]] constexpr std::string_view name(E value) const {
    for (const auto& entry : table) {
      if (entry.value == value) return entry.name;
    }
    return "?";
  }

  /// Every name, in the table's order.
  [[nodiscard]] std::vector<std::string> list() const {
    std::vector<std::string> out;
    out.reserve(N);
    for (const auto& entry : table) out.emplace_back(entry.name);
    return out;
  }

  /// Every name joined by `separator`: "tanh, relu, ..." or "tanh | relu | ...".
  [[nodiscard]] std::string choices(std::string_view separator = ", ") const {
    std::string out;
    for (const auto& entry : table) {
      if (!out.empty()) out += separator;
      out += entry.name;
    }
    return out;
  }
};

}  // namespace simmer
