#pragma once
// Reading a configuration the way simmer_mpi does, for the configuration tests (test_config.cpp,
// test_config_rules.cpp).
#include <initializer_list>
#include <string>
#include <vector>

#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"

namespace simmer::test {

/// simmer_mpi's command line with `args` after the program name.
inline cli::Invocation parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"simmer_mpi"};
  argv.insert(argv.end(), args.begin(), args.end());
  return cli::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

/// The struct's defaults (the recommended recipe) with `text` applied as if read from jobs/iris.ini.
inline cli::Config from_defaults_ini(const std::string& text) {
  cli::Config c;
  cli::apply_ini(text, "jobs/iris.ini", c);
  return c;
}

/// The paper's defaults (paper_defaults.hpp) with `text` applied as if read from jobs/iris.ini.
inline cli::Config from_ini(const std::string& text) {
  cli::Config c = paper_defaults();
  cli::apply_ini(text, "jobs/iris.ini", c);
  return c;
}

}  // namespace simmer::test
