/// \file
/// CSV reader: the two UCI files the paper's cases use, the quirks of real files (quotes, CRLF,
/// blank lines, missing values) and every error, whose message must let a user find the bad
/// line and value.

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Contains;
using simmer::data::CsvReport;
using simmer::data::CsvSpec;
using simmer::data::read_csv;
using simmer::data::Task;

using simmer::test::TempDir;

namespace {

std::string data_file(const std::string& name) { return std::string(SIMMER_DATA_DIR) + "/" + name; }

CsvSpec regression(std::string path, std::vector<std::string> features, std::string target) {
  CsvSpec spec;
  spec.path = std::move(path);
  spec.features = std::move(features);
  spec.target = std::move(target);
  spec.task = Task::regression;
  return spec;
}

CsvSpec classification(std::string path, std::vector<std::string> features, std::string target) {
  CsvSpec spec = regression(std::move(path), std::move(features), std::move(target));
  spec.task = Task::classification;
  return spec;
}

}  // namespace

TEST_CASE("read_csv reads iris: 150 rows, three sorted classes", "[data][csv]") {
  CsvReport report;
  const auto d = read_csv(classification(data_file("iris.csv"), {"sepal_width", "petal_width"}, "species"), &report);

  CHECK(report.rows_read == 150);
  CHECK(report.rows_dropped == 0);
  REQUIRE(d.rows() == 150);
  REQUIRE(d.features() == 2);
  REQUIRE(d.outputs() == 3);
  CHECK(d.task == Task::classification);
  CHECK(d.feature_names == std::vector<std::string>{"sepal_width", "petal_width"});
  CHECK(d.target_names == std::vector<std::string>{"species"});
  CHECK(d.class_names == std::vector<std::string>{"Iris-setosa", "Iris-versicolor", "Iris-virginica"});

  // First row of the file: 5.1,3.5,1.4,0.2,Iris-setosa; last: 5.9,3.0,5.1,1.8,Iris-virginica.
  CHECK(d.x(0, 0) == 3.5);
  CHECK(d.x(0, 1) == 0.2);
  CHECK(d.labels.front() == 0);
  CHECK(d.x(149, 0) == 3.0);
  CHECK(d.x(149, 1) == 1.8);
  CHECK(d.labels.back() == 2);

  REQUIRE(d.labels.size() == 150);
  std::vector<int> per_class(3, 0);
  for (std::size_t r = 0; r < d.labels.size(); ++r) {
    const auto label = d.labels[r];
    ++per_class[static_cast<std::size_t>(label)];
    const auto row = static_cast<simmer::Index>(r);
    CHECK(d.y.row(row).sum() == 1.0);
    CHECK(d.y(row, label) == 1.0);
  }
  CHECK(per_class == std::vector<int>{50, 50, 50});
}

TEST_CASE("read_csv reads auto-mpg and drops rows with missing values", "[data][csv]") {
  const std::string path = data_file("auto-mpg.csv");

  SECTION("horsepower -> mpg: 406 rows, 6 missing horsepower + 8 missing mpg dropped") {
    CsvReport report;
    const auto d = read_csv(regression(path, {"horsepower"}, "mpg"), &report);
    CHECK(report.rows_read == 406);
    CHECK(report.rows_dropped == 14);
    REQUIRE(d.rows() == 392);
    CHECK(d.features() == 1);
    CHECK(d.outputs() == 1);
    CHECK(d.task == Task::regression);
    CHECK(d.labels.empty());
    CHECK(d.class_names.empty());
    CHECK(d.target_names == std::vector<std::string>{"mpg"});
    // 18,8,307,130,3504,12,70,1,chevrolet chevelle malibu
    CHECK(d.x(0, 0) == 130.0);
    CHECK(d.y(0, 0) == 18.0);
  }

  SECTION("the file's missing values: 6 in horsepower, 8 in mpg") {
    CsvReport horsepower_only;
    read_csv(regression(path, {"horsepower"}, "cylinders"), &horsepower_only);
    CHECK(horsepower_only.rows_read == 406);
    CHECK(horsepower_only.rows_dropped == 6);

    CsvReport mpg_only;
    read_csv(regression(path, {"cylinders"}, "mpg"), &mpg_only);
    CHECK(mpg_only.rows_dropped == 8);
  }

  SECTION("six features -> mpg: 392 rows remain, as SIMMERING.md says") {
    const std::vector<std::string> six = {"cylinders",    "weight",       "horsepower",
                                          "displacement", "acceleration", "model_year"};
    CsvReport report;
    const auto d = read_csv(regression(path, six, "mpg"), &report);
    CHECK(report.rows_read == 406);
    CHECK(report.rows_dropped == 14);
    REQUIRE(d.rows() == 392);
    REQUIRE(d.features() == 6);
    CHECK(d.feature_names == six);
    // Columns come in the requested order, not the file's.
    CHECK(d.x(0, 0) == 8.0);
    CHECK(d.x(0, 1) == 3504.0);
    CHECK(d.x(0, 2) == 130.0);
    CHECK(d.x(0, 5) == 70.0);
  }
}

TEST_CASE("read_csv handles quotes, CRLF, blank lines and whitespace", "[data][csv]") {
  const TempDir dir("csv");

  SECTION("quoted fields may contain the delimiter and escaped quotes") {
    const auto path = dir.write("quoted.csv",
                                "name,x,kind\n"
                                "\"ford, pinto\",1.5,\"small, cheap\"\n"
                                " \"say \"\"hi\"\"\" , 2.5 ,big\n"
                                "plain,\"3.5\",\"small, cheap\"\n");
    CsvReport report;
    const auto d = read_csv(classification(path, {"x"}, "kind"), &report);
    CHECK(report.rows_read == 3);
    REQUIRE(d.rows() == 3);
    CHECK(d.x(0, 0) == 1.5);
    CHECK(d.x(1, 0) == 2.5);
    CHECK(d.x(2, 0) == 3.5);
    CHECK(d.class_names == std::vector<std::string>{"big", "small, cheap"});
    CHECK(d.labels == std::vector<std::int64_t>{1, 0, 1});
  }

  SECTION("CRLF endings, blank lines, surrounding spaces, no trailing newline") {
    const auto path = dir.write("crlf.csv",
                                " a , b \r\n"
                                "\r\n"
                                " 1 ,\t2\r\n"
                                "   \r\n"
                                "3,4");
    CsvReport report;
    const auto d = read_csv(regression(path, {"a"}, "b"), &report);
    CHECK(report.rows_read == 2);
    REQUIRE(d.rows() == 2);
    CHECK(d.x(0, 0) == 1.0);
    CHECK(d.y(0, 0) == 2.0);
    CHECK(d.x(1, 0) == 3.0);
    CHECK(d.y(1, 0) == 4.0);
  }

  SECTION("other delimiters; a leading '+' and exponents parse") {
    const auto path = dir.write("semicolon.csv", "a;b\n+1e-3;-2.5E2\n0.5;7\n");
    auto spec = regression(path, {"a"}, "b");
    spec.delimiter = ';';
    const auto d = read_csv(spec);
    REQUIRE(d.rows() == 2);
    CHECK(d.x(0, 0) == 1e-3);
    CHECK(d.y(0, 0) == -250.0);

    const auto tsv = dir.write("tabs.tsv", "a\tb\tc\n1\t\t2\n");
    auto tab_spec = regression(tsv, {"a"}, "c");
    tab_spec.delimiter = '\t';
    const auto t = read_csv(tab_spec);
    REQUIRE(t.rows() == 1);
    CHECK(t.y(0, 0) == 2.0);
  }
}

TEST_CASE("read_csv: missing values drop the row only when the column is used", "[data][csv]") {
  const TempDir dir("csv");
  const auto path = dir.write("missing.csv",
                              "a,b,unused,y\n"
                              "1,2,,10\n"      // missing in an unused column: kept
                              "?,2,x,11\n"     // '?' in a feature
                              "1,NA,x,12\n"    // 'NA' in a feature
                              "1,,x,13\n"      // empty feature
                              "1,2,x,\n"       // empty target
                              "1,\"\",x,14\n"  // quoted empty field
                              "4,5,?,15\n");
  CsvReport report;
  const auto d = read_csv(regression(path, {"a", "b"}, "y"), &report);
  CHECK(report.rows_read == 7);
  CHECK(report.rows_dropped == 5);
  REQUIRE(d.rows() == 2);
  CHECK(d.y(0, 0) == 10.0);
  CHECK(d.y(1, 0) == 15.0);
  CHECK(d.x(1, 1) == 5.0);
}

TEST_CASE("read_csv: class labels sort as numbers when all are numbers", "[data][csv]") {
  const TempDir dir("csv");
  SECTION("numeric labels") {
    const auto path = dir.write("numeric.csv", "x,c\n1,10\n2,2\n3,1\n4,2\n");
    const auto d = read_csv(classification(path, {"x"}, "c"));
    CHECK(d.class_names == std::vector<std::string>{"1", "2", "10"});
    CHECK(d.labels == std::vector<std::int64_t>{2, 1, 0, 1});
    CHECK(d.outputs() == 3);
  }
  SECTION("text labels sort as text") {
    const auto path = dir.write("text.csv", "x,c\n1,b\n2,a\n3,10\n4,c\n");
    const auto d = read_csv(classification(path, {"x"}, "c"));
    CHECK(d.class_names == std::vector<std::string>{"10", "a", "b", "c"});
    CHECK(d.labels == std::vector<std::int64_t>{2, 1, 0, 3});
  }
}

TEST_CASE("read_csv errors name the file, line, column and value", "[data][csv]") {
  const TempDir dir("csv");

  SECTION("missing file") {
    const auto path = dir.path("does_not_exist.csv");
    REQUIRE_THROWS_AS(read_csv(regression(path, {"a"}, "b")), simmer::Error);
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"a"}, "b")),
                        Contains("does_not_exist.csv") && Contains("No such file"));
  }

  SECTION("a directory is not a readable file") {
    const auto path = dir.path("");
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"a"}, "b")), Contains("Is a directory"));
  }

  SECTION("empty file, blank-only file, header only") {
    const auto empty = dir.write("empty.csv", "");
    REQUIRE_THROWS_WITH(read_csv(regression(empty, {"a"}, "b")), Contains("empty.csv") && Contains("empty"));
    const auto blank = dir.write("blank.csv", "\n  \r\n\n");
    REQUIRE_THROWS_WITH(read_csv(regression(blank, {"a"}, "b")), Contains("blank.csv") && Contains("empty"));
    const auto header_only = dir.write("header_only.csv", "a,b\r\n\r\n");
    REQUIRE_THROWS_WITH(read_csv(regression(header_only, {"a"}, "b")),
                        Contains("header_only.csv:1:") && Contains("no data rows"));
  }

  SECTION("unknown column lists the available ones") {
    const auto path = dir.write("cols.csv", "alpha,beta,gamma\n1,2,3\n");
    REQUIRE_THROWS_WITH(
        read_csv(regression(path, {"alpha", "delta"}, "gamma")),
        Contains("cols.csv:1:") && Contains("unknown column 'delta'") && Contains("'alpha', 'beta', 'gamma'"));
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"alpha"}, "target")), Contains("unknown column 'target'"));
  }

  SECTION("ragged row: expected vs found") {
    const auto path = dir.write("ragged.csv", "a,b,c\n1,2,3\n\n4,5\n");
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"a"}, "b")),
                        Contains("ragged.csv:4:") && Contains("expected 3") && Contains("found 2"));
    const auto extra = dir.write("extra.csv", "a,b\n1,2,\n");
    REQUIRE_THROWS_WITH(read_csv(regression(extra, {"a"}, "b")),
                        Contains("extra.csv:2:") && Contains("expected 2") && Contains("found 3"));
  }

  SECTION("not a number, with the exact message format") {
    const auto path = dir.write("iris.csv",
                                "sepal_length,sepal_width,species\n"
                                "5.1,3.5,a\n"
                                "4.9,abc,b\n");
    REQUIRE_THROWS_WITH(read_csv(classification(path, {"sepal_length", "sepal_width"}, "species")),
                        Contains("iris.csv:3: column 'sepal_width' (2): 'abc' is not a number"));
  }

  SECTION("partly numeric, NaN, infinite and out-of-range values") {
    const auto trailing = dir.write("trailing.csv", "a,b\n1,2\n3x,4\n");
    REQUIRE_THROWS_WITH(read_csv(regression(trailing, {"a"}, "b")), Contains("trailing.csv:3:") &&
                                                                        Contains("column 'a' (1)") &&
                                                                        Contains("'3x'") && Contains("not a number"));
    const auto nan = dir.write("nan.csv", "a,b\n1,2\n3,nan\n");
    REQUIRE_THROWS_WITH(read_csv(regression(nan, {"a"}, "b")), Contains("nan.csv:3:") && Contains("column 'b' (2)") &&
                                                                   Contains("'nan'") &&
                                                                   Contains("not a finite number"));
    const auto inf = dir.write("inf.csv", "a,b\n-inf,2\n");
    REQUIRE_THROWS_WITH(read_csv(regression(inf, {"a"}, "b")),
                        Contains("inf.csv:2:") && Contains("'-inf'") && Contains("finite"));
    const auto huge = dir.write("huge.csv", "a,b\n1e999,2\n");
    REQUIRE_THROWS_WITH(read_csv(regression(huge, {"a"}, "b")),
                        Contains("huge.csv:2:") && Contains("'1e999'") && Contains("range"));
  }

  SECTION("a bad value is reported even in a row dropped for a missing value") {
    const auto path = dir.write("both.csv", "a,b\n?,zz\n");
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"a"}, "b")), Contains("both.csv:2:") && Contains("'zz'"));
  }

  SECTION("classification with one class only") {
    const auto path = dir.write("one_class.csv", "x,label\n1,cat\n2,cat\n3,?\n");
    REQUIRE_THROWS_WITH(
        read_csv(classification(path, {"x"}, "label")),
        Contains("one_class.csv") && Contains("column 'label' (2)") && Contains("'cat'") && Contains("at least two"));
  }

  SECTION("every row dropped") {
    const auto path = dir.write("all_missing.csv", "a,b\n?,1\nNA,2\n");
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"a"}, "b")),
                        Contains("all_missing.csv") && Contains("no rows left"));
  }

  SECTION("unterminated quote") {
    const auto path = dir.write("quote.csv", "a,b\n1,2\n\"3,4\n");
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"a"}, "b")), Contains("quote.csv:3:") && Contains("unterminated"));
  }
}
