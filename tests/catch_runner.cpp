// Catch2's implementation and runner, once for all test executables (tests/catch_runner.hpp).
// Not precompiled: the precompiled catch.hpp is the header without CATCH_CONFIG_RUNNER.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_runner.hpp"

namespace simmer::test {

int run_catch(int argc, char** argv) {
  Catch::Session session;
  if (const int bad = session.applyCommandLine(argc, argv); bad != 0) return bad;
  // Every run warns about missing assertions as --warn NoAssertions does: a test case (or leaf
  // section) that runs none fails. Catch2 2.x takes one --warn per run, and the CTest entries
  // spend theirs on NoTests (an entry whose filter matches no test case fails).
  Catch::ConfigData& config = session.configData();
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoAssertions);
  return session.run();
}

}  // namespace simmer::test

// The runner's own check, hidden from listings and default runs ([.]), in every executable that
// links the runner: it runs no assertion, so running it ("[runner]") must fail.
// tests/test_registration.py does, for each binary.
TEST_CASE("runner: a test case without an assertion fails", "[.][runner]") {}
