#include "simmer/model/architecture.hpp"

#include <charconv>

#include "simmer/core/error.hpp"
#include "simmer/model/dense.hpp"

namespace simmer::model {

std::vector<Index> parse_widths(const std::string& layers) {
  std::vector<Index> widths;
  std::size_t start = 0;
  while (start <= layers.size()) {
    const std::size_t end = std::min(layers.find('-', start), layers.size());
    const std::string part = layers.substr(start, end - start);
    long long value = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || value <= 0) {
      throw Error("architecture '" + layers + "': '" + part +
                  "' is not a positive layer width (expected e.g. 2-100-50-3)");
    }
    widths.push_back(static_cast<Index>(value));
    start = end + 1;
  }
  if (widths.size() < 2) {
    throw Error("architecture '" + layers + "': needs at least an input and an output width");
  }
  return widths;
}

Network build_network(const ArchitectureSpec& spec) {
  const auto widths = parse_widths(spec.layers);
  std::vector<LayerPtr> layers;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    layers.push_back(std::make_unique<Dense>(widths[i], widths[i + 1]));
    const bool last = i + 2 == widths.size();
    const Activation act = last ? spec.output : spec.activation;
    if (act != Activation::linear) {
      layers.push_back(std::make_unique<ActivationLayer>(act, widths[i + 1]));
    }
  }
  return Network(std::move(layers));
}

}  // namespace simmer::model
