#pragma once
/// \file
/// Which steps of a trajectory join the ensemble (docs/METHOD.md §5): the last `window` steps,
/// every `stride`-th of them, or a random subset of given count or fraction.

#include <cstdint>
#include <vector>

#include "simmer/core/rng.hpp"

namespace simmer::ensemble {

struct SamplingOptions {
  std::int64_t window = 1000;  ///< the last W steps of the run
  std::int64_t stride = 1;     ///< every s-th step of the window (counted from its end)
  std::int64_t count = 0;      ///< > 0: this many random steps of the window instead
  double fraction = 0.0;       ///< > 0: round(fraction · W) random steps of the window instead
  /// Throws simmer::Error naming "ensemble.<key>" when inconsistent with `steps`.
  void validate(std::int64_t steps) const;
};

/// How many members a trajectory takes: a pure function of the options (no random draw).
std::int64_t member_count(std::int64_t steps, const SamplingOptions& opt);

/// Sorted 0-based step indices (a step's sample is the state after that step). The random
/// variants draw from `rng`; the others leave it untouched.
std::vector<std::int64_t> select_sample_steps(std::int64_t steps, const SamplingOptions& opt, Rng& rng);

}  // namespace simmer::ensemble
