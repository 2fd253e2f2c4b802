#include "simmer/ensemble/sampling.hpp"

#include <algorithm>
#include <cmath>

#include "simmer/core/error.hpp"

namespace simmer::ensemble {

void SamplingOptions::validate(std::int64_t steps) const {
  if (window <= 0) throw FieldError("SamplingOptions.window", std::to_string(window), "must be > 0");
  if (window > steps) {
    throw FieldError("SamplingOptions.window", std::to_string(window),
                     "is longer than the run (steps = " + std::to_string(steps) + ")");
  }
  if (stride <= 0) throw FieldError("SamplingOptions.stride", std::to_string(stride), "must be > 0");
  if (count < 0 || count > window) {
    throw FieldError("SamplingOptions.count", std::to_string(count),
                     "must be in [0, window = " + std::to_string(window) + "]");
  }
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    throw FieldError("SamplingOptions.fraction", std::to_string(fraction), "must be in [0, 1]");
  }
  if (count > 0 && fraction > 0.0) {
    throw FieldError("SamplingOptions.fraction", std::to_string(fraction), "and the count are both set: give one");
  }
}

namespace {

/// Members drawn at random (count or fraction), 0 when the stride is used.
std::int64_t random_count(const SamplingOptions& opt) {
  if (opt.fraction > 0.0) {
    return std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::llround(opt.fraction * static_cast<double>(opt.window))));
  }
  return opt.count;
}

}  // namespace

std::int64_t member_count(std::int64_t steps, const SamplingOptions& opt) {
  opt.validate(steps);
  const std::int64_t random = random_count(opt);
  if (random > 0) return random;
  return (opt.window - 1) / opt.stride + 1;  // steps-1, steps-1-stride, ... down to the window's first
}

std::vector<std::int64_t> select_sample_steps(std::int64_t steps, const SamplingOptions& opt, Rng& rng) {
  opt.validate(steps);
  const std::int64_t first = steps - opt.window;
  const std::int64_t drawn = random_count(opt);
  std::vector<std::int64_t> out;
  if (drawn > 0) {
    out = sample_without_replacement(opt.window, drawn, rng);
    for (auto& s : out) s += first;
    return out;
  }
  // Stride counted back from the last step, so the final state is always a member.
  for (std::int64_t s = steps - 1; s >= first; s -= opt.stride) out.push_back(s);
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace simmer::ensemble
