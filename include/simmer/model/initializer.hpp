#pragma once
/// \file
/// Weight initialisers of docs/METHOD.md §6. Each fills a fan_in × fan_out kernel (row-major), or
/// `count` weights with given fans.

#include <string>

#include "simmer/core/names.hpp"
#include "simmer/model/layer.hpp"

namespace simmer::model {

inline constexpr Names<Init, 3> kInitNames{"initializer",
                                           {{{Init::glorot_normal, "glorot_normal"},
                                             {Init::glorot_uniform, "glorot_uniform"},
                                             {Init::modified_glorot_normal, "modified_glorot_normal"}}}};
inline Init parse_init(const std::string& name) { return kInitNames.parse(name); }
inline std::string to_string(Init init) { return std::string(kInitNames.name(init)); }

/// Glorot standard deviation sqrt(2 / (fan_in + fan_out)).
double glorot_stddev(Index fan_in, Index fan_out);

/// Fill `n` weights of a layer with the given fans.
///  - glorot_normal: TensorFlow's truncated normal: N(0, s²) with s = glorot_stddev / 0.87962566,
///    redrawn outside ±2s, so the drawn values have standard deviation glorot_stddev.
///  - glorot_uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out)).
///  - modified_glorot_normal: split [-2σ, 2σ] (σ = glorot_stddev) into fan_in equal segments and
///    draw weight j from N(c·m_{j mod fan_in}, w²) around the midpoints m, segments in turn.
///    Choice (docs/METHOD.md §6 leaves it open): w = σ / fan_in (a narrow normal inside its
///    segment) and the midpoints are scaled by c so that the layer's variance c²·Var(m) + w²
///    equals σ²; with fan_in = 1 this is N(0, σ²).
template <class S>
void fill_weights(S* weights, Index fan_in, Index fan_out, Init scheme, Rng& rng);

/// Fill `count` weights with the given fans, for kernels whose size is not fan_in · fan_out (a
/// convolution's kh·kw·in·filters weights with Keras's fans kh·kw·in and kh·kw·filters). The
/// schemes are as above; modified_glorot_normal still cycles its fan_in segments by index. The
/// overload above is this with count = fan_in · fan_out (same draws, same order).
template <class S>
void fill_weights(S* weights, Index count, Index fan_in, Index fan_out, Init scheme, Rng& rng);

}  // namespace simmer::model
