/// \file
/// HIGGS data: the synthetic generator is deterministic and HIGGS-shaped, the writer and the
/// reader round-trip exactly (plain and gzip), and broken lines are refused naming file:line
/// and the field.

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/data/higgs.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Contains;
using simmer::Index;
using namespace simmer::data;

using namespace simmer::test;  // TempDir, error_of

namespace {

/// A valid line as in the UCI file: label, then 28 features 0.5, 1.5, ...
std::string good_line(int label) {
  std::string line = label == 1 ? "1.000000000000000000e+00" : "0.000000000000000000e+00";
  for (int f = 0; f < kHiggsFeatures; ++f) {
    line += ',';
    line += std::to_string(f);
    line += ".5";
  }
  return line;
}

/// good_line(1) with field `field` (1-based; 1 is the label) replaced by `text`.
std::string line_with(int field, const std::string& text) {
  std::vector<std::string> fields;
  std::string line = good_line(1);
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  fields[static_cast<std::size_t>(field - 1)] = text;
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ",") + f;
  return out;
}

}  // namespace

TEST_CASE("make_synthetic_higgs is deterministic in its seed", "[data][higgs]") {
  const auto a = make_synthetic_higgs(200, 42);
  const auto b = make_synthetic_higgs(200, 42);
  CHECK(a.x == b.x);
  CHECK(a.labels == b.labels);
  const auto other = make_synthetic_higgs(200, 43);
  CHECK(a.x != other.x);
  // Prefix property: fewer rows are the first rows of more.
  const auto prefix = make_synthetic_higgs(50, 42);
  CHECK(prefix.x == a.x.topRows(50));
  CHECK(prefix.labels == std::vector<std::int64_t>(a.labels.begin(), a.labels.begin() + 50));
  CHECK_THROWS_AS(make_synthetic_higgs(0, 1), simmer::Error);
}

TEST_CASE("make_synthetic_higgs has the HIGGS shape and ~53% signal", "[data][higgs]") {
  const auto d = make_synthetic_higgs(20000, 7);  // fixed seed 7
  REQUIRE(d.rows() == 20000);
  REQUIRE(d.features() == kHiggsFeatures);
  REQUIRE(d.outputs() == 2);
  CHECK(d.task == simmer::data::Task::classification);
  CHECK(d.feature_names == higgs_feature_names());
  CHECK(d.class_names.size() == 2);
  CHECK(d.image_shape.empty());
  CHECK(d.x.allFinite());

  double signal = 0.0;
  for (const std::int64_t label : d.labels) signal += static_cast<double>(label);
  const double fraction = signal / 20000.0;
  INFO("signal fraction " << fraction << " (seed 7; sd of the estimate 0.0035)");
  CHECK(fraction > 0.51);
  CHECK(fraction < 0.55);

  const auto& names = higgs_feature_names();
  double btag_signal = 0.0;
  double btag_background = 0.0;
  for (Index r = 0; r < d.rows(); ++r) {
    const std::int64_t label = d.labels[static_cast<std::size_t>(r)];
    REQUIRE(d.y(r, label) == 1.0);
    REQUIRE(d.y.row(r).sum() == 1.0);
    for (Index c = 0; c < kHiggsFeatures; ++c) {
      const std::string& name = names[static_cast<std::size_t>(c)];
      const double v = d.x(r, c);
      if (name.ends_with("_eta")) {
        REQUIRE(std::abs(v) <= 2.5);
      } else if (name.ends_with("_phi")) {
        REQUIRE(std::abs(v) <= std::numbers::pi);
      } else if (name.ends_with("b-tag")) {
        REQUIRE((v == 0.0 || v == 1.1 || v == 2.2));
        (label == 1 ? btag_signal : btag_background) += v;
      } else {
        REQUIRE(v > 0.0);  // momenta and masses
      }
    }
  }
  // b-tags are one of the class-dependent features: per jet, mean 0.99 for signal and 0.605 for
  // background, so 3.96 and 2.42 summed over the four jets of a row.
  CHECK(btag_signal / signal > btag_background / (20000.0 - signal) + 0.2);
}

TEST_CASE("write_higgs_csv and read_higgs_csv round-trip exactly", "[data][higgs]") {
  const TempDir dir("higgs");
  const auto d = make_synthetic_higgs(300, 3);
  for (const std::string name : {"higgs.csv", "higgs.csv.gz"}) {
    INFO(name);
    const std::string path = dir.path(name);
    write_higgs_csv(d, path);
    const auto back = read_higgs_csv(path, 0);
    CHECK(back.x == d.x);
    CHECK(back.labels == d.labels);
    CHECK(back.y == d.y);
    CHECK(back.feature_names == higgs_feature_names());
    CHECK(back.class_names == d.class_names);

    const auto first = read_higgs_csv(path, 7);
    CHECK(first.rows() == 7);
    CHECK(first.x == d.x.topRows(7));
    CHECK(read_higgs_csv(path, 1000).rows() == 300);
  }
  // A .gz cut short: the lines before the cut read, the whole file is refused.
  const std::string cut = dir.path("higgs.csv.gz");
  fs::resize_file(cut, fs::file_size(cut) / 2);
  CHECK(read_higgs_csv(cut, 5).x == d.x.topRows(5));
  CHECK_THAT(error_of([&] { (void)read_higgs_csv(cut, 0); }), Contains(cut) && Contains("gzip stream ends early"));

  std::ifstream plain(dir.path("higgs.csv"));
  std::string first_line;
  std::getline(plain, first_line);
  CHECK((first_line.starts_with("1.000000000000000000e+00,") || first_line.starts_with("0.000000000000000000e+00,")));
}

TEST_CASE("read_higgs_csv accepts CRLF, blank lines, blanks and no final newline", "[data][higgs]") {
  const TempDir dir("higgs");
  const auto path = dir.write("quirks.csv", good_line(1) + "\r\n\r\n" + line_with(3, " -2.5e-1 ") + "\n\n" +
                                                line_with(1, "0") + "\n" + line_with(2, "+1e-400"));
  const auto d = read_higgs_csv(path, 0);
  REQUIRE(d.rows() == 4);
  CHECK(d.labels == std::vector<std::int64_t>{1, 1, 0, 1});
  CHECK(d.x(0, 0) == 0.5);
  CHECK(d.x(0, 27) == 27.5);
  CHECK(d.x(1, 1) == -0.25);
  CHECK(d.x(2, 0) == 0.5);
  CHECK(d.x(3, 0) == 0.0);  // 1e-400 reads as its nearest double
}

TEST_CASE("broken HIGGS lines are refused naming file:line and the field", "[data][higgs]") {
  const TempDir dir("higgs");
  const std::string good = good_line(0) + "\n";

  SECTION("too few fields") {
    std::string line = good_line(1);
    line.erase(line.rfind(','));
    const auto path = dir.write("few.csv", good + good + line + "\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(path, 0); }),
               Contains(path + ":3: ") && Contains("expected 29 fields") && Contains("found 28"));
  }
  SECTION("too many fields") {
    const auto path = dir.write("many.csv", good + good_line(1) + ",3.0\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(path, 0); }), Contains(path + ":2: ") && Contains("found 30"));
  }
  SECTION("a header line") {
    const auto path = dir.write("header.csv", "label,lepton_pT\n" + good);
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(path, 0); }),
               Contains(path + ":1: ") && Contains("expected 29 fields"));
  }
  SECTION("a non-numeric feature") {
    const auto path = dir.write("text.csv", good + line_with(5, "abc") + "\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(path, 0); }), Contains(path + ":2: ") &&
                                                                     Contains("field 5 (missing_energy_magnitude)") &&
                                                                     Contains("'abc' is not a number"));
  }
  SECTION("a number with trailing text") {
    const auto path = dir.write("trailing.csv", line_with(29, "1.5x") + "\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(path, 0); }),
               Contains(path + ":1: ") && Contains("field 29 (m_wwbb)") && Contains("'1.5x'"));
  }
  SECTION("an empty field") {
    const auto path = dir.write("empty_field.csv", line_with(10, "") + "\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(path, 0); }),
               Contains(path + ":1: ") && Contains("field 10 (jet1_b-tag): empty"));
  }
  SECTION("a value that is not finite or beyond a double") {
    const auto nan_path = dir.write("nan.csv", line_with(2, "nan") + "\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(nan_path, 0); }),
               Contains(nan_path + ":1: ") && Contains("field 2 (lepton_pT)") && Contains("not a finite number"));
    const auto big_path = dir.write("big.csv", good + good + line_with(3, "1e999") + "\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(big_path, 0); }),
               Contains(big_path + ":3: ") && Contains("'1e999' is out of the range of a double"));
  }
  SECTION("a label other than 0 or 1") {
    const auto path = dir.write("label.csv", good + "\n" + line_with(1, "5.0e-01") + "\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(path, 0); }),
               Contains(path + ":3: ") && Contains("field 1 (label)") && Contains("'5.0e-01' is not 0 or 1"));
  }
  SECTION("a broken line after max_rows is not read") {
    const auto path = dir.write("late.csv", good + good + "broken\n");
    CHECK(read_higgs_csv(path, 2).rows() == 2);
    CHECK_THROWS_AS(read_higgs_csv(path, 0), simmer::Error);
  }
  SECTION("no data, no file, a negative max_rows") {
    const auto empty = dir.write("empty.csv", "\n\n");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(empty, 0); }), Contains(empty) && Contains("no data lines"));
    const auto absent = dir.path("absent.csv");
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(absent, 0); }), Contains(absent) && Contains("cannot open"));
    const auto path = dir.write("ok.csv", good);
    CHECK_THAT(error_of([&] { (void)read_higgs_csv(path, -3); }), Contains(path) && Contains("max_rows = -3"));
  }
}

TEST_CASE("write_higgs_csv refuses data that is not HIGGS-shaped", "[data][higgs]") {
  const TempDir dir("higgs");
  const std::string path = dir.path("out.csv");
  auto d = make_synthetic_higgs(5, 1);

  SECTION("wrong feature count") {
    auto narrow = d;
    narrow.x = d.x.leftCols(27);
    CHECK_THAT(error_of([&] { write_higgs_csv(narrow, path); }),
               Contains(path) && Contains("27 features") && Contains("28"));
  }
  SECTION("a label other than 0/1") {
    d.labels[2] = 2;
    CHECK_THAT(error_of([&] { write_higgs_csv(d, path); }), Contains(path) && Contains("row 2 has label 2"));
  }
  SECTION("a value that is not finite") {
    d.x(4, 3) = std::nan("");
    CHECK_THAT(error_of([&] { write_higgs_csv(d, path); }),
               Contains(path) && Contains("row 4") && Contains("missing_energy_magnitude"));
  }
  SECTION("a directory that does not exist") {
    const std::string nowhere = dir.path("no/such/dir/out.csv");
    CHECK_THAT(error_of([&] { write_higgs_csv(d, nowhere); }), Contains(nowhere) && Contains("cannot open"));
  }
}
