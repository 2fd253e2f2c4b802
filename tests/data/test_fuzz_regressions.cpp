/// \file
/// What the fuzzers of tests/fuzz found, kept as regression tests: each saved input (under
/// tests/fuzz/regressions/) is fed to the code that misbehaved, which must now refuse it with
/// simmer::Error or accept it correctly, never crash. The replay tests ("fuzz: ...") also run
/// every saved input through the whole fuzz target under the sanitizers.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "paper_defaults.hpp"
#include "simmer/cli/config.hpp"
#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Contains;
using simmer::cli::apply_ini;
using simmer::cli::Config;
using simmer::cli::to_ini;

namespace {

std::string saved_input(const std::string& name) {
  const fs::path path = fs::path(SIMMER_FUZZ_DIR) / "regressions" / name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Config from_ini(const std::string& text) {
  Config c = simmer::test::paper_defaults();
  apply_ini(text, "test.ini", c);
  return c;
}

using ScratchCsv = simmer::test::TempFile;

simmer::data::CsvSpec regression_spec(std::string path, std::string feature, std::string target) {
  simmer::data::CsvSpec spec;
  spec.path = std::move(path);
  spec.features = {std::move(feature)};
  spec.target = std::move(target);
  return spec;
}

}  // namespace

TEST_CASE("fuzz_config: a value with a quote before '#' survives to_ini", "[config][fuzz]") {
  // Found by fuzz_config (as simmer.mode, a text key then; data.target now that a choice key
  // holds an enum): `<bytes> "abiniti "#uoq oted` is one value (the '#' follows a
  // quote, not a blank), to_ini quoted it, and the inner `"#` then ended the quoted value early.
  const std::string input = saved_input("config/quote_then_hash_round_trip.ini");
  const Config c = from_ini(input);
  CHECK_THAT(c.data.target, Contains(" \"abiniti \"#uoq oted"));
  const std::string text = to_ini(c);
  const Config again = from_ini(text);
  CHECK(again.data.target == c.data.target);
  CHECK(again.run.output == c.run.output);
  CHECK(to_ini(again) == text);
  // As a choice (where fuzz_config found it), such a value stops at parsing, naming the key.
  CHECK_THROWS_WITH(from_ini("[simmer]\nmode = \"abiniti \"\"#uoq oted\"\n"),
                    Contains("simmer.mode = 'abiniti \"#uoq oted': must be one of"));
}

TEST_CASE("INI quoted values: \"\" is one quote, text after the closing quote is refused", "[config][fuzz]") {
  CHECK(from_ini("[data]\npath = \"a \"\"#1\"\" b\" # comment\n").data.path == "a \"#1\" b");
  CHECK(from_ini("[data]\npath = \"\"\"\"\n").data.path == "\"");
  CHECK_THROWS_WITH(from_ini("[data]\npath = \"a\"b\n"), Contains("test.ini:2:") && Contains("malformed line"));
  Config c = simmer::test::paper_defaults();
  for (const std::string path : {"\"#", "x \"#y\"", "\" # \"", "\"", "a\"\"b #c", " lead\"#"}) {
    c.data.path = path;
    INFO(path);
    CHECK(from_ini(to_ini(c)).data.path == path);
  }
}

TEST_CASE("a command-line value with a line break is refused", "[config][fuzz]") {
  // to_ini (the archive's /config) could not write it as one line.
  const char* argv[] = {"simmer_mpi", "--data.path", "a\nb"};
  CHECK_THROWS_WITH(simmer::cli::parse_command_line(3, argv), Contains("--data.path") && Contains("line break"));
}

TEST_CASE("an architecture width near INT64_MAX is refused without overflow", "[config][fuzz]") {
  // The parameter count was (width + 1) * next in int64: undefined behaviour for this width.
  const auto with_architecture = [](const std::string& architecture) {
    Config c = simmer::test::paper_defaults();
    c.model.architecture = architecture;
    return c;
  };
  CHECK_THROWS_WITH(simmer::cli::validated(with_architecture("9223372036854775807-1"), 1),
                    Contains("model.architecture") && Contains("parameters; at most"));
  // 1e10 parameters: each width is fine, the network is not.
  CHECK_THROWS_WITH(simmer::cli::validated(with_architecture("1-100000-100000-1"), 1),
                    Contains("1-100000-100000-1") && Contains("parameters; at most"));
}

TEST_CASE("a CSV number too small for a double reads as its nearest double", "[data][fuzz]") {
  // from_chars reports underflow as out of range; only overflow is an error.
  const ScratchCsv file("underflow.csv", "x,y\n1e-400,1\n-2e-324,2\n4e-324,3\n1e-310,4\n");
  simmer::data::CsvSpec spec = regression_spec(file.path(), "x", "y");
  const auto d = simmer::data::read_csv(spec);
  REQUIRE(d.rows() == 4);
  CHECK(d.x(0, 0) == 0.0);
  CHECK(d.x(1, 0) == 0.0);
  CHECK(d.x(2, 0) > 0.0);
  CHECK(d.x(3, 0) == 1e-310);
  const ScratchCsv huge("overflow.csv", "x,y\n1,1\n-1e999,2\n");
  spec.path = huge.path();
  CHECK_THROWS_WITH(simmer::data::read_csv(spec), Contains(":3:") && Contains("'-1e999'") && Contains("range"));
}
