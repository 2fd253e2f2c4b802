/// \file
/// libFuzzer target for the CSV reader (simmer::data::read_csv). The input is the file's
/// content; it is read with a few specs (Iris classification, Auto-MPG regression, short
/// generic column names, a ';' delimiter). simmer::Error is the expected way to refuse a file;
/// a crash, a sanitizer report, a leak, a hang or a returned Dataset that breaks the reader's
/// promises (rows > 0, finite values, labels in range, >= 2 classes) is a bug.
/// Built with clang -fsanitize=fuzzer by tests/fuzz/run_fuzz.sh, and with a replay main
/// (replay_main.cpp) into the normal and sanitizer test suites.

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "simmer/core/error.hpp"
#include "simmer/data/csv.hpp"

namespace {

namespace fs = std::filesystem;
using simmer::data::CsvSpec;
using simmer::data::Task;

/// One scratch file per process (libFuzzer's -fork/-jobs run several), removed at exit.
class ScratchFile {
 public:
  ScratchFile() : path_(fs::temp_directory_path() / ("simmer_fuzz_csv_" + std::to_string(::getpid()) + ".csv")) {}
  ~ScratchFile() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  [[nodiscard]] std::string write(const std::uint8_t* data, std::size_t size) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) std::abort();  // the harness, not the reader, failed
    return path_.string();
  }

 private:
  fs::path path_;
};

CsvSpec make_spec(std::vector<std::string> features, std::string target, Task task, char delimiter = ',') {
  CsvSpec spec;
  spec.features = std::move(features);
  spec.target = std::move(target);
  spec.task = task;
  spec.delimiter = delimiter;
  return spec;
}

const std::vector<CsvSpec>& specs() {
  static const std::vector<CsvSpec> all = {
      make_spec({"sepal_width", "petal_width"}, "species", Task::classification),
      make_spec({"horsepower", "weight"}, "mpg", Task::regression),
      make_spec({"a"}, "b", Task::regression),
      make_spec({"a", "b"}, "c", Task::classification),
      make_spec({"x"}, "y", Task::classification, ';'),
  };
  return all;
}

/// The reader's promises about a Dataset it returns; a broken one is a bug, not a refusal.
void check_dataset(const simmer::data::Dataset& d, const CsvSpec& spec) {
  const bool ok_shape =
      d.rows() > 0 && d.features() == static_cast<simmer::Index>(spec.features.size()) && d.y.rows() == d.rows();
  if (!ok_shape || !d.x.allFinite() || !d.y.allFinite()) std::abort();
  if (spec.task == Task::classification) {
    const auto classes = static_cast<std::int64_t>(d.class_names.size());
    if (classes < 2 || d.outputs() != classes || d.labels.size() != static_cast<std::size_t>(d.rows())) {
      std::abort();
    }
    for (const std::int64_t label : d.labels) {
      if (label < 0 || label >= classes) std::abort();
    }
  } else if (d.outputs() != 1 || !d.labels.empty()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ScratchFile scratch;
  const std::string path = scratch.write(data, size);
  for (CsvSpec spec : specs()) {
    spec.path = path;
    try {
      simmer::data::CsvReport report;
      const simmer::data::Dataset d = simmer::data::read_csv(spec, &report);
      check_dataset(d, spec);
      if (report.rows_read < d.rows() || report.rows_dropped < 0) std::abort();
    } catch (const simmer::Error&) {
      // A refused file: the expected outcome for most inputs.
    }
  }
  return 0;
}
