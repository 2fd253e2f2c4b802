#pragma once
/// \file
/// Catch2's runner, compiled once (tests/catch_runner.cpp) for every test executable: its
/// implementation is the largest translation unit of the build, so the executables share its
/// object instead of each compiling it again.

namespace simmer::test {

/// Catch2's session on the command line, with --warn NoAssertions added (a test case that runs
/// no assertion fails): the number of failed test cases (capped by Catch2).
int run_catch(int argc, char** argv);

}  // namespace simmer::test
