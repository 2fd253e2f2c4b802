// Catch2's implementation and runner, once for all test executables (tests/catch_runner.hpp).
// Not precompiled: the precompiled catch.hpp is the header without CATCH_CONFIG_RUNNER.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_runner.hpp"

namespace simmer::test {

int run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }

}  // namespace simmer::test
