#include "simmer/model/architecture.hpp"

#include <charconv>

#include "simmer/core/error.hpp"
#include "simmer/model/conv.hpp"
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

bool is_image_architecture(const std::string& layers) { return layers == "lenet5"; }

namespace {

std::vector<LayerPtr> lenet5_layers(Index height, Index width, Index channels, Index classes,
                                    Activation activation, PoolKind pooling) {
  if (height < 12 || width < 12 || channels <= 0 || classes <= 0) {
    throw Error("lenet5: needs images of at least 12x12 with positive channels and classes (got " +
                std::to_string(height) + "x" + std::to_string(width) + "x" +
                std::to_string(channels) + ", " + std::to_string(classes) + " classes)");
  }
  std::vector<LayerPtr> layers;
  const auto add_activation = [&](Index size) {
    if (activation != Activation::linear) {
      layers.push_back(std::make_unique<ActivationLayer>(activation, size));
    }
  };
  auto conv1 = std::make_unique<Conv2D>(height, width, channels, 6, 5, Padding::same);
  const Index h1 = conv1->out_height(), w1 = conv1->out_width();
  layers.push_back(std::move(conv1));
  add_activation(h1 * w1 * 6);
  auto pool1 = std::make_unique<Pool2D>(h1, w1, 6, pooling, 2);
  const Index h2 = pool1->out_height(), w2 = pool1->out_width();
  layers.push_back(std::move(pool1));
  auto conv2 = std::make_unique<Conv2D>(h2, w2, 6, 16, 5, Padding::valid);
  const Index h3 = conv2->out_height(), w3 = conv2->out_width();
  layers.push_back(std::move(conv2));
  add_activation(h3 * w3 * 16);
  auto pool2 = std::make_unique<Pool2D>(h3, w3, 16, pooling, 2);
  const Index features = pool2->output_size();
  layers.push_back(std::move(pool2));
  layers.push_back(std::make_unique<Flatten>(features));
  layers.push_back(std::make_unique<Dense>(features, 120));
  add_activation(120);
  layers.push_back(std::make_unique<Dense>(120, 84));
  add_activation(84);
  layers.push_back(std::make_unique<Dense>(84, classes));
  return layers;
}

}  // namespace

Network build_lenet5(Index height, Index width, Index channels, Index classes,
                     Activation activation, PoolKind pooling) {
  return Network(lenet5_layers(height, width, channels, classes, activation, pooling));
}

Network build_network(const ArchitectureSpec& spec) {
  if (is_image_architecture(spec.layers)) {
    if (spec.input_shape.size() != 3) {
      throw Error("architecture 'lenet5': needs the input shape {height, width, channels} (got " +
                  std::to_string(spec.input_shape.size()) + " dimensions)");
    }
    auto layers = lenet5_layers(spec.input_shape[0], spec.input_shape[1], spec.input_shape[2],
                                spec.outputs, spec.activation, spec.pooling);
    if (spec.output != Activation::linear) {
      layers.push_back(std::make_unique<ActivationLayer>(spec.output, spec.outputs));
    }
    return Network(std::move(layers));
  }
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
