#include "simmer/model/initializer.hpp"

#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::model {

double glorot_stddev(Index fan_in, Index fan_out) { return std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)); }

template <class S>
void fill_weights(S* weights, Index fan_in, Index fan_out, Init scheme, Rng& rng) {
  fill_weights(weights, fan_in * fan_out, fan_in, fan_out, scheme, rng);
}

// Drawn in float64 and rounded once to S, so a float32 network starts from the float64 one.
template <class S>
void fill_weights(S* weights, Index count, Index fan_in, Index fan_out, Init scheme, Rng& rng) {
  const Index n = count;
  const double sigma = glorot_stddev(fan_in, fan_out);
  switch (scheme) {
    case Init::glorot_normal: {
      // TensorFlow: truncated normal at 2 standard deviations of a normal whose scale is
      // stretched by 1/0.87962566 (the std of a unit normal truncated at ±2).
      const double s = sigma / 0.87962566103423978;
      for (Index i = 0; i < n; ++i) {
        double z = 0.0;
        do {
          z = rng.normal();
        } while (std::abs(z) > 2.0);
        weights[i] = static_cast<S>(s * z);
      }
      break;
    }
    case Init::glorot_uniform: {
      const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
      for (Index i = 0; i < n; ++i) weights[i] = static_cast<S>(rng.uniform(-limit, limit));
      break;
    }
    case Init::modified_glorot_normal: {
      const auto segments = static_cast<double>(fan_in);
      const double seg_width = 4.0 * sigma / segments;
      const double width = sigma / segments;
      // Variance of the midpoints, uniform over the segments: Δ² (n² - 1) / 12.
      const double var_mid = seg_width * seg_width * (segments * segments - 1.0) / 12.0;
      const double contraction = var_mid > 0.0 ? std::sqrt((sigma * sigma - width * width) / var_mid) : 0.0;
      for (Index i = 0; i < n; ++i) {
        const auto j = static_cast<double>(i % fan_in);
        const double midpoint = -2.0 * sigma + (j + 0.5) * seg_width;
        const double w = fan_in == 1 ? sigma : width;
        weights[i] = static_cast<S>(contraction * midpoint + w * rng.normal());
      }
      break;
    }
  }
}

template void fill_weights(double*, Index, Index, Init, Rng&);
template void fill_weights(float*, Index, Index, Init, Rng&);
template void fill_weights(double*, Index, Index, Index, Init, Rng&);
template void fill_weights(float*, Index, Index, Index, Init, Rng&);

}  // namespace simmer::model
