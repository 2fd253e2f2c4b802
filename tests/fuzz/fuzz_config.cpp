/// \file
/// libFuzzer target for the configuration parser (simmer::cli). The input is used twice:
///  1. as INI text: apply_ini, then validated (with 1 and 3 ranks), and to_ini of what was
///     read must read back to the same text (to_ini's promise);
///  2. as a command line: one argument per input line after "simmer_mpi", through
///     parse_command_line and validated.
/// simmer::Error is the expected way to refuse a value; a crash, a sanitizer report, a leak,
/// a hang or a broken round trip is a bug. Built with clang -fsanitize=fuzzer by
/// tests/fuzz/run_fuzz.sh, and with a replay main (replay_main.cpp) into the test suites.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "simmer/cli/config.hpp"
#include "simmer/core/error.hpp"

namespace {

using simmer::cli::Config;

/// to_ini's text of a config that apply_ini accepted reads back to the same text.
void check_round_trip(const Config& config) {
  const std::string text = simmer::cli::to_ini(config);
  Config again;
  try {
    simmer::cli::apply_ini(text, "to_ini", again);
  } catch (const simmer::Error&) {
    std::abort();  // to_ini wrote something apply_ini refuses
  }
  if (simmer::cli::to_ini(again) != text) std::abort();
}

void validate(const Config& config) {
  for (const int ranks : {1, 3}) {
    try {
      const Config valid = simmer::cli::validated(config, ranks);
      if (valid.run.trajectories < 1) std::abort();
      check_round_trip(valid);
    } catch (const simmer::Error&) {
      // A refused value: expected.
    }
  }
}

void fuzz_ini(const std::string& text) {
  Config config;
  try {
    simmer::cli::apply_ini(text, "fuzz.ini", config);
  } catch (const simmer::Error&) {
    return;
  }
  check_round_trip(config);
  validate(config);
}

void fuzz_command_line(std::string_view text) {
  std::vector<std::string> words = {"simmer_mpi"};
  while (!text.empty() && words.size() < 64) {
    const std::size_t end = text.find('\n');
    words.emplace_back(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  std::vector<const char*> argv;
  argv.reserve(words.size() + 1);
  for (const std::string& w : words) argv.push_back(w.c_str());
  argv.push_back(nullptr);
  try {
    const simmer::cli::Invocation inv = simmer::cli::parse_command_line(static_cast<int>(words.size()), argv.data());
    if (inv.help) return;
    validate(inv.config);
  } catch (const simmer::Error&) {
    // A refused command line: expected.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz_ini(text);
  fuzz_command_line(text);
  return 0;
}
