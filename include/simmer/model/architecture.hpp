#pragma once
/// \file
/// Build a network from an architecture string such as "2-100-50-50-3": dense layers between
/// the given widths, `activation` after every hidden layer and `output` after the last. The
/// string "lenet5" builds LeNet-5 instead (build_lenet5) on images of `input_shape`.

#include <string>
#include <vector>

#include "simmer/model/activation.hpp"
#include "simmer/model/initializer.hpp"
#include "simmer/model/network.hpp"
#include "simmer/model/pool.hpp"

namespace simmer::model {

struct ArchitectureSpec {
  std::string layers = "1-20-20-1";  ///< widths, input first, separated by '-'; or "lenet5"
  Activation activation = Activation::tanh;
  Activation output = Activation::linear;
  // Image architectures ("lenet5") only; the MLP strings ignore these.
  std::vector<Index> input_shape = {};  ///< {height, width, channels}; rows are HWC (conv.hpp)
  Index outputs = 0;                    ///< width of the last dense layer (classes)
  PoolKind pooling = PoolKind::average;
  Init init = Init::glorot_normal;  ///< how a network's weights are drawn (biases 0)
};

/// "2-100-50-50-3" -> {2, 100, 50, 50, 3}; throws simmer::Error naming the text.
std::vector<Index> parse_widths(const std::string& layers);

/// True for the architecture names build_network builds without a width string ("lenet5").
bool is_image_architecture(const std::string& layers);

/// LeNet-5 on height × width × channels images (HWC rows): conv 6 5×5 same → act → pool 2×2 →
/// conv 16 5×5 valid → act → pool 2×2 → flatten → dense 120 → act → dense 84 → act →
/// dense `classes` (logits; no output activation). For 28×28×1 and 10 classes:
/// 28×28×6 → 14×14×6 → 10×10×16 → 5×5×16 = 400 → 120 → 84 → 10, 61 706 parameters.
/// `activation` linear leaves the activation layers out. Throws simmer::Error for images
/// smaller than 12×12 (the second pooling would get nothing).
template <class S = double>
BasicNetwork<S> build_lenet5(Index height, Index width, Index channels, Index classes, Activation activation,
                             PoolKind pooling);

/// MLP from spec.layers, or LeNet-5 (spec.input_shape, spec.outputs, spec.pooling,
/// spec.activation; spec.output after the logits unless linear) when spec.layers is "lenet5".
template <class S = double>
BasicNetwork<S> build_network(const ArchitectureSpec& spec);

/// The layers build_network binds to one parameter vector, unbound: their sizes and scratch
/// without the parameters' memory.
template <class S = double>
std::vector<LayerPtrOf<S>> build_layers(const ArchitectureSpec& spec);

/// build_network(spec).layout() without the network: no parameter is allocated, so a run can
/// learn its size (and refuse one too large for the node) before it needs the memory.
std::vector<TensorLayout> network_layout(const ArchitectureSpec& spec);

}  // namespace simmer::model
