#pragma once
/// \file
/// Build a network from an architecture string such as "2-100-50-50-3": dense layers between
/// the given widths, `activation` after every hidden layer and `output` after the last.

#include <string>
#include <vector>

#include "simmer/model/activation.hpp"
#include "simmer/model/network.hpp"

namespace simmer::model {

struct ArchitectureSpec {
  std::string layers = "1-20-20-1";  ///< widths, input first, separated by '-'
  Activation activation = Activation::tanh;
  Activation output = Activation::linear;
};

/// "2-100-50-50-3" -> {2, 100, 50, 50, 3}; throws simmer::Error naming the text.
std::vector<Index> parse_widths(const std::string& layers);

Network build_network(const ArchitectureSpec& spec);

}  // namespace simmer::model
