#include "simmer/core/types.hpp"

#include <limits>

#include "simmer/core/error.hpp"

namespace simmer {

double epsilon(Precision p) {
  return p == Precision::float32 ? double{std::numeric_limits<float>::epsilon()}
                                 : std::numeric_limits<double>::epsilon();
}

}  // namespace simmer
