#include "simmer/model/architecture.hpp"

#include <charconv>

#include "simmer/core/error.hpp"
#include "simmer/model/conv_block.hpp"
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

template <class S>
std::vector<LayerPtrOf<S>> lenet5_layers(Index height, Index width, Index channels, Index classes,
                                         Activation activation, PoolKind pooling) {
  if (height < 12 || width < 12 || channels <= 0 || classes <= 0) {
    throw Error("lenet5: needs images of at least 12x12 with positive channels and classes (got " +
                std::to_string(height) + "x" + std::to_string(width) + "x" + std::to_string(channels) + ", " +
                std::to_string(classes) + " classes)");
  }
  std::vector<LayerPtrOf<S>> layers;
  const auto add_activation = [&](Index size) {
    if (activation != Activation::linear) {
      layers.push_back(std::make_unique<BasicActivationLayer<S>>(activation, size));
    }
  };
  // conv → activation → pool as one layer each time (conv_block.hpp: same parameters, same
  // values, fewer passes over the feature maps).
  auto block1 = std::make_unique<BasicConvBlock<S>>(height, width, channels, 6, 5, Padding::same, activation, pooling);
  const Index h2 = block1->out_height(), w2 = block1->out_width();
  layers.push_back(std::move(block1));
  auto block2 = std::make_unique<BasicConvBlock<S>>(h2, w2, 6, 16, 5, Padding::valid, activation, pooling);
  const Index features = block2->output_size();
  layers.push_back(std::move(block2));
  layers.push_back(std::make_unique<BasicFlatten<S>>(features));
  layers.push_back(std::make_unique<BasicDense<S>>(features, 120));
  add_activation(120);
  layers.push_back(std::make_unique<BasicDense<S>>(120, 84));
  add_activation(84);
  layers.push_back(std::make_unique<BasicDense<S>>(84, classes));
  return layers;
}

}  // namespace

template <class S>
BasicNetwork<S> build_lenet5(Index height, Index width, Index channels, Index classes, Activation activation,
                             PoolKind pooling) {
  return BasicNetwork<S>(lenet5_layers<S>(height, width, channels, classes, activation, pooling));
}

template <class S>
std::vector<LayerPtrOf<S>> build_layers(const ArchitectureSpec& spec) {
  if (is_image_architecture(spec.layers)) {
    if (spec.input_shape.size() != 3) {
      throw Error("architecture 'lenet5': needs the input shape {height, width, channels} (got " +
                  std::to_string(spec.input_shape.size()) + " dimensions)");
    }
    auto layers = lenet5_layers<S>(spec.input_shape[0], spec.input_shape[1], spec.input_shape[2], spec.outputs,
                                   spec.activation, spec.pooling);
    if (spec.output != Activation::linear) {
      layers.push_back(std::make_unique<BasicActivationLayer<S>>(spec.output, spec.outputs));
    }
    return layers;
  }
  const auto widths = parse_widths(spec.layers);
  std::vector<LayerPtrOf<S>> layers;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    layers.push_back(std::make_unique<BasicDense<S>>(widths[i], widths[i + 1]));
    const bool last = i + 2 == widths.size();
    const Activation act = last ? spec.output : spec.activation;
    if (act != Activation::linear) {
      layers.push_back(std::make_unique<BasicActivationLayer<S>>(act, widths[i + 1]));
    }
  }
  return layers;
}

template <class S>
BasicNetwork<S> build_network(const ArchitectureSpec& spec) {
  return BasicNetwork<S>(build_layers<S>(spec));
}

std::vector<TensorLayout> network_layout(const ArchitectureSpec& spec) { return layout_of(build_layers<double>(spec)); }

template Network build_lenet5<double>(Index, Index, Index, Index, Activation, PoolKind);
template BasicNetwork<float> build_lenet5<float>(Index, Index, Index, Index, Activation, PoolKind);
template std::vector<LayerPtrOf<double>> build_layers<double>(const ArchitectureSpec&);
template std::vector<LayerPtrOf<float>> build_layers<float>(const ArchitectureSpec&);
template Network build_network<double>(const ArchitectureSpec&);
template BasicNetwork<float> build_network<float>(const ArchitectureSpec&);

}  // namespace simmer::model
