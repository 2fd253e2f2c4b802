#include "simmer/run/problem.hpp"

#include <algorithm>

namespace simmer::run {

train::Schedule Problem::schedule() const {
  if (ladder.empty()) return train::ramp_schedule(ramp);
  const std::vector<double> rungs = ladder;
  const std::int64_t steps = std::max<std::int64_t>(run.steps, 1);
  return [rungs, steps](std::int64_t step) {
    const auto k = static_cast<std::size_t>(std::max<std::int64_t>(step, 0) / steps);
    return rungs[std::min(k, rungs.size() - 1)];
  };
}

}  // namespace simmer::run
