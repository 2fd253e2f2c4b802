#pragma once
/// \file
/// What it takes for simmering to sample a proper posterior (docs/METHOD.md §10): the Bayesian
/// temperature of each loss, and the per-parameter precisions of a Gaussian prior.
///
/// exp(−L/T) is the likelihood of the data when T matches the loss's normalisation:
/// - sse = Σ r² with Gaussian noise of sd s:      exp(−Σ r²/(2s²))  ⇒ T_Bayes = 2 s²
/// - mse = Σ r² / (n k) over n rows, k outputs:    ⇒ T_Bayes = 2 s² / (n k)
/// - cce = mean over n rows of −log p_y:          exp(−n·cce) = Π p_y ⇒ T_Bayes = 1 / n
/// - bce = mean over n rows and k outputs:         ⇒ T_Bayes = 1 / (n k)
/// Without a prior the density is not normalisable along flat directions of L (the parameters
/// drift); a Gaussian prior N(0, σ_i²) makes it so, with variance σ_i² along flat directions.

#include <cmath>
#include <vector>

#include "simmer/core/names.hpp"
#include "simmer/core/types.hpp"
#include "simmer/model/loss.hpp"
#include "simmer/model/network.hpp"

namespace simmer::train {

/// T_Bayes for `loss` over `rows` training rows and `outputs` network outputs; `noise_sd` is the
/// targets' noise sd for sse/mse (NaN when it is not > 0: unknown). Classification losses
/// ignore it.
double bayes_temperature(model::LossKind loss, Index rows, Index outputs, double noise_sd);

/// The noise sd s for which T is T_Bayes (sse/mse), or NaN for the classification losses.
double noise_sd_at(model::LossKind loss, Index rows, Index outputs, double temperature);

enum class PriorScaling {
  none,   ///< σ_i = σ for every parameter
  fan_in  ///< kernels σ/√fan_in (fan_in = the product of a kernel's dimensions but the last), biases σ
};
inline constexpr Names<PriorScaling, 2> kPriorScalingNames{
    "prior scaling", {{{PriorScaling::none, "none"}, {PriorScaling::fan_in, "fan_in"}}}};
inline PriorScaling parse_prior_scaling(const std::string& name) { return kPriorScalingNames.parse(name); }

/// Per-parameter precisions 1/σ_i² of the Gaussian prior, in the network's flat layout.
Vector gaussian_prior_precision(const std::vector<model::TensorLayout>& layout, Index parameters, double sigma,
                                PriorScaling scaling);

/// sqrt(mean σ_i²) of that prior (NaN without parameters), from the layout alone (no vector of the
/// parameter count): the rms a parameter vector has when drawn from the prior, the scale the drift
/// verdict compares against.
double gaussian_prior_rms(const std::vector<model::TensorLayout>& layout, Index parameters, double sigma,
                          PriorScaling scaling);

}  // namespace simmer::train
