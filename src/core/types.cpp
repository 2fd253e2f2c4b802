#include "simmer/core/types.hpp"

#include <limits>

#include "simmer/core/error.hpp"

namespace simmer {

Precision parse_precision(const std::string& name) {
  if (name == "float64" || name == "double") return Precision::float64;
  if (name == "float32" || name == "float") return Precision::float32;
  throw FieldError("RunOptions.precision", name, "choices: float64, float32");
}

std::string to_string(Precision p) { return p == Precision::float32 ? "float32" : "float64"; }

double epsilon(Precision p) {
  return p == Precision::float32 ? double{std::numeric_limits<float>::epsilon()}
                                 : std::numeric_limits<double>::epsilon();
}

}  // namespace simmer
