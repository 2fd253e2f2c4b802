#pragma once
// The defaults the tests were written against: the paper's, before the recommended recipe
// became the defaults (issue 36).
#include <fstream>
#include <sstream>
#include <string>

#include "simmer/cli/config.hpp"

namespace simmer::test {

/// The paper's sine job as recorded in tests/data/paper_jobs/sine_retrofit.ini (every key, the
/// old defaults where the job set none), with run.trajectories = 0 (one per rank) as the old
/// default had it. A test of the paper's behaviour starts here instead of cli::Config{}.
inline cli::Config paper_defaults() {
  const std::string path = SIMMER_TESTS_DIR "/data/paper_jobs/sine_retrofit.ini";
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  cli::Config c;
  if (cli::apply_ini(text.str(), path, c) < 80) throw Error(path + ": not a recorded configuration");
  c.run.trajectories = 0;
  return c;
}

}  // namespace simmer::test
