#pragma once
/// \file
/// The noisy-sine data of docs/METHOD.md §7: y = sin(2πx) + σ·N(0,1) on an even grid of [-1, 1].

#include "simmer/core/rng.hpp"
#include "simmer/data/dataset.hpp"

namespace simmer::data {

struct SineSpec {
  std::int64_t points = 101;  ///< evenly spaced on [x_min, x_max], ends included
  double noise = 0.1;         ///< standard deviation of the additive Gaussian noise
  double x_min = -1.0;
  double x_max = 1.0;
};

/// Regression data set with feature "x" and target "y"; the noise is drawn from `rng`.
Dataset make_noisy_sine(const SineSpec& spec, Rng& rng);

/// The noise-free ground truth sin(2πx).
double sine_truth(double x);

}  // namespace simmer::data
