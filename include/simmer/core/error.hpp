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

/// An invalid value of a library option, named by its struct and field ("NhcOptions.time_step"),
/// not by an INI key: the library does not know how its options are spelled in a file. The
/// command line (cli::key_of) maps the field back to its key for the user.
class FieldError : public Error {
 public:
  FieldError(std::string field, std::string value, std::string why)
      : Error(field + " = '" + value + "': " + why),
        field_(std::move(field)),
        value_(std::move(value)),
        why_(std::move(why)) {}
  [[nodiscard]] const std::string& field() const { return field_; }
  [[nodiscard]] const std::string& value() const { return value_; }
  [[nodiscard]] const std::string& why() const { return why_; }

 private:
  std::string field_, value_, why_;
};

/// Thrown on the ranks that learn of another rank's failure (a checkpoint rank 0 could not
/// write): that rank reports the cause, these only end the job.
class PeerError : public Error {
 public:
  using Error::Error;
};

/// "key 'simmer.time_step' = '-1': must be > 0"
[[nodiscard]] inline Error option_error(const std::string& key, const std::string& value, const std::string& why) {
  return Error("option '" + key + "' = '" + value + "': " + why);
}

}  // namespace simmer
