#pragma once
/// \file
/// The one exception type simmer throws for user-facing problems. Messages name the file,
/// line, column or configuration key and the offending value, so the user can fix the input.

#include <stdexcept>
#include <string>

namespace simmer {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "key 'simmer.time_step' = '-1': must be > 0"
[[nodiscard]] inline Error option_error(const std::string& key, const std::string& value,
                                        const std::string& why) {
  return Error("option '" + key + "' = '" + value + "': " + why);
}

}  // namespace simmer
