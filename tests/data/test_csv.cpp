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
using namespace simmer::data;

using simmer::test::TempDir;

namespace {

std::string data_file(const std::string& name) { return (std::filesystem::path(SIMMER_DATA_DIR) / name).string(); }

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

  SECTION("six features -> mpg: 392 rows remain, as METHOD.md says") {
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
    // NaN not listed as a missing value is no number: refused, with the way to drop it.
    const auto nan = dir.write("nan.csv", "a,b\n1,2\n3,nan\n");
    auto no_nan = regression(nan, {"a"}, "b");
    no_nan.missing = {"NA", "?", ""};
    REQUIRE_THROWS_WITH(read_csv(no_nan), Contains("nan.csv:3:") && Contains("column 'b' (2)") && Contains("'nan'") &&
                                              Contains("not a finite number") &&
                                              Contains("add it to the missing-value tokens"));
    no_nan.settings_prefix = "data.";
    REQUIRE_THROWS_WITH(read_csv(no_nan), Contains("add it to data.missing"));
    const auto nan_upper = dir.write("nan_upper.csv", "a,b\n1,2\n3,NAN\n");  // tokens compare exactly
    REQUIRE_THROWS_WITH(read_csv(regression(nan_upper, {"a"}, "b")),
                        Contains("nan_upper.csv:3:") && Contains("'NAN'") && Contains("not a finite number"));
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
    auto spec = classification(path, {"x"}, "label");
    spec.missing_in_target = true;  // else '?' is a second class
    REQUIRE_THROWS_WITH(read_csv(spec), Contains("one_class.csv") && Contains("column 'label' (2)") &&
                                            Contains("'cat'") && Contains("at least two"));
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

TEST_CASE("read_csv: CR-only line endings (classic Mac) read like LF and CRLF", "[data][csv]") {
  const TempDir dir("csv");
  const std::string rows[] = {"a,b,c", "1,2,x", "3,4,y", "5,6,x"};
  for (const std::string ending : {"\n", "\r\n", "\r"}) {
    INFO("line ending " << (ending == "\n" ? "LF" : ending == "\r\n" ? "CRLF" : "CR"));
    std::string text;
    for (const auto& r : rows) text += r + ending;
    const auto path = dir.write("endings.csv", text);
    CsvReport report;
    const auto d = read_csv(classification(path, {"a", "b"}, "c"), &report);
    CHECK(report.rows_read == 3);
    REQUIRE(d.rows() == 3);
    CHECK(d.x(2, 1) == 6.0);
    CHECK(d.origin.lines == std::vector<std::int64_t>{2, 3, 4});
  }
  // Mixed endings and a blank CR line: each ending is one line, so line numbers stay right.
  const auto mixed = dir.write("mixed.csv", "a,b\r1,2\n\r3,zz\r\n");
  REQUIRE_THROWS_WITH(read_csv(regression(mixed, {"a"}, "b")), Contains("mixed.csv:4:") && Contains("'zz'"));
}

TEST_CASE("read_csv: the missing-value tokens are a setting", "[data][csv]") {
  const TempDir dir("csv");
  const auto path = dir.write("tokens.csv",
                              "a,b,y\n"
                              "1,2,10\n"
                              "-999,2,11\n"  // a sentinel number as a token
                              "1,nan,12\n"   // NaN: missing by default (numpy, pandas write it)
                              "1,NaN,13\n"
                              "1,n/a,14\n"
                              "4,5,15\n");
  SECTION("the default: NA, ?, empty, nan, NaN") {
    CHECK(simmer::data::default_missing_tokens() == std::vector<std::string>{"NA", "?", "", "nan", "NaN"});
    // 'n/a' is not a default token, so it must be a number.
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"b"}, "y")), Contains("tokens.csv:6:") && Contains("'n/a'"));
    CsvReport report;
    const auto d = read_csv(regression(path, {"a"}, "y"), &report);  // column a: -999 is a number
    CHECK(report.rows_dropped == 0);
    CHECK(d.rows() == 6);
  }
  SECTION("tokens of one's own") {
    auto spec = regression(path, {"a", "b"}, "y");
    spec.missing = {"-999", "n/a", "nan", "NaN"};
    CsvReport report;
    const auto d = read_csv(spec, &report);
    CHECK(report.rows_read == 6);
    CHECK(report.rows_dropped == 4);
    REQUIRE(d.rows() == 2);
    CHECK(d.y(1, 0) == 15.0);
    CHECK(d.origin.lines == std::vector<std::int64_t>{2, 7});
  }
  SECTION("no tokens: every value must be present") {
    auto spec = regression(path, {"a"}, "y");
    spec.missing = {};
    const auto d = read_csv(spec);  // -999 is a number like any other
    CHECK(d.rows() == 6);
    CHECK(d.x(1, 0) == -999.0);
    const auto blank = dir.write("blank_field.csv", "a,y\n1,2\n,3\n");
    auto strict = regression(blank, {"a"}, "y");
    strict.missing = {};
    REQUIRE_THROWS_WITH(read_csv(strict), Contains("blank_field.csv:3:") && Contains("'' is not a number"));
  }
}

TEST_CASE("read_csv: a class label spelled like a missing value is a class unless asked", "[data][csv]") {
  const TempDir dir("csv");
  const auto path = dir.write("labels.csv",
                              "x,label\n"
                              "1,A\n"
                              "2,NA\n"  // a real class in some data sets (e.g. "not applicable")
                              "3,A\n"
                              "4,?\n"
                              "5,NA\n"
                              "6,nan\n");
  SECTION("by default every label is a class, and the report says which look missing") {
    CsvReport report;
    auto spec = classification(path, {"x"}, "label");
    spec.settings_prefix = "data.";
    const auto d = read_csv(spec, &report);
    CHECK(report.rows_dropped == 0);
    REQUIRE(d.rows() == 6);
    CHECK(d.class_names == std::vector<std::string>{"?", "A", "NA", "nan"});
    REQUIRE(report.warnings.size() == 3);
    CHECK_THAT(report.warnings[1], Contains("labels.csv") && Contains("column 'label' (2)") &&
                                       Contains("the class 'NA' (2 rows)") && Contains("taken as a class") &&
                                       Contains("set data.missing_in_target = true"));
  }
  SECTION("missing_in_target drops them") {
    auto spec = classification(path, {"x"}, "label");
    spec.missing_in_target = true;
    spec.missing = {"NA", "?"};
    CsvReport report;
    const auto d = read_csv(spec, &report);
    CHECK(report.rows_dropped == 3);
    CHECK(report.warnings.empty());
    CHECK(d.class_names == std::vector<std::string>{"A", "nan"});
    CHECK(d.origin.lines == std::vector<std::int64_t>{2, 4, 7});
  }
  SECTION("an empty label is refused unless the tokens apply") {
    const auto empty = dir.write("empty_label.csv", "x,label\n1,A\n2,B\n3,\n");
    auto spec = classification(empty, {"x"}, "label");
    spec.settings_prefix = "data.";
    REQUIRE_THROWS_WITH(read_csv(spec), Contains("empty_label.csv:4: column 'label' (2): empty class label") &&
                                            Contains("set data.missing_in_target = true"));
    spec.missing_in_target = true;
    CHECK(read_csv(spec).rows() == 2);
    spec.missing = {"NA"};
    REQUIRE_THROWS_WITH(read_csv(spec), Contains("empty class label") && Contains("add empty to data.missing"));
  }
}

TEST_CASE("read_csv reports why rows were dropped: counts per column and token, first lines", "[data][csv]") {
  SECTION("auto-mpg: 8 empty mpg, 6 empty horsepower") {
    CsvReport report;
    read_csv(regression(data_file("auto-mpg.csv"), {"horsepower"}, "mpg"), &report);
    REQUIRE(report.dropped_by.size() == 2);
    std::int64_t sum = 0;
    for (const auto& why : report.dropped_by) {
      CHECK(why.token.empty());
      CHECK(why.first_lines.size() == 5);
      sum += why.rows;
    }
    CHECK(sum == report.rows_dropped);  // each row counted once
    const auto& hp = report.dropped_by[0].column == "horsepower" ? report.dropped_by[0] : report.dropped_by[1];
    CHECK(hp.rows == 6);
    CHECK(hp.first_lines.front() == 40);  // 25,4,98,,2046,19,71,1,ford pinto (file line 40)
    const std::string text = simmer::data::describe_drops(report);
    CHECK_THAT(text, Contains("14 of 406 rows dropped (missing values): ") &&
                         Contains("6 with an empty field in column 'horsepower' (lines 40, ") &&
                         Contains("8 with an empty field in column 'mpg'") && Contains(", ...)"));
  }
  SECTION("a row with several missing values counts under its first used column") {
    const TempDir dir("csv");
    const auto path = dir.write("several.csv", "a,b,y\nNA,?,1\n1,?,2\n1,2,NA\n1,2,3\n");
    CsvReport report;
    read_csv(regression(path, {"a", "b"}, "y"), &report);
    REQUIRE(report.dropped_by.size() == 3);
    CHECK(report.dropped_by[0].column == "a");
    CHECK(report.dropped_by[0].token == "NA");
    CHECK(report.dropped_by[0].first_lines == std::vector<std::int64_t>{2});
    CHECK(report.dropped_by[1].column == "b");
    CHECK(report.dropped_by[1].rows == 1);
    CHECK(report.dropped_by[2].column == "y");
    CHECK(simmer::data::describe_drops(report) ==
          "3 of 4 rows dropped (missing values): 1 with 'NA' in column 'a' (line 2); 1 with '?' in column 'b' "
          "(line 3); 1 with 'NA' in column 'y' (line 4)");
    CsvReport none;
    read_csv(regression(path, {"a"}, "y"), &none);
    none.rows_dropped = 0;
    CHECK(simmer::data::describe_drops(none).empty());
  }
  SECTION("every row dropped: the reasons are in the error") {
    const TempDir dir("csv");
    const auto path = dir.write("all_gone.csv", "a,b\nNA,1\n?,2\n");
    REQUIRE_THROWS_WITH(read_csv(regression(path, {"a"}, "b")),
                        Contains("no rows left") && Contains("1 with 'NA' in column 'a' (line 2)"));
  }
}

TEST_CASE("read_csv: an unknown column in a semicolon or tab file hints at the delimiter", "[data][csv]") {
  const TempDir dir("csv");
  const auto semicolon = dir.write("wine.csv", "alcohol;malic_acid;class\n14.2;1.7;1\n13.2;1.8;2\n");
  auto spec = classification(semicolon, {"alcohol"}, "class");
  spec.settings_prefix = "data.";
  REQUIRE_THROWS_WITH(read_csv(spec), Contains("wine.csv:1: unknown column 'alcohol'") &&
                                          Contains("has no ',' but has a ';'") && Contains("set data.delimiter = ;"));
  spec.settings_prefix.clear();
  REQUIRE_THROWS_WITH(read_csv(spec), Contains("read it with the delimiter ';'") && !Contains("data."));
  spec.delimiter = ';';
  CHECK(read_csv(spec).rows() == 2);

  const auto tabs = dir.write("wine.tsv", "alcohol\tclass\n14.2\t1\n13.2\t2\n");
  auto tab_spec = classification(tabs, {"alcohol"}, "class");
  tab_spec.settings_prefix = "data.";
  REQUIRE_THROWS_WITH(read_csv(tab_spec), Contains("has a tab") && Contains("set data.delimiter = tab"));

  // A header with commas has the right delimiter: no hint.
  const auto commas = dir.write("commas.csv", "a;b,c\n1,2\n");
  REQUIRE_THROWS_WITH(read_csv(regression(commas, {"a"}, "c")),
                      Contains("unknown column 'a'") && !Contains("delimiter"));
}

TEST_CASE("read_csv: features = * takes every column but the target and the excluded", "[data][csv]") {
  const TempDir dir("csv");
  const auto path = dir.write("cars.csv", "mpg,cylinders,weight,name,year\n18,8,3504,chevy,70\n15,8,3693,buick,70\n");
  auto spec = regression(path, {"*"}, "mpg");
  spec.exclude = {"name"};
  const auto d = read_csv(spec);
  CHECK(d.feature_names == std::vector<std::string>{"cylinders", "weight", "year"});
  REQUIRE(d.features() == 3);
  CHECK(d.x(1, 1) == 3693.0);
  CHECK(d.origin.feature_columns == std::vector<std::int64_t>{1, 2, 4});
  CHECK(d.origin.target_column == 0);

  SECTION("a text column not excluded: the error says how to leave it out") {
    auto all = regression(path, {"*"}, "mpg");
    all.settings_prefix = "data.";
    REQUIRE_THROWS_WITH(read_csv(all),
                        Contains("cars.csv:2: column 'name' (4): 'chevy' is not a number") && Contains("data.exclude"));
  }
  SECTION("a text target in a regression: the error suggests the classification task") {
    auto labels = regression(path, {"mpg", "weight"}, "name");
    labels.settings_prefix = "data.";
    REQUIRE_THROWS_WITH(read_csv(labels), Contains("cars.csv:2: column 'name' (4): 'chevy' is not a number") &&
                                              Contains("set data.task = classification"));
  }
  SECTION("an excluded column the file does not have is refused") {
    auto typo = regression(path, {"*"}, "mpg");
    typo.exclude = {"nmae"};
    REQUIRE_THROWS_WITH(read_csv(typo), Contains("unknown column 'nmae'"));
  }
  SECTION("exclusion needs '*'; nothing left is refused") {
    auto named = regression(path, {"weight"}, "mpg");
    named.exclude = {"name"};
    REQUIRE_THROWS_WITH(read_csv(named), Contains("exclusion applies to '*'"));
    auto nothing = regression(path, {"*"}, "mpg");
    nothing.exclude = {"cylinders", "weight", "name", "year"};
    REQUIRE_THROWS_WITH(read_csv(nothing), Contains("leaves no feature column"));
  }
}

TEST_CASE("read_csv records each row's file line, and cell_name names a cell", "[data][csv]") {
  const TempDir dir("csv");
  const auto path = dir.write("cells.csv", "id,x,y\n1,0.5,2\n\n2,NA,3\n3,1.5,4\n");
  const auto d = read_csv(regression(path, {"x"}, "y"));
  CHECK(d.origin.path == path);
  CHECK(d.origin.lines == std::vector<std::int64_t>{2, 5});
  CHECK(simmer::data::cell_name(d, 1, 0) == path + ":5: column 'x' (2)");
  CHECK(simmer::data::cell_name(d, 1, -1) == path + ":5: column 'y' (3)");
  // A subset keeps the lines of its rows.
  const auto last = simmer::data::subset(d, {1});
  CHECK(simmer::data::cell_name(last, 0, 0) == path + ":5: column 'x' (2)");
  // Generated data has no file: the row and the column name.
  simmer::data::Dataset generated;
  generated.feature_names = {"x"};
  CHECK(simmer::data::cell_name(generated, 3, 0) == "row 3 (0-based), column 'x'");
}
